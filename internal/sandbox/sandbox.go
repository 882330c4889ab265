// Package sandbox runs untrusted Python programs in isolated, resource-limited
// child processes and caches their results.
//
// Every program runs in a fresh temporary working directory (removed
// afterwards) with an empty environment, standard input from /dev/null and
// the interpreter `/usr/bin/python3 -I` by default (never a shim found on
// $PATH). Isolation, from the outside in:
//
//   - Process group: the child gets its own process group (Setpgid). When the
//     wall timeout fires, or the context is cancelled, or the program ends,
//     the whole group is sent SIGKILL until none of it is left, and the child
//     is waited for, so nothing outlives a run.
//   - Namespaces: a fresh network namespace (no interface but a downed
//     loopback, so no connection can be made) and a fresh PID namespace, in
//     which the program is PID 1: when it dies the kernel kills every process
//     it left behind. As root the clone flags are CLONE_NEWNET|CLONE_NEWPID;
//     otherwise CLONE_NEWUSER is added with the caller's uid mapped to
//     itself. Where the kernel refuses (no user namespaces, seccomp), the
//     sandbox falls back to running without namespaces and logs one warning
//     (log/slog) for the life of the process; [Sandbox.Isolation] says which.
//   - Unprivileged user: when the caller is root the program runs as
//     uid/gid 65534 ("nobody", [Config.UID]), so that it cannot write outside
//     its working directory and world-writable places, and so that the
//     kernel enforces RLIMIT_NPROC (which it does not for root).
//   - Resource limits (setrlimit in the child): CPU time, address space, file
//     size, open files, processes, and core dumps 0. The limits are set by
//     re-executing through util-linux's prlimit(1) (`prlimit --cpu=… --
//     python3 -I main.py`), which sets them in its own process and execs the
//     interpreter; this costs one extra exec (~1 ms) and works for any
//     interpreter. Where prlimit is not installed, a four-line bootstrap
//     given to the interpreter with -c sets the same limits with Python's
//     resource module and then executes main.py in a fresh __main__
//     namespace ([Config.Limiter] selects either).
//
// A [Result] carries the exit status, bounded stdout and stderr, why the
// program was stopped (wall timeout, CPU limit, memory limit, …) and its wall
// and CPU time. Runs execute in parallel up to [Config.Parallel]. Results are
// cached by (task id, hash of the code, hash of the tests) in a bounded LRU
// that is safe for concurrent use; concurrent requests for the same key share
// one execution. Cancelled runs are not cached, nor wall timeouts of programs
// that spent most of the timeout waiting rather than computing.
package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limiter names how resource limits are applied to the child.
type Limiter string

// The limiters. LimiterAuto picks LimiterPrlimit when prlimit is installed
// and LimiterPython otherwise.
const (
	LimiterAuto    Limiter = ""
	LimiterPrlimit Limiter = "prlimit"
	LimiterPython  Limiter = "python"
)

// Config configures a [Sandbox]. The zero value of a field selects its
// default.
type Config struct {
	// Interpreter is the command that runs a program file, which is appended
	// as the last argument. Default: /usr/bin/python3 -I.
	Interpreter []string
	// WallTimeout bounds a run's wall-clock time. Default 3 s.
	WallTimeout time.Duration
	// CPUTime bounds a run's CPU time (RLIMIT_CPU, whole seconds, rounded
	// up; the hard limit is one second higher). Default: WallTimeout.
	CPUTime time.Duration
	// MemoryBytes bounds the address space (RLIMIT_AS). Default 512 MiB.
	MemoryBytes uint64
	// FileSizeBytes bounds the size of any file written (RLIMIT_FSIZE).
	// Default 4 MiB.
	FileSizeBytes uint64
	// OpenFiles bounds open file descriptors (RLIMIT_NOFILE). Default 64.
	OpenFiles uint64
	// Processes bounds the processes of the program's user (RLIMIT_NPROC).
	// Default 16. The kernel does not enforce it for root, hence UID.
	Processes uint64
	// OutputBytes bounds the stdout and the stderr kept, each: their
	// beginning and their last quarter. Default 16 KiB.
	OutputBytes int
	// Parallel bounds how many programs run at once. Default runtime.NumCPU().
	Parallel int
	// CacheEntries bounds the result cache's entries (default 65536);
	// negative disables the cache.
	CacheEntries int
	// CacheBytes bounds the output bytes the cache holds. Default 64 MiB.
	CacheBytes int64
	// UID and GID are the user the program runs as when the caller is root.
	// Default 65534 ("nobody"); -1 keeps root (RLIMIT_NPROC is then not
	// enforced). Ignored when the caller is not root.
	UID, GID int
	// NoNamespaces disables the network and PID namespaces.
	NoNamespaces bool
	// Limiter selects how rlimits are set; see the package comment.
	Limiter Limiter
	// Prlimit is the prlimit binary. Default: /usr/bin/prlimit, /bin/prlimit
	// or prlimit on $PATH, whichever exists first.
	Prlimit string
	// TempDir is where working directories are made. Default os.TempDir().
	TempDir string
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if len(c.Interpreter) == 0 {
		c.Interpreter = []string{"/usr/bin/python3", "-I"}
	}
	if c.WallTimeout == 0 {
		c.WallTimeout = 3 * time.Second
	}
	if c.CPUTime == 0 {
		c.CPUTime = c.WallTimeout
	}
	if c.MemoryBytes == 0 {
		c.MemoryBytes = 512 << 20
	}
	if c.FileSizeBytes == 0 {
		c.FileSizeBytes = 4 << 20
	}
	if c.OpenFiles == 0 {
		c.OpenFiles = 64
	}
	if c.Processes == 0 {
		c.Processes = 16
	}
	if c.OutputBytes == 0 {
		c.OutputBytes = 16 << 10
	}
	if c.Parallel == 0 {
		c.Parallel = runtime.NumCPU()
	}
	if c.CacheEntries == 0 {
		c.CacheEntries = 1 << 16
	}
	if c.CacheBytes == 0 {
		c.CacheBytes = 64 << 20
	}
	if c.UID == 0 {
		c.UID = 65534
	}
	if c.GID == 0 {
		c.GID = 65534
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	return c
}

// Program is one program to run: Code followed by Test, written to main.py.
// The split only matters for the cache key.
type Program struct {
	// TaskID names the task the code is for; part of the cache key.
	TaskID string
	// Code is the code under test.
	Code string
	// Test is the harness appended after Code (it may be empty).
	Test string
	// NoCache runs the program even if a result is cached, and does not
	// cache its result.
	NoCache bool
}

// Source returns the program text: Code, a newline, Test.
func (p Program) Source() string {
	if p.Test == "" {
		return p.Code
	}
	return p.Code + "\n\n" + p.Test
}

// Key returns the program's cache key.
func (p Program) Key() Key {
	return Key{TaskID: p.TaskID, Code: sha256.Sum256([]byte(p.Code)), Test: sha256.Sum256([]byte(p.Test))}
}

// Key identifies a program in the cache: the same code against the same
// tests of the same task gives the same result.
type Key struct {
	// TaskID is Program.TaskID.
	TaskID string
	// Code and Test are the SHA-256 of Program.Code and Program.Test.
	Code, Test [32]byte
}

// Stop says why a program did not end on its own.
type Stop string

// The reasons a run stops. Limits the interpreter reports as exceptions
// (memory, file size, open files, processes) are recognised from its error
// output; the others from the signal that ended the process.
const (
	StopNone      Stop = ""             // the program ended by itself
	StopTimeout   Stop = "timeout"      // the wall timeout fired
	StopCancelled Stop = "cancelled"    // the context was cancelled
	StopCPU       Stop = "cpu_limit"    // RLIMIT_CPU (SIGXCPU or SIGKILL)
	StopMemory    Stop = "memory_limit" // RLIMIT_AS (MemoryError)
	StopFileSize  Stop = "file_size_limit"
	StopOpenFiles Stop = "open_files_limit"
	StopProcesses Stop = "process_limit"
	StopSignal    Stop = "signal" // killed by some other signal
)

// Result is the outcome of one run.
type Result struct {
	// ExitCode is the exit status, or -1 when a signal ended the program.
	ExitCode int
	// Signal names the signal that ended the program, if any.
	Signal string
	// Stdout and Stderr are the program's output, cut at Config.OutputBytes.
	Stdout, Stderr string
	// StdoutTruncated and StderrTruncated report a cut.
	StdoutTruncated, StderrTruncated bool
	// Stop says why the program was stopped (StopNone: it ended by itself).
	Stop Stop
	// Wall is the wall-clock time of the run; CPU its user+system time.
	Wall, CPU time.Duration
	// Cached reports that the result came from the cache (Wall, CPU and
	// PID are then those of the original run).
	Cached bool
	// PID is the process id of the run, which is also its process group id.
	PID int
}

// OK reports whether the program exited 0 by itself.
func (r Result) OK() bool { return r.ExitCode == 0 && r.Stop == StopNone }

// Describe returns a one-line account such as "exit 1", "timeout" or
// "memory_limit". It holds nothing that varies between runs of the same
// program (no times), so it can go into deterministic output.
func (r Result) Describe() string {
	switch r.Stop {
	case StopNone:
		return "exit " + strconv.Itoa(r.ExitCode)
	case StopSignal:
		return "killed by " + r.Signal
	default:
		return string(r.Stop)
	}
}

// Isolation reports which isolation a sandbox actually applies.
type Isolation struct {
	// Namespaces reports fresh network and PID namespaces.
	Namespaces bool
	// UserNamespace reports that a user namespace was needed for them.
	UserNamespace bool
	// UID is the uid programs run as.
	UID int
	// Limiter is how rlimits are set ("prlimit" or "python").
	Limiter Limiter
	// Fallback explains what was given up, if anything.
	Fallback string
}

// Stats counts the sandbox's work.
type Stats struct {
	// Runs is the number of programs executed.
	Runs int64
	// Hits and Misses count cache lookups; Shared counts requests that
	// waited for an identical run already in flight.
	Hits, Misses, Shared int64
	// Evictions counts entries the LRU dropped.
	Evictions int64
	// Entries and Bytes are the cache's current size.
	Entries int
	Bytes   int64
	// RunWall is the total wall time spent running programs.
	RunWall time.Duration
}

// HitRate returns Hits / (Hits + Misses), or 0 before any lookup.
func (s Stats) HitRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

// Sandbox runs programs. It is safe for concurrent use.
type Sandbox struct {
	cfg      Config
	sem      chan struct{}
	cache    *lru // nil when disabled
	limiter  Limiter
	prlimit  string
	root     bool
	mu       sync.Mutex
	nsState  int // 0 untried, 1 works, -1 refused
	fallback string
	inflight map[Key]*call
	stats    Stats
	// refuseNS makes namespace starts fail, to test the fallback.
	refuseNS bool
}

type call struct {
	done chan struct{}
	res  Result
	err  error
}

// warnOnce makes the namespace fallback warning appear once per process.
var warnOnce sync.Once

// New returns a sandbox. It checks that the interpreter exists and is
// executable, and finds prlimit when the limiter needs it.
func New(cfg Config) (*Sandbox, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.WallTimeout < 0 || cfg.CPUTime < 0:
		return nil, fmt.Errorf("sandbox: negative timeout (wall %v, cpu %v)", cfg.WallTimeout, cfg.CPUTime)
	case cfg.OutputBytes < 0:
		return nil, fmt.Errorf("sandbox: negative output bound %d", cfg.OutputBytes)
	case cfg.Parallel < 0:
		return nil, fmt.Errorf("sandbox: negative parallelism %d", cfg.Parallel)
	}
	interp := cfg.Interpreter[0]
	if !filepath.IsAbs(interp) {
		return nil, fmt.Errorf("sandbox: interpreter %q: want an absolute path (a $PATH lookup could find a shim)", interp)
	}
	if st, err := os.Stat(interp); err != nil {
		return nil, fmt.Errorf("sandbox: interpreter: %w", err)
	} else if st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("sandbox: interpreter %s is not an executable file", interp)
	}
	s := &Sandbox{
		cfg:      cfg,
		sem:      make(chan struct{}, cfg.Parallel),
		root:     os.Geteuid() == 0,
		inflight: map[Key]*call{},
	}
	if cfg.CacheEntries > 0 {
		s.cache = newLRU(cfg.CacheEntries, cfg.CacheBytes)
	}
	switch cfg.Limiter {
	case LimiterAuto, LimiterPrlimit:
		p, err := findPrlimit(cfg.Prlimit)
		switch {
		case err == nil:
			s.limiter, s.prlimit = LimiterPrlimit, p
		case cfg.Limiter == LimiterPrlimit:
			return nil, fmt.Errorf("sandbox: %w", err)
		default:
			s.limiter = LimiterPython
		}
	case LimiterPython:
		s.limiter = LimiterPython
	default:
		return nil, fmt.Errorf("sandbox: unknown limiter %q (want %q or %q)", cfg.Limiter, LimiterPrlimit, LimiterPython)
	}
	if cfg.NoNamespaces {
		s.nsState = -1
		s.fallback = "namespaces disabled by configuration"
	}
	return s, nil
}

func findPrlimit(p string) (string, error) {
	if p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("prlimit: %w", err)
		}
		return p, nil
	}
	for _, c := range []string{"/usr/bin/prlimit", "/bin/prlimit"} {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	if p, err := exec.LookPath("prlimit"); err == nil {
		return p, nil
	}
	return "", errors.New("prlimit (util-linux) not found")
}

// Config returns the configuration with defaults filled in.
func (s *Sandbox) Config() Config { return s.cfg }

// Isolation reports the isolation in force. Whether namespaces work is
// known after the first run; before it Namespaces reports the attempt.
func (s *Sandbox) Isolation() Isolation {
	s.mu.Lock()
	defer s.mu.Unlock()
	iso := Isolation{Namespaces: s.nsState >= 0, UserNamespace: s.nsState >= 0 && !s.root, UID: os.Geteuid(), Limiter: s.limiter, Fallback: s.fallback}
	if s.root && s.cfg.UID >= 0 {
		iso.UID = s.cfg.UID
	}
	return iso
}

// Stats returns the counters.
func (s *Sandbox) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	if s.cache != nil {
		st.Entries, st.Bytes = s.cache.len(), s.cache.bytes
	}
	return st
}

// Run runs one program, or returns its cached result. The error is non-nil
// only when the program could not be run at all (or ctx ended before it
// started); a program that fails, loops or exceeds a limit is a Result.
func (s *Sandbox) Run(ctx context.Context, p Program) (Result, error) {
	if s.cache == nil || p.NoCache {
		return s.execute(ctx, p)
	}
	k := p.Key()
	s.mu.Lock()
	if r, ok := s.cache.get(k); ok {
		s.stats.Hits++
		s.mu.Unlock()
		r.Cached = true
		return r, nil
	}
	if c, ok := s.inflight[k]; ok {
		s.stats.Hits++
		s.stats.Shared++
		s.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
		if cutShort(c.res, c.err) && ctx.Err() == nil {
			// The run was stopped by its own caller's context, not by
			// ours: it says nothing about the program, so run it again.
			return s.Run(ctx, p)
		}
		if c.err != nil {
			return Result{}, c.err
		}
		r := c.res
		r.Cached = true
		return r, nil
	}
	s.stats.Misses++
	c := &call{done: make(chan struct{})}
	s.inflight[k] = c
	s.mu.Unlock()

	c.res, c.err = s.execute(ctx, p)
	s.mu.Lock()
	delete(s.inflight, k)
	// A cancelled run says nothing about the program: do not cache it.
	if c.err == nil && c.res.Stop != StopCancelled && !starved(c.res, s.cfg.WallTimeout) {
		s.stats.Evictions += int64(s.cache.put(k, c.res))
	}
	s.mu.Unlock()
	close(c.done)
	return c.res, c.err
}

// starved reports a wall timeout of a program that used less than a
// quarter of the timeout in CPU time: it was mostly waiting (a heavily
// loaded machine, a sleep), not computing, so another run may end
// differently and the result is not cached. A program that loops uses
// most of the timeout and is cached.
func starved(r Result, wallTimeout time.Duration) bool {
	return r.Stop == StopTimeout && r.CPU < wallTimeout/4
}

// cutShort reports whether a run ended because its caller's context ended
// (before or while the program ran).
func cutShort(r Result, err error) bool {
	if err != nil {
		return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	}
	return r.Stop == StopCancelled
}

// RunAll runs the programs concurrently (each run still takes a slot of
// Config.Parallel) and returns their results in order. Every program is
// run even when one fails to start; the error is then the first one in
// program order.
func (s *Sandbox) RunAll(ctx context.Context, ps []Program) ([]Result, error) {
	out := make([]Result, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = s.Run(ctx, ps[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return out, fmt.Errorf("program %d (%s): %w", i, ps[i].TaskID, err)
		}
	}
	return out, nil
}

// execute runs p for real, holding a parallelism slot.
func (s *Sandbox) execute(ctx context.Context, p Program) (Result, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	defer func() { <-s.sem }()

	dir, err := os.MkdirTemp(s.cfg.TempDir, "troupe-sandbox-")
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: work dir: %w", err)
	}
	defer os.RemoveAll(dir)
	main := filepath.Join(dir, "main.py")
	if err := os.WriteFile(main, []byte(p.Source()), 0o644); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	runAs := s.root && s.cfg.UID >= 0
	if runAs {
		if err := os.Chown(dir, s.cfg.UID, s.cfg.GID); err != nil {
			return Result{}, fmt.Errorf("sandbox: work dir: %w", err)
		}
	}

	s.mu.Lock()
	useNS := s.nsState >= 0
	s.mu.Unlock()
	res, err := s.start(ctx, dir, useNS, runAs)
	if err != nil && useNS {
		// Retry without namespaces: if that works, the kernel refused them.
		if res2, err2 := s.start(ctx, dir, false, runAs); err2 == nil {
			s.mu.Lock()
			if s.nsState == 0 {
				s.nsState = -1
				s.fallback = "network and PID namespaces refused (" + err.Error() + "); running without them"
				warnOnce.Do(func() {
					slog.Warn("sandbox: cannot create network/PID namespaces; programs run without network isolation", "err", err)
				})
			}
			s.mu.Unlock()
			res, err = res2, nil
		}
	} else if err == nil && useNS {
		s.mu.Lock()
		s.nsState = 1
		s.mu.Unlock()
	}
	if err != nil {
		who := ""
		if runAs {
			who = fmt.Sprintf(" as uid %d (the work dir's parent %s must be searchable by it)", s.cfg.UID, s.cfg.TempDir)
		}
		return Result{}, fmt.Errorf("sandbox: start %s%s: %w", s.cfg.Interpreter[0], who, err)
	}
	s.mu.Lock()
	s.stats.Runs++
	s.stats.RunWall += res.Wall
	s.mu.Unlock()
	return res, nil
}

// command builds the argv for one run.
func (s *Sandbox) command() []string {
	c := s.cfg
	cpu := int64((c.CPUTime + time.Second - 1) / time.Second)
	if cpu < 1 {
		cpu = 1
	}
	interp := c.Interpreter
	switch s.limiter {
	case LimiterPrlimit:
		argv := []string{s.prlimit,
			fmt.Sprintf("--cpu=%d:%d", cpu, cpu+1),
			fmt.Sprintf("--as=%d", c.MemoryBytes),
			fmt.Sprintf("--fsize=%d", c.FileSizeBytes),
			fmt.Sprintf("--nofile=%d", c.OpenFiles),
			fmt.Sprintf("--nproc=%d", c.Processes),
			"--core=0", "--"}
		argv = append(argv, interp...)
		return append(argv, "main.py")
	default:
		boot := fmt.Sprintf(`import resource as r
for k, v in ((r.RLIMIT_CPU, (%d, %d)), (r.RLIMIT_AS, (%d, %d)), (r.RLIMIT_FSIZE, (%d, %d)), (r.RLIMIT_NOFILE, (%d, %d)), (r.RLIMIT_NPROC, (%d, %d)), (r.RLIMIT_CORE, (0, 0))): r.setrlimit(k, v)
import sys; sys.argv = ["main.py"]; del r, k, v
exec(compile(open("main.py", encoding="utf-8").read(), "main.py", "exec"), {"__name__": "__main__", "__file__": "main.py", "__builtins__": __builtins__})`,
			cpu, cpu+1, c.MemoryBytes, c.MemoryBytes, c.FileSizeBytes, c.FileSizeBytes,
			c.OpenFiles, c.OpenFiles, c.Processes, c.Processes)
		argv := append([]string{}, interp...)
		return append(argv, "-c", boot)
	}
}

// start runs the program in dir once; it returns an error only when the
// process could not be started.
func (s *Sandbox) start(ctx context.Context, dir string, useNS, runAs bool) (Result, error) {
	argv := s.command()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{}
	stdout := &boundedBuffer{max: s.cfg.OutputBytes}
	stderr := &boundedBuffer{max: s.cfg.OutputBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// If a process escaped the group and holds the pipes, do not wait for it.
	cmd.WaitDelay = 500 * time.Millisecond
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if runAs {
		attr.Credential = &syscall.Credential{Uid: uint32(s.cfg.UID), Gid: uint32(s.cfg.GID), Groups: []uint32{}}
	}
	if useNS {
		attr.Cloneflags = syscall.CLONE_NEWNET | syscall.CLONE_NEWPID
		if !s.root {
			uid, gid := os.Getuid(), os.Getgid()
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
	}
	cmd.SysProcAttr = attr

	if useNS && s.refuseNS {
		return Result{}, &os.SyscallError{Syscall: "clone", Err: syscall.EPERM}
	}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	var stop Stop
	var stopMu sync.Mutex
	go func() {
		timer := time.NewTimer(s.cfg.WallTimeout)
		defer timer.Stop()
		select {
		case <-done:
			return
		case <-timer.C:
			stopMu.Lock()
			stop = StopTimeout
			stopMu.Unlock()
		case <-ctx.Done():
			stopMu.Lock()
			stop = StopCancelled
			stopMu.Unlock()
		}
		killGroup(pgid)
	}()
	waitErr := cmd.Wait()
	close(done)
	wall := time.Since(begin)
	// Kill whatever the program left running in its group.
	killGroup(pgid)

	res := Result{
		Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: stdout.cut, StderrTruncated: stderr.cut,
		Wall: wall, PID: pgid,
	}
	st := cmd.ProcessState
	if st == nil {
		return Result{}, fmt.Errorf("wait: %w", waitErr)
	}
	res.CPU = st.UserTime() + st.SystemTime()
	res.ExitCode = st.ExitCode()
	ws, _ := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		res.Signal = ws.Signal().String()
	}
	stopMu.Lock()
	res.Stop = stop
	stopMu.Unlock()
	if res.Stop == StopNone {
		res.Stop = classify(ws, []byte(stderr.String()))
	}
	return res, nil
}

// classify infers why a program that was not stopped by us ended.
func classify(ws syscall.WaitStatus, stderr []byte) Stop {
	if ws.Signaled() {
		switch ws.Signal() {
		case syscall.SIGXCPU, syscall.SIGKILL:
			// SIGKILL not sent by us comes from the hard CPU limit.
			return StopCPU
		case syscall.SIGXFSZ:
			return StopFileSize
		}
		return StopSignal
	}
	if ws.ExitStatus() == 0 {
		return StopNone
	}
	// The interpreter turns these limits into exceptions; the last line of
	// a traceback names the one that ended the program.
	last := lastLine(stderr)
	switch {
	case bytes.HasPrefix(last, []byte("MemoryError")):
		return StopMemory
	case bytes.Contains(last, []byte("[Errno 27]")): // EFBIG: File too large
		return StopFileSize
	case bytes.Contains(last, []byte("[Errno 24]")): // EMFILE: Too many open files
		return StopOpenFiles
	case bytes.HasPrefix(last, []byte("BlockingIOError: [Errno 11]")): // EAGAIN from fork
		return StopProcesses
	}
	return StopNone
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n ")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return b
}

// killGroup sends SIGKILL to process group pgid until the kernel reports it
// gone (a process may fork while the group is being killed), for at most a
// second.
func killGroup(pgid int) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
			return // ESRCH: no process left in the group
		}
		time.Sleep(time.Millisecond)
	}
}

// GroupAlive reports whether any process of group pgid still exists
// (including zombies not yet reaped). Exported for tests of callers.
func GroupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

// boundedBuffer keeps at most max bytes of a stream: its beginning and its
// last quarter, so that what a program printed last (a traceback's final
// line, a completion marker) survives a flood of output.
type boundedBuffer struct {
	head, tail []byte
	max        int
	dropped    int64 // bytes between head and tail that were not kept
	cut        bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	tailMax := b.max / 4
	if room := b.max - tailMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	b.tail = append(b.tail, p...)
	if over := len(b.tail) - tailMax; over > 0 {
		b.cut = true
		b.dropped += int64(over)
		// Trim in place; the slice's array stays bounded by max.
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return n, nil
}

func (b *boundedBuffer) String() string {
	if !b.cut {
		return string(b.head) + string(b.tail)
	}
	// Do not split a UTF-8 sequence at either cut.
	return strings.ToValidUTF8(string(b.head), "") +
		fmt.Sprintf("\n[… %d bytes cut …]\n", b.dropped) +
		strings.ToValidUTF8(string(b.tail), "")
}
