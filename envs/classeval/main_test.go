package classeval

import (
	"fmt"
	"os"
	"testing"

	"github.com/troupe-dev/troupe/internal/testenv"
)

// TestMain skips the package when the interpreter the task runs is missing
// (its tests on the real data run Python), unless testenv.RequireEnv is
// set.
func TestMain(m *testing.M) {
	if err := testenv.PythonInstalled(); err != nil {
		if testenv.Required() {
			fmt.Fprintf(os.Stderr, "envs/classeval: %v, and %s is set\n", err, testenv.RequireEnv)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "envs/classeval: %v: skipping the package's tests, which run Python\n", err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
