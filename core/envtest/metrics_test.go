package envtest_test

import (
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
)

// unlistedEnv reports, at the end of every episode, a metric its spec
// does not list.
type unlistedEnv struct{ *relayEnv }

func (e unlistedEnv) Step(a []core.Action) (core.StepResult, error) {
	r, err := e.relayEnv.Step(a)
	if r.Done() {
		r.Metrics["unlisted"] = 1
	}
	return r, err
}

func (e unlistedEnv) Truncate() (core.StepResult, error) {
	r, err := e.relayEnv.Truncate()
	r.Metrics["unlisted"] = 1
	return r, err
}

// An env must list every metric it reports: rewards are checked against
// the list before training, so an unlisted one could not be used.
func TestCheckUnlistedMetric(t *testing.T) {
	src, err := core.NewEnvSource(func(map[string]any) (core.Env, error) { return unlistedEnv{&relayEnv{}}, nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r recorder
	envtest.Check(&r, src)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], `reports metric "unlisted", which the spec does not list`) {
		t.Fatalf("errors %q, want one about the unlisted metric", r.errs)
	}
}
