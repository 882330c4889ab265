package matrix_test

import (
	"context"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/envs/matrix"
)

// Both games keep the contract with the runtime.
func TestContract(t *testing.T) {
	for _, params := range []map[string]any{nil, {"game": matrix.Penalty, "steps": 7}} {
		src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: matrix.Name, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		envtest.Check(t, src)
	}
}
