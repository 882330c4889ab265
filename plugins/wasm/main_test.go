package wasm

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-dev/troupe/internal/testenv"
)

// Test modules, built once by TestMain into a temporary directory.
var (
	modDir   string
	testLoad *Loader
	logBuf   testenv.SyncBuffer
)

// goGuests are Go guest packages (relative to the module root) and the
// module file each becomes.
var goGuests = map[string]string{
	"notes.wasm":   "./examples/wasm-go-env",
	"faultgo.wasm": "./internal/testplugins/wasm/faultgo",
	"lbf.wasm":     "./examples/wasm-lbf",
}

// cFaults are the variants of internal/testplugins/wasm/faultc/fault.c.
var cFaults = []string{"NONE", "TRAP", "BIGLEN", "BADSPEC", "BADREPLY", "GROW", "ABIV2", "NOABI", "IMPORT", "LOOP"}

func mod(name string) string { return filepath.Join(modDir, name) }

// cMissing says why the C test modules were not built (nil when they were).
var cMissing error

// needC skips tb when the C test modules could not be built.
func needC(tb testing.TB) {
	tb.Helper()
	testenv.Need(tb, cMissing)
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "troupe-wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	modDir = dir
	code := 1
	if err := buildModules(dir); err != nil {
		fmt.Fprintln(os.Stderr, "building test modules:", err)
	} else {
		// The default loader (used through core.LoadEnv) shares the disk
		// cache, as a second process would.
		os.Setenv(CacheDirEnv, filepath.Join(dir, "cache"))
		testLoad = NewLoader(Options{CacheDir: filepath.Join(dir, "cache"),
			Logger: slog.New(slog.NewTextHandler(&logBuf, nil)), LogLinesPerSecond: 20})
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildModules builds every test module concurrently.
func buildModules(dir string) error {
	root := moduleRoot()
	var jobs []job
	for out, pkg := range goGuests {
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(dir, out), pkg)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		jobs = append(jobs, job{out, cmd})
	}
	if err := testenv.Clang(); err != nil {
		if testenv.Required() {
			return fmt.Errorf("%v, and %s is set", err, testenv.RequireEnv)
		}
		cMissing = err
		fmt.Fprintf(os.Stderr, "plugins/wasm tests: %v: the C test modules are not built and their tests skip\n", err)
		// The package Example only needs a matrix game.
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(dir, "matrix.wasm"), "./internal/testplugins/wasm/matrixgo")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		jobs = append(jobs, job{"matrix.wasm", cmd})
		return runJobs(root, jobs)
	}
	sdk := filepath.Join(root, "sdk")
	jobs = append(jobs, job{"matrix.wasm", exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-Wall", "-Werror",
		"-I", sdk, "-o", filepath.Join(dir, "matrix.wasm"), filepath.Join(root, "examples", "c-matrix", "matrix.c"))})
	jobs = append(jobs, job{"lbf_c.wasm", exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-Wall", "-Werror",
		"-I", sdk, "-o", filepath.Join(dir, "lbf_c.wasm"), filepath.Join(root, "examples", "c-lbf", "lbf.c"))})
	for _, f := range cFaults {
		out := "fault_" + strings.ToLower(f) + ".wasm"
		jobs = append(jobs, job{out, exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-Wall", "-Werror",
			"-I", sdk, "-DFAULT_"+f, "-o", filepath.Join(dir, out), filepath.Join(root, "internal", "testplugins", "wasm", "faultc", "fault.c"))})
	}
	return runJobs(root, jobs)
}

// job is one module build.
type job struct {
	name string
	cmd  *exec.Cmd
}

// runJobs runs the builds, three at a time, in the module root.
func runJobs(root string, jobs []job) error {
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 3)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			j.cmd.Dir = root
			if out, err := j.cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("%s: %v\n%s", j.name, err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
