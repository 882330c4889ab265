// Package testenv tells tests whether the external tools some of them need
// are installed: clang with the wasm32-wasi target for the C plugins (it
// must build one, not merely be on PATH), and
// /usr/bin/python3 for the coding task. Without a tool those tests skip
// with a message naming what to install, so `go test ./...` passes on a
// machine with only Go; with [RequireEnv] set (as .ci/run does) a missing
// tool fails them instead.
//
// It also says whether to assert on wall-clock time ([Timing]), and reads
// metrics.jsonl the way determinism tests compare it ([MetricsWithoutTiming]).
package testenv

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RequireEnv, when set to a non-empty value, makes a missing tool a test
// failure instead of a skip.
const RequireEnv = "TROUPE_TEST_REQUIRE_TOOLS"

// TimingEnv, when set to a non-empty value, turns on the tests' assertions
// on wall-clock time: upper bounds on how long a call or a timeout took,
// and lower bounds on rates. A loaded machine breaks them, so the plain
// test run leaves them out; scripts/bench.sh, run on a quiet machine, sets
// it.
const TimingEnv = "TROUPE_TEST_TIMING"

// Timing reports whether [TimingEnv] is set: guard every assertion on
// wall-clock time with it.
func Timing() bool { return os.Getenv(TimingEnv) != "" }

// Python is the interpreter the coding task runs.
const Python = "/usr/bin/python3"

// Required reports whether missing tools must fail the tests.
func Required() bool { return os.Getenv(RequireEnv) != "" }

// clangInstall says what the C plugins' toolchain needs.
const clangInstall = "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32; .ci/run does"

// Clang returns nil when clang is on PATH and builds a wasm32-wasi reactor
// module with libc (the C plugins' target: besides clang it needs lld,
// wasi-libc and clang's wasm32 runtime), else what to install. It tries
// once per process.
func Clang() error {
	clang.once.Do(func() { clang.err = clangBuilds("clang") })
	return clang.err
}

var clang struct {
	once sync.Once
	err  error
}

// clangBuilds compiles and links a one-function C reactor for wasm32-wasi
// that calls into libc, with the compiler named name.
func clangBuilds(name string) error {
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s not found (%s)", name, clangInstall)
	}
	dir, err := os.MkdirTemp("", "troupe-clang-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "probe.c")
	code := "#include <string.h>\n__attribute__((export_name(\"probe\"))) int probe(const char *s) { return (int)strlen(s); }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		return err
	}
	out, err := exec.Command(path, "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-o", filepath.Join(dir, "probe.wasm"), src).CombinedOutput()
	if err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("%s cannot build a wasm32-wasi module (%s): %s", path, clangInstall, cmp.Or(msg, err.Error()))
	}
	return nil
}

// PythonInstalled returns nil when [Python] exists, else what to install.
func PythonInstalled() error {
	if _, err := os.Stat(Python); err != nil {
		return fmt.Errorf("%s not found (apt-get install python3-minimal; .ci/run does)", Python)
	}
	return nil
}

// Need skips tb when missing (the result of [Clang] or [PythonInstalled])
// is not nil, or fails it when [Required].
func Need(tb testing.TB, missing error) {
	tb.Helper()
	switch {
	case missing == nil:
	case Required():
		tb.Fatalf("%v, and %s is set", missing, RequireEnv)
	default:
		tb.Skip(missing)
	}
}

// MetricsWithoutTiming reads a run directory's metrics.jsonl, one line per
// iteration, without the timing fields (steps_per_sec, wall_s): the only
// fields allowed to differ between two runs of the same configuration and
// seed. Compare the results of two runs with slices.Equal.
func MetricsWithoutTiming(t testing.TB, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		delete(m, "steps_per_sec")
		delete(m, "wall_s")
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return out
}
