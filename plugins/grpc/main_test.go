package grpcplugin

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// Plugin binaries built once by TestMain.
var bin struct {
	dir                  string
	lbf, faulty, example string
}

const (
	modPrefix = "github.com/troupe-dev/troupe/"
	// hostHelperEnv makes the test binary act as a troupe host that loads
	// the plugin named by the variable, prints its pid and waits to be
	// killed (TestPluginExitsWhenHostDies).
	hostHelperEnv = "TROUPE_TEST_HOST_PLUGIN"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(hostHelperEnv); path != "" {
		os.Exit(hostHelper(path))
	}
	// Plugin logs (crashes on purpose, panics) would clutter test output;
	// TestPluginLogsReachHost checks them with its own logger.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	dir, err := os.MkdirTemp("", "troupe-grpc-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin.dir = dir
	bin.lbf = filepath.Join(dir, "lbf")
	bin.faulty = filepath.Join(dir, "faulty")
	bin.example = filepath.Join(dir, "grpc-env")
	args := []string{"build", "-o", dir + "/", modPrefix + "internal/testplugins/grpc/lbf", modPrefix + "internal/testplugins/grpc/faulty", modPrefix + "examples/grpc-env"}
	code := 0
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go %s: %v\n%s", strings.Join(args, " "), err, out)
		code = 1
	} else {
		code = m.Run()
	}
	CleanupClients()
	os.RemoveAll(dir)
	os.Exit(code)
}

// hostHelper loads the env plugin at path, opens an instance, prints the
// plugin process's pid and waits (to be killed by the test).
func hostHelper(path string) int {
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "grpc", Path: path})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	env, err := src.Open()
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println(pidOf(env))
	time.Sleep(time.Minute)
	return 0
}

// pidOf returns the pid of an env instance's current plugin process.
func pidOf(env core.Env) int {
	e := remoteOf(env)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur == nil {
		return 0
	}
	return e.cur.proc.pid
}

// remoteOf unwraps the value EnvSource.Open returns (a struct embedding the
// *remoteEnv as core.Env and as each optional interface).
func remoteOf(env core.Env) *remoteEnv {
	v := reflect.ValueOf(env)
	if v.Kind() == reflect.Struct {
		v = v.Field(0).Elem()
	}
	e, ok := v.Interface().(*remoteEnv)
	if !ok {
		panic(fmt.Sprintf("not a plugin env: %T", env))
	}
	return e
}

// children returns the pids of this process's live (non-zombie) children.
func children(t testing.TB) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	self := os.Getpid()
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := procStat(pid)
		if ok && ppid == self && state != "Z" {
			kids = append(kids, pid)
		}
	}
	return kids
}

// procStat reads a process's parent pid and state from /proc/PID/stat.
func procStat(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0], true
}

// alive reports whether pid is a running (non-zombie) process.
func alive(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != "Z"
}

// noLeftovers fails the test if a plugin process outlives it.
func noLeftovers(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for {
			kids := children(t)
			if len(kids) == 0 && liveProcesses() == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("plugin processes left behind: children %v, %d tracked", kids, liveProcesses())
				CleanupClients()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// readLine reads one line with a deadline.
func readLine(t *testing.T, r *bufio.Reader, d time.Duration) string {
	t.Helper()
	ch := make(chan string, 1)
	go func() {
		s, _ := r.ReadString('\n')
		ch <- strings.TrimSpace(s)
	}()
	select {
	case s := <-ch:
		return s
	case <-time.After(d):
		t.Fatalf("no line within %v", d)
		return ""
	}
}
