package grpcplugin

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/lbf"
)

// TestConformanceLBF steps the built-in LBF env in-process and the same env
// served by a plugin binary (internal/testplugins/grpc/lbf, built with the
// serve kit) with the same seeds and the same random legal joint actions,
// and requires bit-identical observations, rewards, states, metrics and
// episode ends; every fifth episode is cut short with Truncate.
func TestConformanceLBF(t *testing.T) {
	noLeftovers(t)
	var steps, rewarded, ended int
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
			native, err := lbf.New(tc.params)
			if err != nil {
				t.Fatal(err)
			}
			defer native.Close()
			plugged := open(t, loadEnv(t, ref(bin.lbf, tc.params)))

			nativeSpec, _ := json.Marshal(native.Spec())
			pluggedSpec, _ := json.Marshal(plugged.Spec())
			if string(nativeSpec) != string(pluggedSpec) {
				t.Fatalf("specs differ:\nnative %s\nplugin %s", nativeSpec, pluggedSpec)
			}
			spec := native.Spec()
			for seed := uint64(1); seed <= uint64(tc.seeds); seed++ {
				at := fmt.Sprintf("seed %d reset", seed)
				no, err1 := native.Reset(seed)
				po, err2 := plugged.Reset(seed)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: errors %v / %v", at, err1, err2)
				}
				sameObs(t, at, no, po)
				rng := rand.New(rand.NewPCG(seed, 99))
				truncateAt := -1
				if seed%5 == 0 {
					truncateAt = 1 + rng.IntN(10)
				}
				for step := 0; step < max(spec.MaxSteps, 1000); step++ {
					at = fmt.Sprintf("seed %d step %d", seed, step)
					sameFloats(t, at+" State", native.State(), plugged.State())
					if step == truncateAt {
						nr, err1 := native.Truncate()
						pr, err2 := plugged.(core.Truncater).Truncate()
						if err1 != nil || err2 != nil {
							t.Fatalf("%s Truncate: errors %v / %v", at, err1, err2)
						}
						sameResult(t, at+" Truncate", nr, pr)
						break
					}
					actions := make([]core.Action, spec.NumAgents())
					for i := range actions {
						legal := []int{}
						for d := range spec.Decisions {
							if no[i].Legal(d) {
								legal = append(legal, d)
							}
						}
						actions[i].Decision = legal[rng.IntN(len(legal))]
					}
					nr, err1 := native.Step(actions)
					pr, err2 := plugged.Step(actions)
					if err1 != nil || err2 != nil {
						t.Fatalf("%s: errors %v / %v", at, err1, err2)
					}
					sameResult(t, at, nr, pr)
					steps++
					for _, r := range nr.Rewards {
						if r != 0 {
							rewarded++
							break
						}
					}
					if t.Failed() {
						return
					}
					if nr.Done() {
						ended++
						break
					}
					no = nr.Observations
				}
			}
		})
	}
	// The comparison must have covered rewards and episode ends.
	if rewarded < 10 || ended < 50 {
		t.Errorf("%d steps, %d rewarded, %d episodes ended: too few to compare", steps, rewarded, ended)
	}
	t.Logf("%d steps, %d with rewards, %d episodes ended", steps, rewarded, ended)
}

func sameResult(t *testing.T, at string, n, p core.StepResult) {
	t.Helper()
	sameObs(t, at, n.Observations, p.Observations)
	if (n.Rewards == nil) != (p.Rewards == nil) {
		t.Errorf("%s: rewards nil %v vs %v", at, n.Rewards == nil, p.Rewards == nil)
	}
	sameFloats(t, at+" rewards", n.Rewards, p.Rewards)
	if n.Terminated != p.Terminated || n.Truncated != p.Truncated {
		t.Errorf("%s: terminated/truncated %v/%v vs %v/%v", at, n.Terminated, n.Truncated, p.Terminated, p.Truncated)
	}
	keys := slices.Sorted(maps.Keys(n.Metrics))
	if pk := slices.Sorted(maps.Keys(p.Metrics)); !slices.Equal(keys, pk) {
		t.Errorf("%s: metric keys %v vs %v", at, keys, pk)
	}
	for _, k := range keys {
		if math.Float64bits(n.Metrics[k]) != math.Float64bits(p.Metrics[k]) {
			t.Errorf("%s: metric %s %v vs %v", at, k, n.Metrics[k], p.Metrics[k])
		}
	}
	if len(n.Artifacts) != len(p.Artifacts) {
		t.Errorf("%s: %d vs %d artifacts", at, len(n.Artifacts), len(p.Artifacts))
	}
	for k, v := range n.Artifacts {
		if string(p.Artifacts[k]) != string(v) {
			t.Errorf("%s: artifact %s differs", at, k)
		}
	}
}

func sameObs(t *testing.T, at string, n, p []core.Observation) {
	t.Helper()
	if len(n) != len(p) {
		t.Fatalf("%s: %d vs %d observations", at, len(n), len(p))
	}
	for i := range n {
		sameFloats(t, fmt.Sprintf("%s agent %d features", at, i), n[i].Features, p[i].Features)
		if n[i].Text != p[i].Text {
			t.Errorf("%s agent %d: text %q vs %q", at, i, n[i].Text, p[i].Text)
		}
		if (n[i].Mask == nil) != (p[i].Mask == nil) || !slices.Equal(n[i].Mask, p[i].Mask) {
			t.Errorf("%s agent %d: mask %v vs %v", at, i, n[i].Mask, p[i].Mask)
		}
	}
}

func sameFloats(t *testing.T, at string, n, p []float64) {
	t.Helper()
	if len(n) != len(p) {
		t.Errorf("%s: length %d vs %d", at, len(n), len(p))
		return
	}
	for i := range n {
		if math.Float64bits(n[i]) != math.Float64bits(p[i]) {
			t.Errorf("%s[%d]: %v vs %v (bits %x vs %x)", at, i, n[i], p[i], math.Float64bits(n[i]), math.Float64bits(p[i]))
			return
		}
	}
}
