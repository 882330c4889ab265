package writing_test

import (
	"context"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/envs/writing"
)

// The env keeps the contract with the runtime, its simulator, prompts,
// truncation and baselines included.
func TestContract(t *testing.T) {
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: writing.Name, Params: map[string]any{"writers": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if spec := src.Spec(); spec.ReferenceBaseline != writing.BaselineSingleAgent {
		t.Errorf("reference baseline %q, want %q", spec.ReferenceBaseline, writing.BaselineSingleAgent)
	}
	envtest.Check(t, src)
}
