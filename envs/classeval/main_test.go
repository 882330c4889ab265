package classeval

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/troupe-dev/troupe/internal/testenv"
)

// TestMain skips the package when the interpreter the task runs is missing
// (its tests on the real data run Python), or lacks the libraries the
// shipped classes import, unless testenv.RequireEnv is set.
func TestMain(m *testing.M) {
	err := testenv.PythonInstalled()
	if err == nil {
		var missing *missingModulesError
		if _, e := New(nil); errors.As(e, &missing) {
			err = missing
		}
	}
	if err != nil {
		if testenv.Required() {
			fmt.Fprintf(os.Stderr, "envs/classeval: %v, and %s is set\n", err, testenv.RequireEnv)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "envs/classeval: %v: skipping the package's tests, which run Python on the shipped classes\n", err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
