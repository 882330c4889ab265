package lbf_test

import (
	"context"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/envs/lbf"
)

// The env keeps the contract with the runtime, with full and partial
// observability, with raw observations and in the published 10x10-3p-3f and
// 15x15-4p-3f configurations.
func TestContract(t *testing.T) {
	for _, params := range []map[string]any{nil, {"players": 3, "foods": 3, "sight": 2, "coop": false}, {"raw_obs": true},
		{"size": 10, "players": 3, "foods": 3, "coop": false}, {"size": 15, "players": 4, "foods": 3, "coop": false}} {
		src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: lbf.Name, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		envtest.Check(t, src)
	}
}
