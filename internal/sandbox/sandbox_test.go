package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/internal/testenv"
)

const python = testenv.Python

func newTestSandbox(t testing.TB, cfg Config) *Sandbox {
	t.Helper()
	testenv.Need(t, testenv.PythonInstalled())
	if cfg.WallTimeout == 0 {
		cfg.WallTimeout = 1500 * time.Millisecond
	}
	if cfg.CPUTime == 0 {
		cfg.CPUTime = time.Second
	}
	s, err := New(cfg)
	if errors.Is(err, ErrNoIsolation) {
		// Skipped, or failed where CI expects isolation to work.
		testenv.Need(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// limiterCases are the ways rlimits are set: by the isolated run's init,
// and, unisolated, by prlimit(1) or by a Python bootstrap.
var limiterCases = []struct {
	name string
	cfg  Config
}{
	{"init", Config{}},
	{"prlimit", Config{Isolation: IsolationNone, Limiter: LimiterPrlimit}},
	{"python", Config{Isolation: IsolationNone, Limiter: LimiterPython}},
}

// assertGone checks that nothing of the run's process group is left.
func assertGone(t *testing.T, r Result) {
	t.Helper()
	if r.PID <= 0 {
		t.Fatalf("result has no pid: %+v", r)
	}
	deadline := time.Now().Add(2 * time.Second)
	for GroupAlive(r.PID) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has processes after the run", r.PID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNormalProgramPasses(t *testing.T) {
	s := newTestSandbox(t, Config{})
	r, err := s.Run(context.Background(), Program{TaskID: "t", Code: "def f(x):\n    return x + 1\n", Test: "assert f(1) == 2\nprint('ok', f(41))\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || strings.TrimSpace(r.Stdout) != "ok 42" {
		t.Fatalf("want ok 42, got %+v", r)
	}
	if r.Wall <= 0 || (testenv.Timing() && r.Wall > time.Second) {
		t.Errorf("wall %v out of range", r.Wall)
	}
	assertGone(t, r)

	// A failing assertion is an ordinary non-zero exit, not a limit.
	r, err = s.Run(context.Background(), Program{TaskID: "t", Code: "def f(x):\n    return x\n", Test: "assert f(1) == 2\n"})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.ExitCode != 1 || r.Stop != StopNone || !strings.Contains(r.Stderr, "AssertionError") {
		t.Fatalf("want exit 1 with AssertionError, got %+v", r)
	}
}

func TestEmptyEnvironmentAndIsolatedInterpreter(t *testing.T) {
	s := newTestSandbox(t, Config{})
	t.Setenv("TROUPE_SECRET", "leak")
	r, err := s.Run(context.Background(), Program{Code: `import os, sys
print(sorted(k for k in os.environ if k not in ("LC_CTYPE",)))
print(sys.flags.isolated, os.getcwd().rsplit("/", 1)[-1].startswith("troupe-sandbox-"))
open("scratch.txt", "w").write("x")
`})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("run failed: %+v", r)
	}
	if want := "[]\n1 True\n"; r.Stdout != want {
		t.Fatalf("stdout %q, want %q", r.Stdout, want)
	}
}

func TestInfiniteLoopTimesOut(t *testing.T) {
	s := newTestSandbox(t, Config{WallTimeout: 700 * time.Millisecond, CPUTime: 5 * time.Second})
	r, err := s.Run(context.Background(), Program{Code: "while True:\n    pass\n"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != StopTimeout || r.OK() {
		t.Fatalf("want timeout, got %+v", r)
	}
	if r.Wall < 700*time.Millisecond || (testenv.Timing() && r.Wall > 3*time.Second) {
		t.Errorf("wall %v not near the 0.7 s timeout", r.Wall)
	}
	assertGone(t, r)
}

func TestCPULimit(t *testing.T) {
	// The wall timeout is generous, so the CPU limit (1 s) ends the loop.
	s := newTestSandbox(t, Config{WallTimeout: 10 * time.Second, CPUTime: time.Second})
	r, err := s.Run(context.Background(), Program{Code: "while True:\n    pass\n"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != StopCPU {
		t.Fatalf("want cpu_limit, got %+v", r)
	}
	assertGone(t, r)
}

func TestMemoryBomb(t *testing.T) {
	for _, lc := range limiterCases {
		t.Run(lc.name, func(t *testing.T) {
			// Generous time limits: on a loaded machine the bomb may need
			// seconds to reach the memory limit, which is what is tested.
			cfg := lc.cfg
			cfg.MemoryBytes, cfg.WallTimeout, cfg.CPUTime = 256<<20, 20*time.Second, 20*time.Second
			s := newTestSandbox(t, cfg)
			r, err := s.Run(context.Background(), Program{Code: "x = []\nwhile True:\n    x.append(bytearray(32 << 20))\n"})
			if err != nil {
				t.Fatal(err)
			}
			if r.Stop != StopMemory {
				t.Fatalf("want memory_limit, got %+v", r)
			}
			assertGone(t, r)
		})
	}
}

func TestForkBomb(t *testing.T) {
	s := newTestSandbox(t, Config{WallTimeout: time.Second})
	r, err := s.Run(context.Background(), Program{Code: `import os
while True:
    try:
        os.fork()
    except OSError:
        pass
`})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != StopTimeout {
		t.Fatalf("want timeout, got %+v", r)
	}
	assertGone(t, r)
	// The limit on processes holds: a loop that forks without catching the
	// error stops on it.
	if os.Geteuid() == 0 && s.Config().UID < 0 {
		t.Skip("running as root without a uid switch: RLIMIT_NPROC is not enforced")
	}
	r, err = s.Run(context.Background(), Program{Code: `import os, time
kids = []
while True:
    pid = os.fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
`})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != StopProcesses {
		t.Fatalf("want process_limit, got %+v", r)
	}
	assertGone(t, r)
}

func TestHugeFileWrite(t *testing.T) {
	for _, lc := range limiterCases {
		t.Run(lc.name, func(t *testing.T) {
			cfg := lc.cfg
			cfg.FileSizeBytes = 1 << 20
			s := newTestSandbox(t, cfg)
			r, err := s.Run(context.Background(), Program{Code: "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 65536)\n"})
			if err != nil {
				t.Fatal(err)
			}
			if r.Stop != StopFileSize {
				t.Fatalf("want file_size_limit, got %+v", r)
			}
			assertGone(t, r)
		})
	}
}

func TestOpenFilesLimit(t *testing.T) {
	s := newTestSandbox(t, Config{OpenFiles: 32})
	r, err := s.Run(context.Background(), Program{Code: "fs = [open('f%d' % i, 'w') for i in range(1000)]\n"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != StopOpenFiles {
		t.Fatalf("want open_files_limit, got %+v", r)
	}
}

func TestSocketHasNoNetwork(t *testing.T) {
	// A listener on this machine's loopback: reachable from any process that
	// shares our network namespace, unreachable from a fresh one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	s := newTestSandbox(t, Config{})
	r, err := s.Run(context.Background(), Program{Code: fmt.Sprintf(`import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(1)
s.connect(("127.0.0.1", %d))
print("connected")
`, port)})
	if err != nil {
		t.Fatal(err)
	}
	iso := s.Isolation()
	t.Logf("isolation: %+v", iso)
	if !iso.Namespaces {
		t.Skipf("no network namespace here (%s); the connection is not blocked", iso.Fallback)
	}
	if r.OK() || strings.Contains(r.Stdout, "connected") || !strings.Contains(r.Stderr, "OSError") {
		t.Fatalf("want the connection refused by the empty network namespace, got %+v", r)
	}
	assertGone(t, r)
}

func TestOutputIsBounded(t *testing.T) {
	s := newTestSandbox(t, Config{OutputBytes: 1000})
	r, err := s.Run(context.Background(), Program{Code: "print('a' + 'y' * 100000)\nprint('LAST')\nimport sys\nsys.stderr.write('b' + 'e' * 5000 + 'END')\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || !r.StdoutTruncated || !r.StderrTruncated {
		t.Fatalf("want both outputs cut, got %v and %v (%s)", r.StdoutTruncated, r.StderrTruncated, r.Describe())
	}
	// The first 750 bytes and the last 250 are kept, around a note.
	for name, c := range map[string]struct{ out, first, last, cut string }{
		"stdout": {r.Stdout, "ay", "LAST\n", "[… 99007 bytes cut …]"},
		"stderr": {r.Stderr, "be", "eEND", "[… 4004 bytes cut …]"},
	} {
		kept := len(c.out) - len(c.cut) - 2
		if !strings.HasPrefix(c.out, c.first) || !strings.HasSuffix(c.out, c.last) || !strings.Contains(c.out, c.cut) || kept != 1000 {
			t.Errorf("%s: %d bytes kept, begins %q, ends %q; want 1000 bytes kept, the beginning, the end and the note %q",
				name, kept, c.out[:min(10, len(c.out))], c.out[max(0, len(c.out)-10):], c.cut)
		}
	}
}

// A program that prints more than the bound still shows its last line,
// which is where a hidden test's completion marker and a traceback's
// exception are.
func TestOutputKeepsTheEnd(t *testing.T) {
	s := newTestSandbox(t, Config{OutputBytes: 4096})
	r, err := s.Run(context.Background(), Program{Code: "for i in range(5000):\n    print(i)\nraise MemoryError\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(r.Stdout, "4999\n") {
		t.Errorf("stdout ends %q", r.Stdout[len(r.Stdout)-20:])
	}
	if r.Stop != StopMemory {
		t.Errorf("stop %s, want %s (the traceback's last line)", r.Stop, StopMemory)
	}
}

func TestCacheHitsAndSharesInflight(t *testing.T) {
	s := newTestSandbox(t, Config{Parallel: 2})
	p := Program{TaskID: "t/1", Code: "import time\ntime.sleep(0.2)\n", Test: "print('done')\n"}
	var wg sync.WaitGroup
	res := make([]Result, 4)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			res[i], err = s.Run(context.Background(), p)
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	st := s.Stats()
	if st.Runs != 1 || st.Misses != 1 || st.Hits != 3 {
		t.Fatalf("four identical concurrent requests: want 1 run, 1 miss, 3 hits; got %+v", st)
	}
	cached := 0
	for _, r := range res {
		if r.Stdout != "done\n" {
			t.Fatalf("stdout %q", r.Stdout)
		}
		if r.Cached {
			cached++
		}
	}
	if cached != 3 {
		t.Errorf("want 3 cached results, got %d", cached)
	}
	// Same code, other tests: a miss. Same again: a hit, and no run.
	q := p
	q.Test = "print('other')\n"
	if r, _ := s.Run(context.Background(), q); r.Cached || r.Stdout != "other\n" {
		t.Fatalf("different tests must not hit: %+v", r)
	}
	if r, _ := s.Run(context.Background(), q); !r.Cached {
		t.Fatalf("repeat must hit: %+v", r)
	}
	// Same code and tests under another task id: a miss.
	q.TaskID = "t/2"
	if r, _ := s.Run(context.Background(), q); r.Cached {
		t.Fatalf("other task id must not hit: %+v", r)
	}
	st = s.Stats()
	if st.Runs != 3 || st.Hits != 4 || st.Misses != 3 || st.Entries != 3 {
		t.Fatalf("stats %+v", st)
	}
	if hr := st.HitRate(); hr < 0.57 || hr > 0.58 {
		t.Errorf("hit rate %v, want 4/7", hr)
	}
}

// A request that shares a run in flight must not inherit the cancellation
// of the caller that started it: its own context is still live.
func TestSharedRunSurvivesOtherCallersCancel(t *testing.T) {
	s := newTestSandbox(t, Config{WallTimeout: 5 * time.Second, CPUTime: 5 * time.Second})
	p := Program{TaskID: "t/shared", Code: "import time\ntime.sleep(0.5)\n", Test: "print('done')\n"}
	waitFor := func(what string, cond func(Stats) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond(s.Stats()) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %+v", what, s.Stats())
			}
			time.Sleep(time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan Result, 1)
	go func() {
		r, _ := s.Run(ctx, p)
		first <- r
	}()
	waitFor("the first run", func(st Stats) bool { return st.Misses == 1 })
	second := make(chan Result, 1)
	go func() {
		r, err := s.Run(context.Background(), p)
		if err != nil {
			t.Error(err)
		}
		second <- r
	}()
	waitFor("the shared request", func(st Stats) bool { return st.Shared == 1 })
	cancel()
	if r := <-first; r.Stop != StopCancelled {
		t.Fatalf("cancelled caller: want stop %q, got %+v", StopCancelled, r)
	}
	if r := <-second; !r.OK() || r.Stdout != "done\n" {
		t.Fatalf("live caller got the other caller's cancellation: %+v", r)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newLRU(2, 1<<20)
	k := func(s string) Key { return Program{TaskID: s}.Key() }
	c.put(k("a"), Result{Stdout: "a"})
	c.put(k("b"), Result{Stdout: "b"})
	c.get(k("a"))
	if n := c.put(k("c"), Result{Stdout: "c"}); n != 1 {
		t.Fatalf("want 1 eviction, got %d", n)
	}
	if _, ok := c.get(k("b")); ok {
		t.Fatal("b was least recently used and should be gone")
	}
	if _, ok := c.get(k("a")); !ok {
		t.Fatal("a should remain")
	}
	// The byte bound evicts too.
	c = newLRU(100, 2*entryOverhead+100)
	c.put(k("a"), Result{Stdout: strings.Repeat("x", 90)})
	c.put(k("b"), Result{Stdout: strings.Repeat("x", 90)})
	if c.len() != 1 || c.bytes > 2*entryOverhead+100 {
		t.Fatalf("byte bound not kept: %d entries, %d bytes", c.len(), c.bytes)
	}
}

func TestParallelBound(t *testing.T) {
	s := newTestSandbox(t, Config{Parallel: 2, CacheEntries: -1})
	ps := make([]Program, 4)
	for i := range ps {
		ps[i] = Program{Code: "import time\ntime.sleep(0.3)\n"}
	}
	begin := time.Now()
	rs, err := s.RunAll(context.Background(), ps)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	for _, r := range rs {
		if !r.OK() {
			t.Fatalf("%+v", r)
		}
	}
	// Four 0.3 s sleeps at most two at a time: at least 0.6 s (all four at
	// once would take 0.3 s). The upper bound only catches a hang: Python's
	// start-up is slow on a loaded machine.
	if took < 600*time.Millisecond || (testenv.Timing() && took > 5*time.Second) {
		t.Fatalf("4 runs of 0.3 s with parallelism 2 took %v", took)
	}
}

func TestCancelledContextStopsRun(t *testing.T) {
	s := newTestSandbox(t, Config{WallTimeout: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := s.Run(ctx, Program{TaskID: "c", Code: "while True:\n    pass\n"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stop != StopCancelled {
		t.Fatalf("want cancelled, got %+v", r)
	}
	assertGone(t, r)
	if s.Stats().Entries != 0 {
		t.Fatal("a cancelled run must not be cached")
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Interpreter: []string{"python3"}}, "absolute path"},
		{Config{Interpreter: []string{"/nonexistent/python"}}, "no such file"},
		{Config{Interpreter: []string{"/tmp"}}, "not an executable"},
		{Config{Limiter: "docker"}, "unknown limiter"},
		{Config{Prlimit: "/nonexistent/prlimit", Limiter: LimiterPrlimit}, "prlimit"},
		{Config{WallTimeout: -time.Second}, "negative timeout"},
		{Config{Isolation: "partial"}, `unknown isolation "partial"`},
		{Config{Isolation: IsolationFull, NoNamespaces: true}, "contradicts"},
		{Config{DiskBytes: 1000}, "disk quota 1000 bytes"},
		{Config{ReadOnlyPaths: []string{"relative/dir"}}, "want an absolute path"},
		{Config{ReadOnlyPaths: []string{"/nonexistent/venv"}}, "no such file"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): want error containing %q, got %v", tc.cfg, tc.want, err)
		}
	}
}

// BenchmarkRun measures one uncached run of a trivial program: isolated
// (IsolationFull, the default), unisolated with network and PID
// namespaces, unisolated without them, unisolated with the Python
// limiter; and a cache hit. The isolation's cost per run is the ratio of
// the first to the second or third, measured in the same run.
func BenchmarkRun(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"isolated", Config{CacheEntries: -1}},
		{"none-namespaces", Config{CacheEntries: -1, Isolation: IsolationNone}},
		{"none-no-namespaces", Config{CacheEntries: -1, Isolation: IsolationNone, NoNamespaces: true}},
		{"none-python-limiter", Config{CacheEntries: -1, Isolation: IsolationNone, Limiter: LimiterPython}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := newTestSandbox(b, tc.cfg)
			for b.Loop() {
				r, err := s.Run(context.Background(), Program{Code: "print(1)\n"})
				if err != nil || !r.OK() {
					b.Fatal(err, r)
				}
			}
		})
	}
	b.Run("cache-hit", func(b *testing.B) {
		s := newTestSandbox(b, Config{})
		p := Program{TaskID: "x", Code: "print(1)\n"}
		if _, err := s.Run(context.Background(), p); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if r, _ := s.Run(context.Background(), p); !r.Cached {
				b.Fatal("miss")
			}
		}
	})
}

func TestNamespaceFallback(t *testing.T) {
	s := newTestSandbox(t, Config{Isolation: IsolationNone})
	s.refuseNS = true
	r, err := s.Run(context.Background(), Program{Code: "print('still runs')\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Stdout != "still runs\n" {
		t.Fatalf("%+v", r)
	}
	iso := s.Isolation()
	if iso.Namespaces || !strings.Contains(iso.Fallback, "refused") {
		t.Fatalf("isolation after a refusal: %+v", iso)
	}
	// Later runs do not try again.
	if _, err := s.Run(context.Background(), Program{Code: "pass\n"}); err != nil {
		t.Fatal(err)
	}
	if s.Stats().Runs != 2 {
		t.Fatalf("runs %d", s.Stats().Runs)
	}
	// A start that fails for another reason is an error, and does not
	// disable namespaces.
	bad := t.TempDir() + "/python"
	if err := os.WriteFile(bad, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s2 := newTestSandbox(t, Config{Interpreter: []string{bad}, Limiter: LimiterPython, Isolation: IsolationNone})
	if _, err := s2.Run(context.Background(), Program{Code: "pass\n"}); err == nil {
		t.Fatal("an interpreter that cannot start must be an error")
	}
	if !s2.Isolation().Namespaces {
		t.Fatal("an unrelated failure must not disable namespaces")
	}
}

// A wall timeout is cached only when the program spent it computing: one
// that was waiting (here sleeping, as a starved program on a loaded machine
// would) runs again next time, a loop is served from the cache.
func TestTimeoutCachedOnlyWhenComputing(t *testing.T) {
	s := newTestSandbox(t, Config{WallTimeout: 400 * time.Millisecond, CPUTime: 5 * time.Second})
	for _, c := range []struct {
		name, code string
		cached     bool
	}{
		{"sleeping", "import time\ntime.sleep(5)\n", false},
		{"looping", "while True:\n    pass\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Program{TaskID: c.name, Code: c.code}
			first, err := s.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if first.Stop != StopTimeout {
				t.Fatalf("first run: %+v, want a timeout", first)
			}
			again, err := s.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if c.cached && !again.Cached && first.CPU < 100*time.Millisecond {
				t.Skipf("the loop got only %v of CPU in its 400 ms: the machine is too loaded to tell", first.CPU)
			}
			if again.Stop != StopTimeout || again.Cached != c.cached {
				t.Fatalf("second run: stop %s, cached %v; want timeout, cached %v (first run used %v of CPU)", again.Stop, again.Cached, c.cached, first.CPU)
			}
		})
	}
}
