package coding

import (
	"context"
	"errors"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/sandbox"
	"github.com/troupe-dev/troupe/internal/testenv"
)

// [env.sandbox] reaches the env's Python sandbox: isolation "full" by
// default, "none" when the agentfile opts out.
func TestEnvSandboxSettingsReachTheSandbox(t *testing.T) {
	testenv.Need(t, testenv.PythonInstalled())
	for _, c := range []struct {
		isolation string
		want      sandbox.IsolationMode
	}{{"", sandbox.IsolationFull}, {core.IsolationNone, sandbox.IsolationNone}} {
		src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: Name,
			Params: map[string]any{"functions": 2, "timeout_s": 3.5}, Sandbox: core.Sandbox{Isolation: c.isolation}})
		if errors.Is(err, sandbox.ErrNoIsolation) {
			testenv.Need(t, err) // no isolation on this machine
		}
		if err != nil {
			t.Fatal(err)
		}
		e, err := src.Open()
		if err != nil {
			t.Fatal(err)
		}
		if got := e.(*Env).sb.Isolation().Mode; got != c.want {
			t.Errorf("isolation %q: the sandbox runs with %q, want %q", c.isolation, got, c.want)
		}
		src.Close()
	}
}
