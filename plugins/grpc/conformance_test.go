package grpcplugin

import (
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	_ "github.com/troupe-dev/troupe/envs/lbf"
)

// TestConformanceLBF plays the built-in LBF env in-process and the same env
// served by a plugin binary (internal/testplugins/grpc/lbf, built with the
// serve kit) with the same seeds and the same random legal joint actions,
// and requires bit-identical observations, rewards, states, metrics and
// episode ends; every fifth episode is cut short with Truncate.
func TestConformanceLBF(t *testing.T) {
	noLeftovers(t)
	var total envtest.Stats
	for _, tc := range []struct {
		name   string
		params map[string]any
		seeds  int
	}{
		{"8x8-2p-2f-coop", nil, 60},
		{"raw-obs", map[string]any{"raw_obs": true}, 20},
		{"10x10-3p-4f-sight2", map[string]any{"size": 10, "players": 3, "foods": 4, "sight": 2, "coop": false, "max_player_level": 3, "max_steps": 40}, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			native := loadEnv(t, core.SourceRef{Scheme: "builtin", Path: "lbf", Params: tc.params})
			plugged := loadEnv(t, ref(bin.lbf, tc.params))
			seeds := make([]uint64, tc.seeds)
			for i := range seeds {
				seeds[i] = uint64(i + 1)
			}
			st := envtest.SameTrajectories(t, native, plugged, seeds...)
			total.Steps += st.Steps
			total.Rewarded += st.Rewarded
			total.Ended += st.Ended
			total.Truncations += st.Truncations
		})
	}
	// The comparison must have covered rewards, episode ends and truncations.
	if total.Rewarded < 10 || total.Ended < 50 || total.Truncations < 10 {
		t.Errorf("%+v: too few to compare", total)
	}
	t.Logf("%+v", total)
}
