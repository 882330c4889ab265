// Package testenv tells tests whether the external tools some of them need
// are installed: clang with the wasm32-wasi target for the C plugins, and
// /usr/bin/python3 for the coding task. Without a tool those tests skip
// with a message naming what to install, so `go test ./...` passes on a
// machine with only Go; with [RequireEnv] set (as .ci/run does) a missing
// tool fails them instead.
//
// It also says whether to assert on wall-clock time ([Timing]), and reads
// metrics.jsonl the way determinism tests compare it ([MetricsWithoutTiming]).
package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
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

// Clang returns nil when clang is on PATH, else what to install.
func Clang() error {
	if _, err := exec.LookPath("clang"); err != nil {
		return fmt.Errorf("clang not found (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32; .ci/run does)")
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
