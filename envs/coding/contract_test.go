package coding_test

import (
	"context"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/envs/coding"
)

// The env keeps the contract with the runtime, its simulator, prompts,
// truncation and baselines included.
func TestContract(t *testing.T) {
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: coding.Name, Params: map[string]any{"functions": 3, "agents": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if spec := src.Spec(); spec.ReferenceBaseline != coding.BaselineSingleAgent {
		t.Errorf("reference baseline %q, want %q", spec.ReferenceBaseline, coding.BaselineSingleAgent)
	}
	envtest.Check(t, src)
}
