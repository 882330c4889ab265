package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/cluster"
	"github.com/troupe-dev/troupe/internal/testenv"
)

// The environment of a worker process: the test binary re-executed by
// startProcs runs as a worker (what `troupe worker` runs: agentfile's
// OpenResolved on a cluster.Worker) instead of the tests.
const (
	envProcURL         = "TROUPE_CLUSTER_TEST_WORKER_NATS"
	envProcConcurrency = "TROUPE_CLUSTER_TEST_WORKER_CONCURRENCY"
	envProcCache       = "TROUPE_CLUSTER_TEST_WORKER_CACHE"
	// envProcSlow makes a worker process print "playing KEY" when it
	// starts an episode and wait this long (a Go duration) before writing
	// its result, so that it holds a job most of the time.
	envProcSlow = "TROUPE_CLUSTER_TEST_WORKER_SLOW"
	// procReady is the line a worker process prints once its consumer is
	// open.
	procReady = "worker ready"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envProcURL); url != "" {
		os.Exit(workerMain(url))
	}
	os.Exit(m.Run())
}

// workerMain is a worker process: it plays jobs until its stdin closes
// (the test ended, or died) or it gets SIGTERM.
func workerMain(url string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	n, err := strconv.Atoi(os.Getenv(envProcConcurrency))
	if err != nil {
		n = 1
	}
	nc, err := cluster.Connect(url, "test worker process")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := cluster.NewWorker(ctx, nc, agentfile.OpenResolved, cluster.WorkerOptions{Concurrency: n, Cache: os.Getenv(envProcCache), Idle: time.Minute, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if d, err := time.ParseDuration(os.Getenv(envProcSlow)); err == nil {
		var mu sync.Mutex
		cluster.SetOnPlay(w, func(_ context.Context, j cluster.Job) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Println("playing " + j.Key())
		})
		cluster.SetBeforeWrite(w, func(cluster.Job) bool { time.Sleep(d); return true })
	}
	fmt.Println(procReady)
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// workerProc is a running worker process.
type workerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when the process has exited
	// lines receives what the process prints after it is ready (lines
	// that do not fit are dropped).
	lines chan string
}

// kill ends the process with SIGKILL (no result written, no ack, no
// goodbye) and waits for it.
func (p *workerProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop asks the process to end (its stdin closes) and waits; after 10 s
// it is killed.
func (p *workerProc) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

// startProcs starts n worker processes on the server at url, each
// playing concurrency episodes at once with plugin cache cache, and waits
// until each has opened its consumer. They stop when the test ends.
// Their logs are shown when the test fails; extraEnv is added to their environment.
func startProcs(tb testing.TB, url string, n, concurrency int, cache string, extraEnv ...string) []*workerProc {
	tb.Helper()
	var ps []*workerProc
	for range n {
		p, err := startProc(tb, url, concurrency, cache, extraEnv...)
		if err != nil {
			tb.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// startProc starts one worker process as startProcs does; it may be
// called from any goroutine of the test (it reports errors instead of
// failing the test).
func startProc(tb testing.TB, url string, concurrency int, cache string, extraEnv ...string) (*workerProc, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envProcURL+"="+url, envProcConcurrency+"="+strconv.Itoa(concurrency), envProcCache+"="+cache)
	cmd.Env = append(cmd.Env, extraEnv...)
	logs := &testenv.SyncBuffer{}
	cmd.Stderr = logs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a worker process: %w", err)
	}
	p := &workerProc{cmd: cmd, stdin: stdin, done: make(chan struct{}), lines: make(chan string, 1024)}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			switch {
			case !ok && strings.TrimSpace(sc.Text()) == procReady:
				ok = true
				ready <- true
			case ok:
				select {
				case p.lines <- sc.Text():
				default:
				}
			}
		}
		if !ok {
			ready <- false
		}
	}()
	go func() { _ = cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() {
		p.stop()
		if tb.Failed() && logs.Len() > 0 {
			tb.Logf("worker process %d:\n%s", cmd.Process.Pid, logs.String())
		}
	})
	select {
	case ok := <-ready:
		if !ok {
			<-p.done
			return nil, fmt.Errorf("a worker process exited before it was ready: %v\n%s", cmd.ProcessState, logs.String())
		}
	case <-time.After(30 * time.Second):
		return nil, errors.New("a worker process was not ready after 30 s")
	}
	return p, nil
}

// clusterOptions are the delivery settings of the tests' trainers: the
// defaults (what the worker processes create the consumer with).
func clusterOptions() cluster.Config { return cluster.DefaultConfig() }

// delivery is the default configuration with ack_wait and max_deliver.
func delivery(ackWait time.Duration, maxDeliver int) cluster.Config {
	c := cluster.DefaultConfig()
	c.AckWait, c.MaxDeliver = ackWait, maxDeliver
	return c
}

// workerOpts are the options of a test worker: n at a time, plugin
// files in cache.
func workerOpts(n int, cache string) cluster.WorkerOptions {
	o := cluster.DefaultWorkerOptions()
	o.Concurrency, o.Cache = n, cache
	return o
}

// TestKilledWorkerProcess: the only worker process, killed with SIGKILL
// in the middle of an iteration while it plays a job (no result, no ack,
// no goodbye), and a worker process started in its place (a restart, with
// the same cache) give the run of the in-process pool: the restarted
// worker picks up where the killed one stopped, the job it held first.
func TestKilledWorkerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("trains twice")
	}
	url := startServer(t)
	o := delivery(time.Second, 3)
	cache := t.TempDir()
	slow := envProcSlow + "=100ms"
	first := startProcs(t, url, 1, 1, cache, slow)[0]
	type restart struct {
		key string
		p   *workerProc
	}
	restarted := make(chan restart, 1)
	go func() {
		n := 0
		for line := range first.lines {
			if key, ok := strings.CutPrefix(line, "playing "); ok {
				if n++; n == 4 { // iteration 1 is under way
					time.Sleep(30 * time.Millisecond) // inside the episode or its wait
					first.kill()
					p, err := startProc(t, url, 1, cache, slow)
					if err != nil {
						t.Errorf("restarting the worker process: %v", err)
						close(restarted)
						return
					}
					restarted <- restart{key, p}
					return
				}
			}
		}
	}()
	text := strings.Replace(project, "CREDIT", "", 1)
	dir := t.TempDir()
	wantM, wantP := train(t, text, filepath.Join(dir, "local"), "", o)
	gotM, gotP := train(t, text, filepath.Join(dir, "cluster"), url, o)
	var r restart
	select {
	case r = <-restarted:
	default:
	}
	if r.p == nil {
		t.Fatal("the worker process was not killed and restarted during the run")
	}
	if first.cmd.ProcessState == nil || first.cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the first worker process: %v, want killed by SIGKILL", first.cmd.ProcessState)
	}
	if strings.Join(gotM, "\n") != strings.Join(wantM, "\n") || !bytes.Equal(gotP, wantP) {
		t.Errorf("the run with a worker process killed while playing %s differs:\nlocal:\n%s\ncluster:\n%s", r.key, strings.Join(wantM, "\n"), strings.Join(gotM, "\n"))
	}
	// The restarted process played the killed job again.
	replayed := false
	for len(r.p.lines) > 0 {
		if line := <-r.p.lines; line == "playing "+r.key {
			replayed = true
		}
	}
	if !replayed {
		t.Errorf("the restarted worker process never played %s, the job the killed one held", r.key)
	}
}
