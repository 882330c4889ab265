//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// initArg is argv[1] of the re-executed binary that sets up an isolated
// run (see [isolatedInit]); argv[2] is the JSON of an [initSpec].
const initArg = "troupe-sandbox-init"

// setupErrFD is the descriptor on which the init reports a setup failure;
// it is close-on-exec, so the parent reads EOF once the interpreter runs.
const setupErrFD = 3

// init turns the process into the init of an isolated run when it was
// re-executed as one: the program never returns to main.
func init() {
	if len(os.Args) != 3 || os.Args[1] != initArg {
		return
	}
	runtime.LockOSThread()
	debug.SetGCPercent(-1) // no heap growth once RLIMIT_AS is set
	err := isolatedInit(os.Args[2])
	if err == nil { // a probe
		os.Exit(0)
	}
	f := os.NewFile(setupErrFD, "setup-errors")
	fmt.Fprint(f, err.Error())
	os.Exit(127)
}

// initSpec is what the parent tells the init of one isolated run.
type initSpec struct {
	// Dir is the host work dir: it holds main.py, and the run's root
	// is mounted over it in the run's mount namespace.
	Dir string
	// Work is the working directory inside the run (under its /tmp).
	Work string
	// DiskBytes is the size of the one writable tmpfs (/tmp, /dev/shm
	// and Work).
	DiskBytes uint64
	// Binds are the system paths made visible read-only at the same path
	// (missing ones skipped).
	Binds []string
	// ExtraBinds are Config.ReadOnlyPaths, bound after the private /tmp
	// and /dev/shm are mounted (so that they may lie under them).
	ExtraBinds []string
	// DropUID and DropGID, when not -1, are the host ids to switch to
	// (root without a user namespace); else the init stays uid 0 of its
	// user namespace and gives up every capability.
	DropUID, DropGID int
	// Rlimits are set just before the interpreter is executed.
	Rlimits []rlimit
	// Argv is the interpreter's command line.
	Argv []string
	// Probe sets everything up and exits 0 instead of executing Argv.
	Probe bool
}

type rlimit struct {
	Resource int
	Cur, Max uint64
}

// systemBinds are the host paths a Python interpreter and the Debian
// packages it imports need (symbolic links are copied as links); missing
// ones are skipped.
var systemBinds = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the entries of /etc made visible: the dynamic loader's
// configuration, the time zone, Python's site configuration and the MIME
// table. Everything else of /etc (users, hosts, credentials) is hidden;
// passwd, group, hostname and hosts are generated.
var etcFiles = []string{"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "mime.types",
	"python3", "python3.11", "python3.12", "python3.13", "alternatives"}

// devices are the /dev nodes bound into the run.
var devices = []string{"null", "zero", "full", "random", "urandom"}

func isolatedInit(arg string) error {
	var sp initSpec
	if err := json.Unmarshal([]byte(arg), &sp); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	syscall.CloseOnExec(setupErrFD)
	step := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	// Nothing mounted here propagates to the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return step("make mounts private", err)
	}
	var src []byte
	if !sp.Probe {
		var err error
		if src, err = os.ReadFile(filepath.Join(sp.Dir, "main.py")); err != nil {
			return step("read the program", err)
		}
	}
	root := sp.Dir
	if err := syscall.Mount("troupe-sandbox-root", root, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m,nr_inodes=4096,mode=0755"); err != nil {
		return step("mount the root tmpfs", err)
	}
	for _, p := range sp.Binds {
		if err := bindReadOnly(root, p, false); err != nil {
			return step("bind "+p, err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		return step("mkdir /etc", err)
	}
	for _, n := range etcFiles {
		if err := bindReadOnly(root, "/etc/"+n, true); err != nil {
			return step("bind /etc/"+n, err)
		}
	}
	for name, text := range map[string]string{
		"passwd":   "root:x:0:0:sandbox:/tmp:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
		"group":    "root:x:0:\nnogroup:x:65534:\n",
		"hostname": "sandbox\n",
		"hosts":    "127.0.0.1 localhost sandbox\n::1 localhost\n",
	} {
		if err := writeFile(filepath.Join(root, "etc", name), []byte(text), 0o644); err != nil {
			return step("write /etc/"+name, err)
		}
	}
	// /dev: a few nodes and the usual links.
	if err := os.MkdirAll(filepath.Join(root, "dev", "shm"), 0o755); err != nil {
		return step("mkdir /dev", err)
	}
	for _, d := range devices {
		target := filepath.Join(root, "dev", d)
		if err := writeFile(target, nil, 0o666); err != nil {
			return step("dev "+d, err)
		}
		if err := syscall.Mount("/dev/"+d, target, "", syscall.MS_BIND, ""); err != nil {
			return step("bind /dev/"+d, err)
		}
	}
	for name, to := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(to, filepath.Join(root, "dev", name)); err != nil {
			return step("link /dev/"+name, err)
		}
	}
	// The one writable file system, of DiskBytes: /tmp (holding the work
	// dir) and /dev/shm are two directories of it. The staging mount is
	// detached; the two bind mounts keep the file system and its size.
	rw := filepath.Join(root, ".rw")
	for _, d := range []string{rw, filepath.Join(root, "tmp")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return step("mkdir", err)
		}
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", sp.DiskBytes, max(1024, min(sp.DiskBytes/4096, 1<<16)))
	if err := syscall.Mount("troupe-sandbox-rw", rw, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return step("mount the writable tmpfs", err)
	}
	for _, d := range []struct{ staged, at string }{{"tmp", "tmp"}, {"shm", "dev/shm"}} {
		s := filepath.Join(rw, d.staged)
		if err := os.Mkdir(s, 0o777); err != nil {
			return step("mkdir "+d.staged, err)
		}
		if err := os.Chmod(s, 0o1777); err != nil {
			return step("chmod "+d.staged, err)
		}
		if err := syscall.Mount(s, filepath.Join(root, d.at), "", syscall.MS_BIND, ""); err != nil {
			return step("bind /"+d.at, err)
		}
	}
	if err := syscall.Unmount(rw, syscall.MNT_DETACH); err != nil {
		return step("detach the staging mount", err)
	}
	if err := os.Remove(rw); err != nil {
		return step("remove the staging dir", err)
	}
	for _, p := range sp.ExtraBinds {
		if err := bindReadOnly(root, p, false); err != nil {
			return step("bind "+p, err)
		}
	}
	work := filepath.Join(root, sp.Work)
	if err := os.Mkdir(work, 0o755); err != nil {
		return step("mkdir the work dir", err)
	}
	if !sp.Probe {
		if err := writeFile(filepath.Join(work, "main.py"), src, 0o644); err != nil {
			return step("write the program", err)
		}
	}
	if sp.DropUID >= 0 {
		for _, p := range []string{work, filepath.Join(work, "main.py")} {
			if err := os.Lchown(p, sp.DropUID, sp.DropGID); err != nil && !(sp.Probe && errors.Is(err, os.ErrNotExist)) {
				return step("chown the work dir", err)
			}
		}
	}
	// A fresh /proc of the run's PID namespace, where the kernel allows
	// it (a container may not): Python runs without one.
	if err := os.Mkdir(filepath.Join(root, "proc"), 0o555); err != nil {
		return step("mkdir /proc", err)
	}
	_ = syscall.Mount("proc", filepath.Join(root, "proc"), "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")

	// Enter the new root and drop the old one: from here on no host path
	// but the read-only binds is reachable, nor is any descriptor left
	// pointing at one (the working directory moves too).
	if err := syscall.Chdir(root); err != nil {
		return step("chdir to the new root", err)
	}
	if err := syscall.PivotRoot(".", "."); err != nil {
		return step("pivot_root", err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return step("detach the old root", err)
	}
	if err := syscall.Chdir("/"); err != nil {
		return step("chdir /", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
		return step("make the root read-only", err)
	}
	_ = syscall.Sethostname([]byte("sandbox"))
	if err := syscall.Chdir(sp.Work); err != nil {
		return step("chdir to the work dir", err)
	}
	if sp.Probe {
		return nil
	}
	if err := dropPrivileges(sp.DropUID, sp.DropGID); err != nil {
		return step("drop privileges", err)
	}
	return execWithLimits(sp.Argv, sp.Rlimits)
}

// bindReadOnly makes host path p visible read-only at root+p; a symbolic
// link is copied as a link. A missing p is skipped when optional.
func bindReadOnly(root, p string, optional bool) error {
	st, err := os.Lstat(p)
	if err != nil {
		if optional || errors.Is(err, os.ErrNotExist) && isSystemBind(p) {
			return nil
		}
		return err
	}
	target := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	switch {
	case st.Mode()&os.ModeSymlink != 0:
		to, err := os.Readlink(p)
		if err != nil {
			return err
		}
		return os.Symlink(to, target)
	case st.IsDir():
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
	default:
		if err := writeFile(target, nil, 0o644); err != nil {
			return err
		}
	}
	if err := syscall.Mount(p, target, "", syscall.MS_BIND, ""); err != nil {
		return err
	}
	// The remount must keep the flags the kernel locks in a user
	// namespace (nosuid, nodev, noexec, atime).
	var fs syscall.Statfs_t
	if err := syscall.Statfs(p, &fs); err != nil {
		return err
	}
	flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{0x2, syscall.MS_NOSUID}, {0x4, syscall.MS_NODEV}, {0x8, syscall.MS_NOEXEC},
		{0x400, syscall.MS_NOATIME}, {0x800, syscall.MS_NODIRATIME}, {0x1000, syscall.MS_RELATIME},
	} {
		if uintptr(fs.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	return syscall.Mount("", target, "", flags, "")
}

func isSystemBind(p string) bool {
	for _, s := range systemBinds {
		if s == p {
			return true
		}
	}
	return false
}

func writeFile(name string, b []byte, mode os.FileMode) error {
	return os.WriteFile(name, b, mode)
}

// Capability and securebits constants of linux/capability.h and
// linux/securebits.h.
const (
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
	prSetNoNewPrivs      = 38
	secbitsLockedNoRoot  = 0x3 | 0xc | 0x30 // NOROOT, NO_SETUID_FIXUP, KEEP_CAPS locked (and set)
	capLastCapFallback   = 40
)

// dropPrivileges leaves the process without any privilege: with uid >= 0
// it switches to that host uid (running as root without a user
// namespace); otherwise it stays uid 0 of its user namespace but empties
// its capability bounding and ambient sets and sets the securebits that
// stop uid 0 from regaining capabilities at exec. No new privileges
// either way (set-uid files and file capabilities are ignored).
func dropPrivileges(uid, gid int) error {
	last := capLastCapFallback
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		fmt.Sscan(strings.TrimSpace(string(b)), &last)
	}
	for c := 0; c <= last; c++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_CAPBSET_DROP, uintptr(c), 0); e != 0 && e != syscall.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, e)
		}
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0); e != 0 && e != syscall.EINVAL {
		return fmt.Errorf("clear ambient capabilities: %w", e)
	}
	if uid >= 0 {
		if err := syscall.Setgroups(nil); err != nil {
			return err
		}
		if err := syscall.Setresgid(gid, gid, gid); err != nil {
			return err
		}
		if err := syscall.Setresuid(uid, uid, uid); err != nil {
			return err
		}
	} else if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_SECUREBITS, secbitsLockedNoRoot, 0); e != 0 {
		return fmt.Errorf("securebits: %w", e)
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("no_new_privs: %w", e)
	}
	// A change of credentials clears the parent-death signal: set it again.
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); e != 0 {
		return fmt.Errorf("pdeathsig: %w", e)
	}
	return nil
}

// execWithLimits sets the rlimits and executes argv with an empty
// environment, allocating nothing in between (RLIMIT_AS may be below what
// the Go runtime has mapped).
func execWithLimits(argv []string, lims []rlimit) error {
	path, err := syscall.BytePtrFromString(argv[0])
	if err != nil {
		return err
	}
	args, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	env := []*byte{nil}
	type kernelRlimit struct{ cur, max uint64 }
	ks := make([]kernelRlimit, len(lims))
	for i, l := range lims {
		ks[i] = kernelRlimit{l.Cur, l.Max}
	}
	for i, l := range lims {
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, uintptr(l.Resource), uintptr(unsafe.Pointer(&ks[i])), 0, 0, 0); e != 0 {
			return fmt.Errorf("setrlimit %d: %w", l.Resource, e)
		}
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&args[0])), uintptr(unsafe.Pointer(&env[0])))
	return fmt.Errorf("exec %s: %w", argv[0], e)
}

// uidSlots hands out the host uids isolated runs map to when the caller
// is root: each run in flight in this process gets its own, so that
// RLIMIT_NPROC, which the kernel counts per user, is per run.
var uidSlots = struct {
	sync.Mutex
	used []bool
}{}

func acquireUIDSlot() int {
	uidSlots.Lock()
	defer uidSlots.Unlock()
	for i, u := range uidSlots.used {
		if !u {
			uidSlots.used[i] = true
			return i
		}
	}
	uidSlots.used = append(uidSlots.used, true)
	return len(uidSlots.used) - 1
}

func releaseUIDSlot(i int) {
	uidSlots.Lock()
	defer uidSlots.Unlock()
	uidSlots.used[i] = false
}

// isolatedCommand builds the command of one isolated run whose host work
// dir is dir: this binary re-executed as the run's init (argv[1] initArg)
// in fresh namespaces. hostID is the host uid and gid the run maps to.
func (s *Sandbox) isolatedCommand(dir string, hostID int, userNS, probe bool) (*exec.Cmd, *os.File, error) {
	c := s.cfg
	cpu := uint64((c.CPUTime + time.Second - 1) / time.Second)
	cpu = max(cpu, 1)
	const rlimitNproc = 6 // not in package syscall
	sp := initSpec{
		Dir: dir, Work: "/tmp/" + filepath.Base(dir), DiskBytes: c.DiskBytes,
		Binds: systemBinds, ExtraBinds: c.ReadOnlyPaths,
		DropUID: -1, DropGID: -1,
		Rlimits: []rlimit{
			// Soft = hard: the program is its namespace's PID 1, which
			// ignores the soft limit's SIGXCPU, so the kernel's SIGKILL at
			// the hard limit is what ends it (classified as cpu_limit).
			{syscall.RLIMIT_CPU, cpu, cpu},
			{syscall.RLIMIT_FSIZE, c.FileSizeBytes, c.FileSizeBytes},
			{syscall.RLIMIT_NOFILE, c.OpenFiles, c.OpenFiles},
			{rlimitNproc, c.Processes, c.Processes},
			{syscall.RLIMIT_CORE, 0, 0},
			{syscall.RLIMIT_AS, c.MemoryBytes, c.MemoryBytes}, // last: the init allocates nothing after it
		},
		Argv:  append(slices.Clone(c.Interpreter), "main.py"),
		Probe: probe,
	}
	attr := &syscall.SysProcAttr{
		Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
	}
	if userNS {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: hostID, Size: 1}}
		gid := hostID
		if !s.root {
			gid = os.Getgid()
		}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
		// Unprivileged, setgroups must be denied before a gid map is
		// written; root may allow it and drop its groups.
		attr.GidMappingsEnableSetgroups = s.root
		attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}, NoSetGroups: !s.root}
	} else {
		sp.DropUID, sp.DropGID = hostID, hostID
	}
	spec, err := json.Marshal(sp)
	if err != nil {
		return nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	// /proc/self/exe: the running binary, reachable even when its
	// directory is not searchable by the run's uid.
	cmd := exec.Command("/proc/self/exe", initArg, string(spec))
	cmd.Dir = dir
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{w} // fd 3: setupErrFD
	cmd.SysProcAttr = attr
	return cmd, r, nil
}

// hostID returns the host uid (and gid) of a run: the caller's, or when
// the caller is root the uid of the run's slot.
func (s *Sandbox) hostID(slot int) int {
	if s.root {
		return s.cfg.IsolatedUIDBase + slot
	}
	return os.Getuid()
}

// startIsolated runs the program in dir isolated (IsolationFull).
func (s *Sandbox) startIsolated(ctx context.Context, dir string) (Result, error) {
	slot := -1
	if s.root {
		slot = acquireUIDSlot()
		defer releaseUIDSlot(slot)
		// The init, running as the slot's uid, reads main.py and mounts
		// the run's root over dir.
		if err := os.Chown(dir, s.hostID(slot), s.hostID(slot)); err != nil {
			return Result{}, err
		}
	}
	cmd, setupErr, err := s.isolatedCommand(dir, s.hostID(slot), s.userNS, false)
	if err != nil {
		return Result{}, err
	}
	return s.wait(ctx, cmd, setupErr)
}

// probes caches, per process, whether isolation works: keyed by whether a
// user namespace is used.
var probes = struct {
	sync.Mutex
	err map[bool]error
}{err: map[bool]error{}}

// probeIsolation checks that an isolated run can be set up, trying a user
// namespace first and, as root, then none; it returns which one works.
func probeIsolation(cfg Config, root bool, hooks testHooks) (userNS bool, err error) {
	if hooks.refuseNS {
		return false, errors.New("namespaces refused (test)")
	}
	if runtime.GOOS != "linux" {
		return false, fmt.Errorf("namespaces need Linux, not %s", runtime.GOOS)
	}
	// The probe checks what the kernel allows, not the configuration:
	// a bad ReadOnlyPaths entry is a setup error of each run.
	cfg.ReadOnlyPaths = nil
	s := &Sandbox{cfg: cfg, root: root}
	errUser := errors.New("user namespaces refused (test)")
	if !hooks.noUserNS {
		if errUser = s.probe(true); errUser == nil {
			return true, nil
		}
	}
	if !root {
		return false, errUser
	}
	if err := s.probe(false); err != nil {
		return false, fmt.Errorf("with a user namespace: %v; without: %v", errUser, err)
	}
	return false, nil
}

// probe sets up one isolated run without a program, once per process for
// each kind.
func (s *Sandbox) probe(userNS bool) error {
	probes.Lock()
	defer probes.Unlock()
	if err, ok := probes.err[userNS]; ok {
		return err
	}
	err := s.probeOnce(userNS)
	probes.err[userNS] = err
	return err
}

func (s *Sandbox) probeOnce(userNS bool) error {
	dir, err := os.MkdirTemp(s.cfg.TempDir, "troupe-sandbox-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	slot := -1
	if s.root {
		slot = acquireUIDSlot()
		defer releaseUIDSlot(slot)
		if err := os.Chown(dir, s.hostID(slot), s.hostID(slot)); err != nil {
			return err
		}
	}
	cmd, setupErr, err := s.isolatedCommand(dir, s.hostID(slot), userNS, true)
	if err != nil {
		return err
	}
	defer setupErr.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	cmd.ExtraFiles[0].Close()
	if err != nil {
		return err
	}
	timer := time.AfterFunc(10*time.Second, func() { killGroup(cmd.Process.Pid) })
	defer timer.Stop()
	err = cmd.Wait()
	msg, _ := io.ReadAll(io.LimitReader(setupErr, 4096))
	switch {
	case len(msg) > 0:
		return errors.New(string(msg))
	case err != nil:
		return fmt.Errorf("%v %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}
