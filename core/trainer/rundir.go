package trainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/internal/atomicfile"
)

// LockFile is the name of the lock file in a run directory. The process
// that owns the run holds an OS lock on it (flock) for as long as it runs
// and writes its pid into it; the lock ends with the process, however it
// ends. It is not part of the run's results.
const LockFile = ".troupe.lock"

// ChangesFile is the run directory's record of settings changed on
// --resume: one JSON object (a ConfigChanges) per resumed run that changed
// any. config.toml keeps describing the first iterations; the whole
// configuration in force after each change is in ConfigAfterFile(N).
const ChangesFile = "changes.jsonl"

// ConfigAfterFile names the configuration a resumed run that changed
// settings used from iteration after+1 on.
func ConfigAfterFile(after int) string { return fmt.Sprintf("config.after-%06d.toml", after) }

// CurrentConfig returns the configuration file in force in run directory
// dir: the ConfigAfterFile of the latest resume that changed settings, or
// config.toml.
func CurrentConfig(dir string) string {
	names, _ := filepath.Glob(filepath.Join(dir, "config.after-*.toml"))
	best, bestN := filepath.Join(dir, "config.toml"), -1
	for _, name := range names {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(name), "config.after-%d.toml", &n); err == nil && n > bestN && filepath.Base(name) == ConfigAfterFile(n) {
			best, bestN = name, n
		}
	}
	return best
}

// RunDirMode says how OpenRunDir treats what a directory already holds.
type RunDirMode int

const (
	// FreshRun accepts a missing or empty directory and refuses one that
	// holds files.
	FreshRun RunDirMode = iota
	// ResumeRun accepts only an existing directory: the run being
	// continued.
	ResumeRun
	// ForceFreshRun is FreshRun, except that a directory holding files
	// has them moved aside, whole, to a new sibling directory
	// DIR.replaced-TIME (see RunDir.MovedAside); nothing is deleted.
	ForceFreshRun
)

// RunDir is a run directory owned by this process: no other troupe
// process can open it until Close.
type RunDir struct {
	// Path is the directory.
	Path string
	// MovedAside is where ForceFreshRun moved the directory's earlier
	// content, or "".
	MovedAside string
	// Created is true when OpenRunDir created the directory.
	Created bool
	lock    *os.File
}

// BusyError is returned by OpenRunDir when another process holds the run
// directory.
type BusyError struct {
	Dir string
	// PID is the holder's process id, 0 if unknown.
	PID int
}

// Error names the directory, its holder and the ways out.
func (e *BusyError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("run directory %s is in use by %s (a troupe run holds %s); wait for it to end or choose another --out", e.Dir, who, filepath.Join(e.Dir, LockFile))
}

// NotEmptyError is returned by OpenRunDir in FreshRun mode for a
// directory that holds files.
type NotEmptyError struct {
	Dir string
	// Files are some of the names found.
	Files []string
}

// Error names the directory, some of its files and the ways out.
func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("run directory %s is not empty (it holds %s); continue that run with --resume %s, move its files aside with --force, or choose another --out",
		e.Dir, strings.Join(e.Files, ", "), e.Dir)
}

// OpenRunDir takes ownership of the run directory path: it creates it if
// needed (FreshRun, ForceFreshRun), locks it, and checks its content
// against mode. Errors are *BusyError, *NotEmptyError, or name the path.
func OpenRunDir(path string, mode RunDirMode) (*RunDir, error) {
	if mode == ResumeRun {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("resume: %s is not a directory", path)
		}
		return lockRunDir(path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	created := true
	if err := os.Mkdir(path, 0o755); errors.Is(err, fs.ErrExist) {
		created = false
	} else if err != nil {
		return nil, err
	}
	rd, err := lockRunDir(path)
	if err != nil {
		return nil, err
	}
	rd.Created = created
	files, err := runFiles(path)
	if err != nil {
		rd.Close()
		return nil, err
	}
	if len(files) == 0 {
		return rd, nil
	}
	if mode != ForceFreshRun {
		rd.Close()
		return nil, &NotEmptyError{Dir: path, Files: files}
	}
	// Move the whole directory aside (one rename, so a crash leaves it
	// either here or there) and start an empty one under the lock of the
	// old: a process opening path meanwhile finds it missing and creates
	// it, and then this one's Mkdir fails rather than mixing runs.
	aside, err := MakeUniqueDir(path+".replaced", time.Now())
	if err != nil {
		rd.Close()
		return nil, err
	}
	// os.Rename refuses an existing target directory: free the reserved
	// name just before (rename(2) itself would only replace an empty
	// directory, so no other process's files can be lost).
	_ = os.Remove(aside)
	if err := os.Rename(path, aside); err != nil {
		rd.Close()
		return nil, fmt.Errorf("--force: moving %s aside: %w", path, err)
	}
	old := rd
	defer old.Close()
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, fmt.Errorf("--force: %w (moved the earlier run to %s)", err, aside)
	}
	rd, err = lockRunDir(path)
	if err != nil {
		return nil, err
	}
	// The moved lock file is stale in its new place.
	_ = os.Remove(filepath.Join(aside, LockFile))
	rd.MovedAside, rd.Created = aside, true
	return rd, nil
}

// runFiles lists up to 5 entries of dir other than the lock file.
func runFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Name() == LockFile {
			continue
		}
		if len(names) == 5 {
			names = append(names, "…")
			break
		}
		names = append(names, e.Name())
	}
	return names, nil
}

func lockRunDir(dir string) (*RunDir, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !held {
		b, _ := os.ReadFile(path)
		f.Close()
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return nil, &BusyError{Dir: dir, PID: pid}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &RunDir{Path: dir, lock: f}, nil
}

// Close releases the directory. The lock file stays (removing it would
// let a process that opened it before the removal lock a file no other
// process sees); it is empty when no run holds it.
func (d *RunDir) Close() error {
	if d == nil || d.lock == nil {
		return nil
	}
	_ = d.lock.Truncate(0)
	err := d.lock.Close() // releases the lock
	d.lock = nil
	return err
}

// MakeUniqueDir creates a new directory named prefix-TIME, TIME being t to
// the millisecond, with a -2, -3, … suffix if that name exists: it never
// returns a directory that existed before (it creates it with mkdir, which
// fails on an existing name). Missing parents are created.
func MakeUniqueDir(prefix string, t time.Time) (string, error) {
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return "", err
	}
	base := prefix + "-" + t.Format("20060102-150405.000")
	for n := 1; n <= 1000; n++ {
		name := base
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		err := os.Mkdir(name, 0o755)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("no free directory name like %s", base)
}

// ConfigChange is one setting that differs between a run's configuration
// and the one it was resumed with. Old or New is nil when the key was
// missing on that side.
type ConfigChange struct {
	Key string `json:"key"`
	Old any    `json:"old"`
	New any    `json:"new"`
}

// ConfigChanges is one line of changes.jsonl: the settings changed when
// the run was resumed after iteration AfterIteration (so they apply from
// iteration AfterIteration+1).
type ConfigChanges struct {
	AfterIteration int            `json:"after_iteration"`
	Time           string         `json:"time"`
	Changes        []ConfigChange `json:"changes"`
}

// appendChanges appends one ConfigChanges line to dir's changes.jsonl,
// atomically (the file is rewritten whole).
func appendChanges(dir string, c ConfigChanges) error {
	line, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("%s: %w", ChangesFile, err)
	}
	path := filepath.Join(dir, ChangesFile)
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		old = append(old, '\n')
	}
	return atomicfile.WriteFile(path, append(append(old, line...), '\n'), 0o644)
}
