package grpcplugin

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/testenv"
)

func ref(path string, params map[string]any) core.SourceRef {
	return core.SourceRef{Scheme: "grpc", Path: path, Params: params}
}

func loadEnv(t *testing.T, r core.SourceRef) core.EnvSource {
	t.Helper()
	src, err := core.LoadEnv(context.Background(), r)
	if err != nil {
		t.Fatalf("LoadEnv(%s): %v", r, err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func open(t *testing.T, src core.EnvSource) core.Env {
	t.Helper()
	env, err := src.Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

func joint(ds ...int) []core.Action {
	as := make([]core.Action, len(ds))
	for i, d := range ds {
		as[i] = core.Action{Decision: d}
	}
	return as
}

func TestExamplePluginEpisode(t *testing.T) {
	noLeftovers(t)
	src := loadEnv(t, ref(bin.example, map[string]any{"length": 4}))
	a, b := open(t, src), open(t, src)
	if pidOf(a) == pidOf(b) || pidOf(a) == 0 {
		t.Fatalf("instances share a process: pids %d and %d", pidOf(a), pidOf(b))
	}
	spec := a.Spec()
	if spec.Name != "relay" || spec.NumAgents() != 2 || spec.MaxSteps != 16 {
		t.Fatalf("spec = %+v", spec)
	}
	if _, ok := core.TruncaterOf(a); ok {
		t.Error("relay does not truncate, but its plugin env declares core.CapTruncate")
	}
	obs, err := a.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	if got := obs[0].Text; got != "You are runner 1. The baton is at cell 0 of 4." {
		t.Errorf("obs text = %q", got)
	}
	if obs[0].Mask != nil {
		t.Errorf("nil mask arrived as %v", obs[0].Mask)
	}
	var last core.StepResult
	for i := 0; !last.Done(); i++ {
		if i > 10 {
			t.Fatal("episode does not end")
		}
		if last, err = a.Step(joint(1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if !last.Terminated || last.Metrics["makespan_s"] != 4 || last.Metrics["return"] != 4-0.4 {
		t.Errorf("last step = %+v", last)
	}
	if st := a.State(); len(st) != 2 || st[0] != 1 || st[1] != 0.25 {
		t.Errorf("State = %v", st)
	}
	if _, err := a.Step(joint(1)); err == nil || !strings.Contains(err.Error(), "want 2 actions, got 1") {
		t.Errorf("Step with one action: err = %v", err)
	}
	// An error of the env's own is not a process failure.
	if _, err := a.Reset(2); err != nil {
		t.Errorf("Reset after an env error: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	script := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	chatty := script("chatty", "#!/bin/sh\necho hello there\n", 0o755)
	quitter := script("quitter", "#!/bin/sh\necho giving up >&2\nexit 7\n", 0o755)
	plain := script("plain", "not a program", 0o644)
	for _, tc := range []struct {
		name      string
		ref       core.SourceRef
		handshake string // the faulty plugin's handshake variant
		is        error
		want      []string
	}{
		{"missing", ref(filepath.Join(dir, "nope"), nil), "", os.ErrNotExist, []string{"env grpc:", "nope", "no such file"}},
		{"directory", ref(dir, nil), "", nil, []string{"is a directory"}},
		{"not executable", ref(plain, nil), "", nil, []string{"not executable"}},
		{"not a go-plugin", ref(chatty, nil), "", ErrHandshake, []string{"not a go-plugin binary", `"hello there"`}},
		{"exits early", ref(quitter, nil), "", ErrHandshake, []string{"exit status 7", "before the handshake", "giving up"}},
		{"wrong cookie", ref(bin.faulty, nil), "badcookie", ErrHandshake, []string{"magic cookie", "TROUPE_PLUGIN"}},
		{"wrong version", ref(bin.faulty, nil), "badversion", ErrProtocolVersion, []string{"protocol version 99", "speaks version 1"}},
		{"bad param", ref(bin.lbf, map[string]any{"nope": 1}), "", nil, []string{"Open", `unknown key "nope"`}},
		{"bad param value", ref(bin.example, map[string]any{"length": 3}), "", nil, []string{"length must be an even number", "got 3"}},
		{"loads", ref(bin.example, nil), "", nil, nil}, // control
		{"bad sha256 syntax", core.SourceRef{Scheme: "grpc", Path: bin.lbf, SHA256: "abc"}, "", nil, []string{`sha256 "abc" is not 64 hex digits`}},
		{"no timeout", core.SourceRef{Scheme: "grpc", Path: bin.lbf, Sandbox: core.Sandbox{CallTimeout: -1}}, "", nil, nil}, // control: negative = no limit
		{"sub-millisecond timeout", core.SourceRef{Scheme: "grpc", Path: bin.lbf, Sandbox: core.Sandbox{CallTimeout: 5}}, "", nil, []string{"sandbox.call_timeout: must be 0 (the default), negative (no limit) or at least 1ms, got 5ns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.handshake != "" {
				t.Setenv("TROUPE_TEST_FAULTY_HANDSHAKE", tc.handshake) // inherited by the plugin
			}
			start := time.Now()
			src, err := core.LoadEnv(context.Background(), tc.ref)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				src.Close()
				return
			}
			if err == nil {
				src.Close()
				t.Fatal("loaded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if d := time.Since(start); testenv.Timing() && d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestSHA256Pin(t *testing.T) {
	noLeftovers(t)
	b, err := os.ReadFile(bin.example)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	good := hex.EncodeToString(sum[:])
	src := loadEnv(t, core.SourceRef{Scheme: "grpc", Path: bin.example, SHA256: strings.ToUpper(good)})
	env := open(t, src)
	if _, err := env.Reset(1); err != nil {
		t.Fatal(err)
	}

	bad := strings.Repeat("0", 64)
	_, err = core.LoadEnv(context.Background(), core.SourceRef{Scheme: "grpc", Path: bin.example, SHA256: bad})
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	for _, w := range []string{"pins " + bad, "has " + good, bin.example} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	_, err = (&Loader{}).LoadReward(context.Background(), core.SourceRef{Scheme: "grpc", Path: bin.faulty, SHA256: bad})
	if !errors.Is(err, ErrChecksum) {
		t.Errorf("reward: err = %v, want ErrChecksum", err)
	}
}

func TestPluginExitsMidEpisode(t *testing.T) {
	noLeftovers(t)
	src := loadEnv(t, ref(bin.faulty, map[string]any{"exit_at_step": 3, "exit_code": 3}))
	env := open(t, src)
	first := pidOf(env)
	for episode := range 2 {
		if _, err := env.Reset(uint64(episode)); err != nil {
			t.Fatalf("episode %d: Reset: %v", episode, err)
		}
		if episode == 1 && pidOf(env) == first {
			t.Error("Reset did not start a new process")
		}
		for step := 1; step <= 2; step++ {
			if _, err := env.Step(joint(1, 0)); err != nil {
				t.Fatalf("episode %d step %d: %v", episode, step, err)
			}
		}
		pid := pidOf(env)
		_, err := env.Step(joint(1, 0))
		if !errors.Is(err, ErrExited) {
			t.Fatalf("episode %d: step 3: err = %v, want ErrExited", episode, err)
		}
		for _, w := range []string{bin.faulty, fmt.Sprintf("pid %d", pid), "Step", "exit status 3", "exiting on purpose"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
		if _, err := env.Step(joint(1, 0)); err == nil || !strings.Contains(err.Error(), "Reset starts a new one") {
			t.Errorf("Step after the crash: err = %v", err)
		}
		if st := env.State(); st != nil {
			t.Errorf("State after the crash = %v, want nil", st)
		}
		if alive(pid) {
			t.Errorf("crashed plugin %d still running", pid)
		}
	}
}

func TestPluginHangsInStep(t *testing.T) {
	noLeftovers(t)
	r := ref(bin.faulty, map[string]any{"hang_at_step": 2})
	r.Sandbox.CallTimeout = 300 * time.Millisecond
	env := open(t, loadEnv(t, r))
	if _, err := env.Reset(1); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Step(joint(0, 0)); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(env)
	start := time.Now()
	_, err := env.Step(joint(0, 0))
	if d := time.Since(start); testenv.Timing() && d > 3*time.Second {
		t.Errorf("a hung Step took %v with a 300ms timeout", d)
	}
	if !errors.Is(err, ErrCallTimeout) || !strings.Contains(err.Error(), "300ms") || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("err = %v, want ErrCallTimeout naming 300ms", err)
	}
	if alive(pid) {
		t.Errorf("hung plugin %d still running", pid)
	}
	if _, err := env.Reset(2); err != nil {
		t.Fatalf("Reset after the timeout: %v", err)
	}
	if _, err := env.Step(joint(0, 0)); err != nil {
		t.Fatalf("Step after the restart: %v", err)
	}
}

func TestPluginPanics(t *testing.T) {
	noLeftovers(t)
	env := open(t, loadEnv(t, ref(bin.faulty, map[string]any{"panic_at_step": 1})))
	if _, err := env.Reset(1); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(env)
	_, err := env.Step(joint(0, 0))
	if err == nil || !strings.Contains(err.Error(), "Step: panic: counter: panicking on purpose") {
		t.Fatalf("err = %v", err)
	}
	if _, err := env.Reset(2); err != nil {
		t.Fatal(err)
	}
	if pidOf(env) == pid {
		t.Error("the process that panicked was kept")
	}
}

func TestTruncate(t *testing.T) {
	noLeftovers(t)
	env := open(t, loadEnv(t, ref(bin.faulty, nil)))
	tr, ok := core.TruncaterOf(env)
	if !ok {
		t.Fatalf("%T does not declare core.CapTruncate though the plugin env implements core.Truncater", env)
	}
	if _, err := env.Reset(3); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Step(joint(1, 1)); err != nil {
		t.Fatal(err)
	}
	r, err := tr.Truncate()
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || r.Metrics["total"] != 5 || r.Rewards != nil {
		t.Errorf("Truncate = %+v, want truncated, total 5, nil rewards", r)
	}
}

func TestCleanupClientsAndClose(t *testing.T) {
	noLeftovers(t)
	src := loadEnv(t, ref(bin.faulty, nil))
	envs := []core.Env{open(t, src), open(t, src), open(t, src)}
	var pids []int
	for _, e := range envs {
		pids = append(pids, pidOf(e))
	}
	if n := liveProcesses(); n != 3 {
		t.Fatalf("%d processes, want 3", n)
	}
	CleanupClients()
	CleanupClients() // twice is fine
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("plugin %d survived CleanupClients", pid)
		}
	}
	if n := liveProcesses(); n != 0 {
		t.Errorf("%d processes after CleanupClients", n)
	}
	// The instances fail, then restart on Reset (the source was not closed).
	if _, err := envs[0].Step(joint(0, 0)); !errors.Is(err, ErrExited) {
		t.Errorf("Step after CleanupClients: err = %v, want ErrExited", err)
	}
	if _, err := envs[0].Reset(1); err != nil {
		t.Fatalf("Reset after CleanupClients: %v", err)
	}
	pid := pidOf(envs[0])
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("plugin %d survived EnvSource.Close", pid)
	}
	if _, err := envs[0].Reset(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Reset after Close: err = %v, want ErrClosed", err)
	}
	if _, err := envs[1].Reset(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Reset of a failed instance after Close: err = %v, want ErrClosed", err)
	}
	if _, err := src.Open(); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Close: err = %v, want ErrClosed", err)
	}
}

func TestPluginExitsWhenHostDies(t *testing.T) {
	noLeftovers(t)
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostHelperEnv+"="+bin.faulty)
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	line := readLine(t, bufio.NewReader(out), 10*time.Second)
	var pid int
	if _, err := fmt.Sscan(line, &pid); err != nil || pid <= 0 {
		t.Fatalf("host helper said %q", line)
	}
	sockDir := socketDirOf(t, pid)
	if !alive(pid) {
		t.Fatalf("plugin %d not running", pid)
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("plugin %d still running 5s after its host was killed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(sockDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the orphaned plugin left its socket directory %s behind (%v)", sockDir, err)
		os.RemoveAll(sockDir)
	}
}

// socketDirOf reads a plugin process's socket directory from its
// environment.
func socketDirOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Skipf("cannot read the plugin's environment: %v", err)
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if dir, ok := strings.CutPrefix(kv, "PLUGIN_UNIX_SOCKET_DIR="); ok {
			if !strings.HasPrefix(filepath.Base(dir), SocketDirPrefix) {
				t.Fatalf("socket directory %q", dir)
			}
			return dir
		}
	}
	t.Fatal("the plugin has no PLUGIN_UNIX_SOCKET_DIR")
	return ""
}

// captureHandler records log records.
type captureHandler struct {
	mu   sync.Mutex
	recs []string
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *captureHandler) WithGroup(string) slog.Handler            { return h }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	s := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		s += " " + a.Key + "=" + a.Value.String()
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, s)
	h.mu.Unlock()
	return nil
}

func (h *captureHandler) has(want string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.recs {
		if strings.Contains(r, want) {
			return true
		}
	}
	return false
}

func TestPluginLogsReachHost(t *testing.T) {
	noLeftovers(t)
	h := &captureHandler{}
	l := &Loader{Logger: slog.New(h)}
	src, err := l.LoadEnv(context.Background(), ref(bin.faulty, map[string]any{"log": true}))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	env, err := src.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.Reset(5); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"INFO faulty: reset seed=5",                    // slog, level and attrs kept
		"INFO faulty: log package at reset 5",          // the log package
		"INFO faulty: stdout at reset 5 stream=stdout", // os.Stdout
		"INFO faulty: stderr at reset 5 stream=stderr", // os.Stderr
	} {
		deadline := time.Now().Add(3 * time.Second)
		for !h.has(want) {
			if time.Now().After(deadline) {
				h.mu.Lock()
				t.Errorf("no log record %q; got:\n%s", want, strings.Join(h.recs, "\n"))
				h.mu.Unlock()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestRewardPlugin(t *testing.T) {
	noLeftovers(t)
	rf, err := core.LoadReward(context.Background(), ref(bin.faulty, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer rf.(interface{ Close() error }).Close()
	if rf.Name() != "counter.sum" || strings.Join(rf.Components(), ",") != "total" {
		t.Fatalf("reward %q %v", rf.Name(), rf.Components())
	}
	// The metrics the reward needs travel in RewardInfo.metrics.
	if got := core.RequiredMetricsOf(rf); !slices.Equal(got, []string{"total"}) {
		t.Fatalf("required metrics %v, want [total] as the plugin declares", got)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			c, m, err := rf.Score(&core.Episode{Steps: i, Metrics: map[string]float64{"total": float64(i) / 3}})
			if err != nil || c["total"] != float64(i)/3 || m["steps"] != float64(i) {
				t.Errorf("Score %d = %v, %v, %v", i, c, m, err)
			}
		})
	}
	wg.Wait()
	pid := rf.(*remoteReward).proc.pid
	if _, _, err := rf.Score(&core.Episode{Metrics: map[string]float64{"fail": 1}}); err == nil || !strings.Contains(err.Error(), "episode has a fail metric") {
		t.Errorf("failing Score: err = %v", err)
	}
	if rf.(*remoteReward).proc.pid != pid {
		t.Error("an error of the reward function restarted the process")
	}
	_, _, err = rf.Score(&core.Episode{Metrics: map[string]float64{"crash": 1}})
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 4") || !strings.Contains(err.Error(), "Score") {
		t.Fatalf("crashing Score: err = %v", err)
	}
	c, _, err := rf.Score(&core.Episode{Metrics: map[string]float64{"total": 2}})
	if err != nil || c["total"] != 2 {
		t.Fatalf("Score after the crash = %v, %v", c, err)
	}

	_, err = core.LoadReward(context.Background(), ref(bin.lbf, nil))
	if err == nil || !strings.Contains(err.Error(), "serves no reward function") {
		t.Errorf("loading an env-only binary as a reward: err = %v", err)
	}
}

// Host-to-plugin messages larger than gRPC's default 4 MiB limit (an episode
// with large artifacts, sent to a reward plugin) reach the plugin; the serve
// kit lifts the server's limit as go-plugin lifts the client's.
func TestLargeMessages(t *testing.T) {
	noLeftovers(t)
	rf, err := core.LoadReward(context.Background(), ref(bin.faulty, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer rf.(interface{ Close() error }).Close()
	big := make([]byte, 6<<20)
	ep := &core.Episode{Steps: 3, Metrics: map[string]float64{"total": 7}, Artifacts: map[string][]byte{"log.txt": big}}
	c, m, err := rf.Score(ep)
	if err != nil || c["total"] != 7 || m["steps"] != 3 {
		t.Fatalf("Score of an episode with 6 MiB of artifacts = %v, %v, %v", c, m, err)
	}
}

// A plugin that cannot answer go-plugin's shutdown request (here: stopped
// with SIGSTOP) must not hang CleanupClients, which the CLI calls on Ctrl-C.
func TestCleanupClientsStoppedPlugin(t *testing.T) {
	noLeftovers(t)
	env := open(t, loadEnv(t, ref(bin.faulty, nil)))
	pid := pidOf(env)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		CleanupClients()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		syscall.Kill(pid, syscall.SIGKILL)
		<-done
		t.Fatalf("CleanupClients still waiting for stopped plugin %d after 20s", pid)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("stopped plugin %d survived CleanupClients", pid)
	}
}

// CleanupClients running while a process starts (between its registration
// and go-plugin's start) stops that process too, and the start fails saying
// so, not blaming the binary's handshake.
func TestCleanupClientsDuringStart(t *testing.T) {
	noLeftovers(t)
	testHookStart = CleanupClients
	defer func() { testHookStart = nil }()
	src, err := core.LoadEnv(context.Background(), ref(bin.faulty, nil))
	if err == nil {
		env, oerr := src.Open()
		if oerr == nil {
			env.Close()
		}
		src.Close()
		t.Fatal("LoadEnv succeeded though CleanupClients ran while its process started")
	}
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "while it started") {
		t.Errorf("err = %v, want ErrExited saying the process was stopped while it started", err)
	}
}
