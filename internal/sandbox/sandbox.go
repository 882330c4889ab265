// Package sandbox runs untrusted Python programs in isolated, resource-limited
// child processes and caches their results.
//
// Every program gets a fresh working directory holding main.py (its Code
// then its Test), an empty environment, standard input from /dev/null and
// the interpreter `/usr/bin/python3 -I` by default (never a shim found on
// $PATH). Isolation, with [IsolationFull] (the default):
//
//   - Namespaces: each run is a re-execution of the running binary
//     (/proc/self/exe, as the run's init) in fresh user, mount, PID,
//     network, IPC and UTS namespaces. Its user namespace maps uid 0 to one
//     host uid: the caller's when it is not root; as root, a uid of the run
//     alone ([Config.IsolatedUIDBase] + the run's slot). As root where user
//     namespaces are refused, the init runs as root in the other namespaces
//     and switches to that uid after the setup.
//   - File system: the init mounts a root of the run's own (a tmpfs) over
//     the host work dir in its mount namespace, binds read-only into it
//     /usr, /bin, /sbin, /lib* (symbolic links copied as links), a few
//     files of /etc (the dynamic loader's cache, the time zone, Python's
//     site configuration; passwd, group, hosts and hostname are generated),
//     /dev/null, zero, full, random and urandom, a fresh /proc of the run's
//     PID namespace where the kernel allows it, and [Config.ReadOnlyPaths];
//     then pivot_root into it, detaches the old root and makes the new root
//     read-only. The home directory, the repository, the datasets, other
//     runs' files and the rest of the host are not there at all.
//   - Writable area: one private tmpfs of [Config.DiskBytes] (default 64
//     MiB) holds /tmp, /dev/shm and the work dir (/tmp/troupe-sandbox-…):
//     the run's total disk quota (beyond it writes fail with ENOSPC and
//     the run's Stop is [StopDisk]); it vanishes with the run.
//   - Privileges: before it executes the interpreter the init empties the
//     capability bounding and ambient sets, sets the securebits that keep
//     uid 0 from regaining capabilities at exec (or has switched uid) and
//     no_new_privs.
//   - Processes: RLIMIT_NPROC ([Config.Processes]) is per run: the kernel
//     counts processes per (user namespace, uid) since Linux 5.14, and as
//     root each run in flight has a uid of its own anyway; so a fork bomb
//     in one run does not starve the runs beside it. (cgroups are not
//     used: pids.max would need a writable, delegated cgroup tree.)
//   - Network: the network namespace has only a downed loopback.
//
// Whether this works is checked once per process, in [New], which fails
// (wrapping [ErrNoIsolation], saying why and what would be unprotected)
// where it cannot be set up: not Linux, not root and no unprivileged user
// namespaces. [IsolationNone] opts out explicitly, for trusted code or
// such machines; [New] then logs once what is unprotected ([Unprotected]).
//
// With either mode:
//
//   - Process group: the child gets its own process group (Setpgid). When the
//     wall timeout fires, or the context is cancelled, or the program ends,
//     the whole group is sent SIGKILL until none of it is left, and the child
//     is waited for, so nothing outlives a run. In a PID namespace the
//     program is PID 1: when it dies the kernel kills every process it left.
//   - Resource limits: CPU time, address space, file size, open files,
//     processes, and core dumps 0. With IsolationFull the init sets them
//     just before it executes the interpreter ([LimiterInit]).
//
// With IsolationNone a run is a host process in a temporary directory
// under [Config.TempDir]: as uid/gid 65534 ([Config.UID]) when the caller
// is root, in fresh network and PID namespaces where the kernel allows them
// (CLONE_NEWUSER added when not root; without them it logs one warning and
// [Sandbox.Isolation] says so), with limits set by re-executing through
// util-linux's prlimit(1) (one extra exec, ~1 ms) or, where prlimit is not
// installed, a bootstrap that sets them with Python's resource module
// ([Config.Limiter]).
//
// A [Result] carries the exit status, bounded stdout and stderr, why the
// program was stopped (wall timeout, CPU limit, memory limit, …) and its wall
// and CPU time. Runs execute in parallel up to [Config.Parallel]. Results are
// cached by (task id, hash of the code, hash of the tests) in a bounded LRU
// that is safe for concurrent use; concurrent requests for the same key share
// one execution. Cancelled runs are not cached, nor wall timeouts of programs
// that spent most of the timeout waiting rather than computing.
//
// A binary that runs isolated programs must import this package (its init
// turns a re-executed process into a run's init before main starts).
package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	// LimiterInit is reported by [Sandbox.Isolation] with IsolationFull:
	// the isolated run's init sets the limits itself before it executes
	// the interpreter (no extra exec). It is not a Config choice.
	LimiterInit Limiter = "init"
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
	// UID and GID are the user the program runs as when the caller is root
	// and Isolation is IsolationNone. Default 65534 ("nobody"); -1 keeps
	// root (RLIMIT_NPROC is then not enforced). Ignored when the caller is
	// not root.
	UID, GID int
	// NoNamespaces disables the network and PID namespaces of
	// IsolationNone.
	//
	// Deprecated: set Isolation to IsolationNone. NoNamespaces with the
	// zero Isolation selects IsolationNone; with IsolationFull it is an
	// error.
	NoNamespaces bool
	// Isolation selects how runs are isolated from the host: IsolationFull
	// (the default) or IsolationNone; see [IsolationMode]. With
	// IsolationFull, New fails when the isolation cannot be set up, naming
	// what would be unprotected.
	Isolation IsolationMode
	// DiskBytes bounds all a run may write, together: its work dir, /tmp
	// and /dev/shm are one private tmpfs of this size (ENOSPC beyond it;
	// Stop is StopDisk). Default 64 MiB. IsolationFull only; FileSizeBytes
	// still bounds each file.
	DiskBytes uint64
	// ReadOnlyPaths are host paths (absolute) that runs see read-only at
	// the same path, in addition to the system directories (/usr, /bin,
	// /lib*, a few files of /etc): e.g. the virtualenv Interpreter lives
	// in. Everything else of the host is invisible. IsolationFull only.
	ReadOnlyPaths []string
	// IsolatedUIDBase is, when the caller is root, the first of the host
	// uids isolated runs are mapped to: each run in flight in this process
	// gets its own (base, base+1, …), so that RLIMIT_NPROC, which the
	// kernel counts per user, is per run, and no run shares a uid with a
	// host user. Default 1<<30. IsolationFull only; ignored when the
	// caller is not root (runs then map to the caller's uid, and each
	// run's own user namespace keeps its process count apart).
	IsolatedUIDBase int
	// Limiter selects how rlimits are set with IsolationNone; see the
	// package comment. With IsolationFull the run's init sets them.
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
	if c.Isolation == "" {
		c.Isolation = IsolationFull
		if c.NoNamespaces {
			c.Isolation = IsolationNone
		}
	}
	if c.DiskBytes == 0 {
		c.DiskBytes = 64 << 20
	}
	if c.IsolatedUIDBase == 0 {
		c.IsolatedUIDBase = 1 << 30
	}
	return c
}

// IsolationMode names how runs are isolated from the host.
type IsolationMode string

// The isolation modes.
const (
	// IsolationFull runs each program in fresh user, mount, PID, network,
	// IPC and UTS namespaces, under a root of its own: the system
	// directories read-only (/usr, /bin, /lib*, a few files of /etc), a
	// private size-limited tmpfs for its work dir, /tmp and /dev/shm
	// (Config.DiskBytes), nothing else of the host (no home directory,
	// repository, datasets or other runs' files), no network, no
	// capability, and a process count of its own (Config.Processes). It
	// needs Linux and either root or unprivileged user namespaces.
	IsolationFull IsolationMode = "full"
	// IsolationNone gives up that isolation: programs run as a host
	// process (as Config.UID when the caller is root), with rlimits, a
	// process group and, where the kernel allows, network and PID
	// namespaces only. See [Unprotected] for what that exposes. Choose it
	// only for trusted code or where isolation cannot be had.
	IsolationNone IsolationMode = "none"
)

// Unprotected says what a program run with IsolationNone can do: the
// text of the warning New logs and of the error when IsolationFull cannot
// be set up.
const Unprotected = "without isolation a program can read every file the user running troupe can read " +
	"(the home directory and its keys, the repository, the datasets' hidden tests), write wherever that user can " +
	"(/tmp, /dev/shm, the home directory), fill the disk (only each file's size is limited) and use up the " +
	"process limit it shares with every other run of that user"

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
	StopDisk      Stop = "disk_limit" // Config.DiskBytes (ENOSPC)
	StopSignal    Stop = "signal"     // killed by some other signal
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
	// Mode is Config.Isolation.
	Mode IsolationMode
	// Filesystem reports a private root per run (IsolationFull): host
	// files hidden but for read-only system directories, a private
	// size-limited /tmp, /dev/shm and work dir.
	Filesystem bool
	// Namespaces reports fresh network and PID namespaces.
	Namespaces bool
	// UserNamespace reports that runs have a user namespace each.
	UserNamespace bool
	// UID is the host uid programs run as; with IsolationFull as root, the
	// first of the per-run uids (Config.IsolatedUIDBase).
	UID int
	// Limiter is how rlimits are set ("prlimit", "python" or "init").
	Limiter Limiter
	// Fallback explains what was given up, if anything: with
	// IsolationNone it says what is unprotected.
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
	// isolated is Config.Isolation == IsolationFull; userNS says whether
	// its runs get a user namespace (else the caller is root and runs
	// switch to their uid after the setup).
	isolated, userNS bool
}

type call struct {
	done chan struct{}
	res  Result
	err  error
}

// warnOnce makes the namespace fallback warning appear once per process.
var warnOnce sync.Once

// New returns a sandbox. It checks that the interpreter exists and is
// executable, and finds prlimit when the limiter needs it. With
// IsolationFull it checks, once per process, that the isolation can be set
// up, and fails if it cannot; with IsolationNone it logs (once) what is
// unprotected.
func New(cfg Config) (*Sandbox, error) {
	return newSandbox(cfg, testHooks{})
}

// testHooks make New behave as on another machine.
type testHooks struct {
	refuseNS bool // every namespace is refused
	noUserNS bool // user namespaces are refused (root path only)
}

func newSandbox(cfg Config, hooks testHooks) (*Sandbox, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.Isolation != IsolationFull && cfg.Isolation != IsolationNone:
		return nil, fmt.Errorf("sandbox: unknown isolation %q (want %q or %q)", cfg.Isolation, IsolationFull, IsolationNone)
	case cfg.Isolation == IsolationFull && cfg.NoNamespaces:
		return nil, fmt.Errorf("sandbox: NoNamespaces contradicts isolation %q (namespaces are how it isolates)", IsolationFull)
	case cfg.DiskBytes < 1<<20:
		return nil, fmt.Errorf("sandbox: disk quota %d bytes: want at least 1 MiB", cfg.DiskBytes)
	case cfg.IsolatedUIDBase < 1 || cfg.IsolatedUIDBase > 1<<31:
		return nil, fmt.Errorf("sandbox: isolated uid base %d: want in [1, 2^31]", cfg.IsolatedUIDBase)
	}
	for _, p := range cfg.ReadOnlyPaths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: read-only path %q: want an absolute path", p)
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("sandbox: read-only path: %w", err)
		}
	}
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
	s.refuseNS = hooks.refuseNS
	if cfg.Isolation == IsolationNone {
		if s.fallback != "" {
			s.fallback += "; "
		}
		s.fallback += "isolation \"none\": " + Unprotected
		noneWarnOnce.Do(func() {
			slog.Warn("sandbox: isolation = \"none\": untrusted programs run unisolated; " + Unprotected)
		})
		return s, nil
	}
	if err := checkVisible(cfg); err != nil {
		return nil, err
	}
	userNS, err := probeIsolation(cfg, s.root, hooks)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w: cannot isolate the programs it runs (%v), so it refuses to run them: %s. "+
			"Run as root or where unprivileged user namespaces are enabled (sysctl user.max_user_namespaces > 0, "+
			"kernel.unprivileged_userns_clone = 1; on Ubuntu kernel.apparmor_restrict_unprivileged_userns = 0), or accept the risk with isolation = \"none\" in [env.sandbox] "+
			"(Config.Isolation = IsolationNone)", ErrNoIsolation, err, Unprotected)
	}
	s.isolated, s.userNS = true, userNS
	s.nsState = 1
	return s, nil
}

// ErrNoIsolation is wrapped by New's error when IsolationFull cannot be
// set up on this machine (test with errors.Is); the error says why and
// what would be unprotected.
var ErrNoIsolation = errors.New("isolation unavailable")

// noneWarnOnce makes the IsolationNone warning appear once per process.
var noneWarnOnce sync.Once

// checkVisible reports an interpreter that an isolated run would not see:
// one whose path, or the file it links to, lies outside the system
// directories and Config.ReadOnlyPaths.
func checkVisible(cfg Config) error {
	visible := append(slices.Clone(systemBinds), cfg.ReadOnlyPaths...)
	under := func(p string, resolve bool) bool {
		for _, v := range visible {
			if resolve {
				var err error
				if v, err = filepath.EvalSymlinks(v); err != nil {
					continue
				}
			}
			if rel, err := filepath.Rel(v, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return true
			}
		}
		return false
	}
	interp := filepath.Clean(cfg.Interpreter[0])
	real, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return fmt.Errorf("sandbox: interpreter: %w", err)
	}
	if !under(interp, false) || !under(real, true) {
		return fmt.Errorf("sandbox: interpreter %s (%s) is outside what isolated runs see (%s): add its installation directory to ReadOnlyPaths ([env.sandbox] read_only_dirs)",
			interp, real, strings.Join(visible, ", "))
	}
	return nil
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
	if s.isolated {
		iso := Isolation{Mode: IsolationFull, Filesystem: true, Namespaces: true, UserNamespace: s.userNS, UID: os.Geteuid(), Limiter: LimiterInit}
		if s.root {
			iso.UID = s.cfg.IsolatedUIDBase
		}
		return iso
	}
	iso := Isolation{Mode: IsolationNone, Namespaces: s.nsState >= 0, UserNamespace: s.nsState >= 0 && !s.root, UID: os.Geteuid(), Limiter: s.limiter, Fallback: s.fallback}
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
	if s.isolated {
		res, err := s.startIsolated(ctx, dir)
		if err != nil {
			return Result{}, fmt.Errorf("sandbox: isolated run: %w", err)
		}
		s.mu.Lock()
		s.stats.Runs++
		s.stats.RunWall += res.Wall
		s.mu.Unlock()
		return res, nil
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
	return s.wait(ctx, cmd, nil)
}

// wait starts cmd and waits for it under the wall timeout and ctx, then
// kills what is left of its process group. setupErr, if not nil, is the
// read end of the pipe an isolated run's init reports a setup failure on
// (its write end is cmd.ExtraFiles[0]): a report is an error, not a
// Result.
func (s *Sandbox) wait(ctx context.Context, cmd *exec.Cmd, setupErr *os.File) (Result, error) {
	stdout := &boundedBuffer{max: s.cfg.OutputBytes}
	stderr := &boundedBuffer{max: s.cfg.OutputBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// If a process escaped the group and holds the pipes, do not wait for it.
	cmd.WaitDelay = 500 * time.Millisecond
	if setupErr != nil {
		defer setupErr.Close()
	}
	begin := time.Now()
	err := cmd.Start()
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	if err != nil {
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
	if setupErr != nil {
		msg, _ := io.ReadAll(io.LimitReader(setupErr, 4096))
		if len(msg) > 0 {
			return Result{}, fmt.Errorf("setup: %s", msg)
		}
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
	case bytes.Contains(last, []byte("[Errno 28]")): // ENOSPC: the disk quota
		return StopDisk
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
