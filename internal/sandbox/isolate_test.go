package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/internal/testenv"
)

// The escape tests run each probe twice: isolated (the default), where
// every escape must fail, and as a control with IsolationNone, where the
// same probe must succeed, which shows that the probe detects the escape
// it is about (a probe that could not escape anyway would prove nothing).

// unisolated returns a sandbox without isolation (the control).
func unisolated(t *testing.T, cfg Config) *Sandbox {
	t.Helper()
	cfg.Isolation = IsolationNone
	return newTestSandbox(t, cfg)
}

// controlUID is the host uid an unisolated run has.
func controlUID(s *Sandbox) int {
	if os.Geteuid() == 0 && s.Config().UID >= 0 {
		return s.Config().UID
	}
	return os.Geteuid()
}

// tryAll runs a program that attempts op on each path and prints a JSON
// map from path to "ok: …" or the exception.
func tryAll(t *testing.T, s *Sandbox, op string, paths []string) map[string]string {
	t.Helper()
	ps, _ := json.Marshal(paths)
	code := fmt.Sprintf(`import json, os
out = {}
def op(p):
%s
for p in json.loads(%q):
    try:
        out[p] = "ok: " + str(op(p))[:200]
    except Exception as e:
        out[p] = type(e).__name__ + ": " + str(e)
print(json.dumps(out))
`, op, string(ps))
	r, err := s.Run(context.Background(), Program{Code: code, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || !r.OK() {
		t.Fatalf("probe failed: %v; %+v", err, r)
	}
	return got
}

func TestIsolationWritesOutsideDoNotPersist(t *testing.T) {
	s := newTestSandbox(t, Config{})
	tag := fmt.Sprintf("troupe-escape-%d-%d", os.Getpid(), time.Now().UnixNano())
	host := t.TempDir()
	targets := []string{
		"/tmp/" + tag,
		"/dev/shm/" + tag,
		"../" + tag, // the parent of the work dir
		filepath.Join(host, tag),
		"/usr/" + tag,
	}
	hostPath := func(p string) string {
		if strings.HasPrefix(p, "../") {
			return filepath.Join(s.Config().TempDir, p[3:])
		}
		return p
	}
	t.Cleanup(func() {
		for _, p := range targets {
			os.Remove(hostPath(p))
		}
	})
	write := "    with open(p, 'w') as f:\n        f.write('escaped')\n    return os.path.abspath(p)\n"
	got := tryAll(t, s, write, targets)
	for _, p := range targets {
		if _, err := os.Stat(hostPath(p)); err == nil {
			t.Errorf("isolated: %s written on the host (%s)", hostPath(p), got[p])
		}
	}
	// The run's own /tmp and /dev/shm are writable (private), /usr is not.
	if !strings.HasPrefix(got["/tmp/"+tag], "ok") || !strings.HasPrefix(got["/dev/shm/"+tag], "ok") {
		t.Errorf("isolated: the private /tmp and /dev/shm should be writable: %v", got)
	}
	if strings.HasPrefix(got["/usr/"+tag], "ok") {
		t.Errorf("isolated: /usr writable: %v", got)
	}
	// Nor does a second run see the first one's files.
	seen := tryAll(t, s, "    return open(p).read()\n", []string{"/tmp/" + tag, "/dev/shm/" + tag})
	for p, v := range seen {
		if strings.HasPrefix(v, "ok") {
			t.Errorf("isolated: a later run read %s: %s", p, v)
		}
	}

	// Control: unisolated, the same writes land on the host.
	c := unisolated(t, Config{})
	os.Chmod(filepath.Dir(host), 0o777)
	os.Chmod(host, 0o777)
	tryAll(t, c, write, targets[:4])
	for _, p := range targets[:4] {
		if _, err := os.Stat(hostPath(p)); err != nil {
			t.Errorf("control: unisolated write to %s did not land on the host (%v): the probe proves nothing", p, err)
		}
	}
}

func TestIsolationDiskQuota(t *testing.T) {
	// 1 MiB files, each under the per-file limit, spread over the work dir,
	// /tmp and /dev/shm: only a total quota stops them.
	tag := fmt.Sprintf("troupe-quota-%d-%d-", os.Getpid(), time.Now().UnixNano())
	dirs := []string{"", "/tmp/", "/dev/shm/"}
	name := func(i int) string { return dirs[i%3] + tag + fmt.Sprint(i) }
	code := fmt.Sprintf(`import os
total = 0
try:
    for i in range(24):
        with open((%q, %q, %q)[i %% 3] + %q + str(i), "wb") as f:
            f.write(b"x" * (1 << 20))
        total += 1 << 20
finally:
    print(total)
`, dirs[0], dirs[1], dirs[2], tag)
	t.Cleanup(func() {
		for i := range 24 {
			if i%3 != 0 {
				os.Remove(name(i))
			}
		}
	})
	s := newTestSandbox(t, Config{DiskBytes: 8 << 20, FileSizeBytes: 2 << 20, WallTimeout: 10 * time.Second})
	r, err := s.Run(context.Background(), Program{Code: code})
	if err != nil {
		t.Fatal(err)
	}
	var total int
	fmt.Sscan(r.Stdout, &total)
	if r.Stop != StopDisk || total > 8<<20 || total < 4<<20 {
		t.Fatalf("isolated: want disk_limit after at most 8 MiB, got %d bytes written, %+v", total, r)
	}
	for i := range 24 {
		if _, err := os.Stat(name(i)); i%3 != 0 && err == nil {
			t.Errorf("isolated: %s written on the host", name(i))
		}
	}
	// Control: unisolated, nothing stops the 24 MiB (those in the work
	// dir go with it, the cleanup removes the others).
	c := unisolated(t, Config{FileSizeBytes: 2 << 20, WallTimeout: 10 * time.Second})
	r, err = c.Run(context.Background(), Program{Code: code})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Sscan(r.Stdout, &total)
	if !r.OK() || total != 24<<20 {
		t.Errorf("control: unisolated, want all 24 MiB written, got %d: %+v", total, r)
	}
}

func TestIsolationHidesHomeRepositoryAndData(t *testing.T) {
	s := newTestSandbox(t, Config{})
	// A key file like a user's ~/.ssh/id_ed25519: mode 0600, owned by the
	// uid an unisolated run has (the user troupe runs as, in the story).
	c := unisolated(t, Config{})
	home := filepath.Join(t.TempDir(), "home")
	key := filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	secret := fmt.Sprintf("SECRET-%d", time.Now().UnixNano())
	if err := os.WriteFile(key, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(filepath.Dir(home)), filepath.Dir(home)} {
		os.Chmod(p, 0o711)
	}
	for _, p := range []string{home, filepath.Dir(key), key} {
		if err := os.Lchown(p, controlUID(c), controlUID(c)); err != nil {
			t.Fatal(err)
		}
	}
	repoFile, err := filepath.Abs("sandbox.go")
	if err != nil {
		t.Fatal(err)
	}
	// A world-readable host file outside every bind: what the repository
	// is wherever the checkout's own directories let others in. The
	// control reads it even when the checkout is not readable by the
	// run's uid (a clone in a 0700 mktemp directory).
	hostDir, err := os.MkdirTemp("", "troupe-host-file-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostDir) })
	if err := os.Chmod(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostFile := filepath.Join(hostDir, "hidden-tests.py")
	if err := os.WriteFile(hostFile, []byte("# a dataset's hidden tests\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := []string{key, repoFile, hostFile}
	readable := []string{hostFile} // by the control run
	data := "/work/shared/data/HumanEval.jsonl.gz"
	if _, err := os.Stat(data); err == nil {
		paths = append(paths, data)
		readable = append(readable, data)
	}
	if h, err := os.UserHomeDir(); err == nil {
		paths = append(paths, h)
	}
	read := "    if os.path.isdir(p):\n        return os.listdir(p)\n    return open(p, 'rb').read(64)\n"
	got := tryAll(t, s, read, paths)
	for _, p := range paths {
		if !strings.HasPrefix(got[p], "FileNotFoundError") {
			t.Errorf("isolated: %s should not exist in the run, got %s", p, got[p])
		}
	}
	ls := tryAll(t, s, "    return sorted(os.listdir(p))\n", []string{"/"})["/"]
	for _, hidden := range []string{"'home'", "'root'", "'work'", "'var'", "'mnt'"} {
		if strings.Contains(ls, hidden) {
			t.Errorf("isolated: / lists %s: %s", hidden, ls)
		}
	}

	// Control: unisolated, the key, the world-readable host file and the
	// data are read.
	got = tryAll(t, c, read, append([]string{key}, readable...))
	if !strings.Contains(got[key], secret) {
		t.Errorf("control: unisolated run did not read the key (%s): the probe proves nothing", got[key])
	}
	for _, p := range readable {
		if !strings.HasPrefix(got[p], "ok") {
			t.Errorf("control: unisolated run did not read %s (%s)", p, got[p])
		}
	}
}

func TestIsolationForkBombBesideNormalRun(t *testing.T) {
	bomb := `import os, time
while True:
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
    except OSError:
        time.sleep(0.001)
`
	normal := `import os
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    kids.append(pid)
print(sorted(os.waitstatus_to_exitcode(os.waitpid(k, 0)[1]) for k in kids))
`
	run := func(s *Sandbox) (Result, Result) {
		var wg sync.WaitGroup
		var bombRes Result
		wg.Add(1)
		go func() {
			defer wg.Done()
			bombRes, _ = s.Run(context.Background(), Program{TaskID: "bomb", Code: bomb})
		}()
		time.Sleep(time.Second) // the bomb holds all its processes
		r, err := s.Run(context.Background(), Program{TaskID: "normal", Code: normal})
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		assertGone(t, bombRes)
		return r, bombRes
	}
	cfg := Config{Parallel: 2, Processes: 16, WallTimeout: 2500 * time.Millisecond, CPUTime: 3 * time.Second, CacheEntries: -1}
	r, bombRes := run(newTestSandbox(t, cfg))
	if !r.OK() || r.Stdout != "[7, 7, 7, 7]\n" {
		t.Errorf("isolated: the normal run beside a fork bomb: %+v", r)
	}
	if bombRes.Stop != StopTimeout {
		t.Errorf("isolated: the bomb should run until the timeout: %+v", bombRes)
	}
	// Control: unisolated, both runs share one user's process limit.
	if os.Geteuid() != 0 {
		t.Skip("control needs root (unisolated runs switch to one shared uid)")
	}
	r, _ = run(unisolated(t, cfg))
	if r.OK() {
		t.Errorf("control: unisolated, the normal run was not starved by the bomb (%+v): the test proves nothing", r)
	}
}

func TestIsolationNoNetwork(t *testing.T) {
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
	connect := fmt.Sprintf("    import socket\n    s = socket.create_connection(('127.0.0.1', %d), timeout=1)\n    s.close()\n    return 'connected'\n", ln.Addr().(*net.TCPAddr).Port)
	s := newTestSandbox(t, Config{})
	addr := []string{"tcp"}
	if got := tryAll(t, s, connect, addr)["tcp"]; strings.HasPrefix(got, "ok") {
		t.Errorf("isolated: connected to the host's loopback: %s", got)
	}
	c := unisolated(t, Config{NoNamespaces: true})
	if got := tryAll(t, c, connect, addr)["tcp"]; got != "ok: connected" {
		t.Errorf("control: unisolated without namespaces, want a connection, got %s", got)
	}
}

// Without isolation and without an explicit opt-out, untrusted code does
// not run; the error says what would be unprotected and how to opt out.
func TestIsolationRefusedWithoutOptOut(t *testing.T) {
	testenv.Need(t, testenv.PythonInstalled())
	_, err := newSandbox(Config{}, testHooks{refuseNS: true})
	if !errors.Is(err, ErrNoIsolation) {
		t.Fatalf("want ErrNoIsolation, got %v", err)
	}
	for _, want := range []string{"refuses to run them", "home directory", "datasets' hidden tests", "fill the disk", `isolation = "none"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	s, err := newSandbox(Config{Isolation: IsolationNone}, testHooks{refuseNS: true})
	if err != nil {
		t.Fatal(err)
	}
	if iso := s.Isolation(); iso.Filesystem || !strings.Contains(iso.Fallback, "home directory") {
		t.Errorf("opted out: isolation %+v should say what is unprotected", iso)
	}
	// The interpreter must be visible inside.
	py := filepath.Join(t.TempDir(), "python3")
	if err := os.Symlink(python, py); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Interpreter: []string{py}}); err == nil || !strings.Contains(err.Error(), "ReadOnlyPaths") {
		t.Errorf("an interpreter outside the visible paths: want an error naming ReadOnlyPaths, got %v", err)
	}
}

// As root, isolation also works where user namespaces are refused: runs
// then switch to their own uid after the setup.
func TestIsolationAsRootWithoutUserNamespace(t *testing.T) {
	testenv.Need(t, testenv.PythonInstalled())
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	s, err := newSandbox(Config{WallTimeout: 5 * time.Second}, testHooks{noUserNS: true})
	if errors.Is(err, ErrNoIsolation) {
		testenv.Need(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if iso := s.Isolation(); iso.UserNamespace || !iso.Filesystem {
		t.Fatalf("isolation %+v", iso)
	}
	got := tryAll(t, s, "    return (os.getuid(), sorted(os.listdir(p)), open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n", []string{"/"})["/"]
	want := fmt.Sprintf("ok: (%d, ['bin', 'dev', 'etc',", s.Config().IsolatedUIDBase)
	if !strings.HasPrefix(got, want) || strings.Contains(got, "'work'") || !strings.HasSuffix(got, "'0000000000000000')") {
		t.Errorf("got %s, want uid %d, a minimal root and no capability", got, s.Config().IsolatedUIDBase)
	}
}

// BenchmarkIsolationOverhead measures what isolation costs per run: each
// iteration runs the same trivial program isolated (IsolationFull) and
// unisolated (IsolationNone, with its network and PID namespaces), in
// alternation so that both see the same machine load, and reports each
// one's mean wall time per run and their ratio.
func BenchmarkIsolationOverhead(b *testing.B) {
	// Generous timeouts: a loaded machine must not turn a run into a
	// timeout, which would end the benchmark.
	cfg := Config{CacheEntries: -1, WallTimeout: 20 * time.Second, CPUTime: 20 * time.Second}
	iso := newTestSandbox(b, cfg)
	cfg.Isolation = IsolationNone
	none := newTestSandbox(b, cfg)
	p := Program{Code: "print(1)\n"}
	var tIso, tNone time.Duration
	for b.Loop() {
		for _, c := range []struct {
			s *Sandbox
			t *time.Duration
		}{{iso, &tIso}, {none, &tNone}} {
			begin := time.Now()
			r, err := c.s.Run(context.Background(), p)
			*c.t += time.Since(begin)
			if err != nil || !r.OK() {
				b.Fatal(err, r)
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(tIso.Nanoseconds())/n, "isolated-ns/run")
	b.ReportMetric(float64(tNone.Nanoseconds())/n, "none-ns/run")
	b.ReportMetric(float64(tIso)/float64(tNone), "isolated/none")
}

// Config.ReadOnlyPaths are visible read-only; a run whose setup fails
// (here: its interpreter cannot be executed inside) is an error naming
// the step, not a Result.
func TestIsolationReadOnlyPathsAndSetupFailure(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{filepath.Dir(dir), dir} {
		os.Chmod(p, 0o755)
	}
	bad := filepath.Join(dir, "python")
	if err := os.WriteFile(bad, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := newTestSandbox(t, Config{Interpreter: []string{bad}, ReadOnlyPaths: []string{dir}})
	r, err := s.Run(context.Background(), Program{Code: "pass\n"})
	if err == nil || !strings.Contains(err.Error(), "setup: exec "+bad) {
		t.Fatalf("want a setup error naming the exec, got %v (%+v)", err, r)
	}

	// A read-only path is there (even under /tmp, which is the run's
	// own), read-only; its siblings are not.
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("shared"), 0o644); err != nil {
		t.Fatal(err)
	}
	sibling := t.TempDir()
	s = newTestSandbox(t, Config{ReadOnlyPaths: []string{dir}})
	got := tryAll(t, s, "    return open(p).read()\n", []string{filepath.Join(dir, "data.txt"), sibling})
	if got[filepath.Join(dir, "data.txt")] != "ok: shared" || !strings.HasPrefix(got[sibling], "FileNotFoundError") {
		t.Errorf("read: %v", got)
	}
	got = tryAll(t, s, "    return open(p, 'w').write('x')\n", []string{filepath.Join(dir, "new.txt")})
	if !strings.Contains(got[filepath.Join(dir, "new.txt")], "Read-only file system") {
		t.Errorf("write: %v", got)
	}
}
