package wasm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/lbf"
)

// Conformance: LBF ported to C (examples/c-lbf) gives the same spec,
// observations, masks, rewards, flags, metrics and states as the built-in
// env, for many seeds (including seeds above 2⁶³, which cross the ABI as
// negative i64) and random actions, mostly legal, some illegal (played as
// none), with an early Truncate in some episodes.
func TestCLBFMatchesNative(t *testing.T) {
	needC(t)
	for _, params := range []map[string]any{
		nil, // Foraging-8x8-2p-2f-coop
		{"size": 10, "players": 3, "foods": 3, "coop": false, "sight": 2, "max_steps": 30},
		{"raw_obs": true, "max_player_level": 3, "max_steps": 20},
		// crowded: move collisions, big groups, levels up to 5, non-power-of-two IntN
		{"size": 5, "players": 6, "foods": 2, "max_player_level": 5, "coop": false, "sight": 1, "max_steps": 40},
		// one interior cell: IntN(1), and episodes where no food can be placed
		{"size": 3, "players": 2, "foods": 1, "max_steps": 10},
	} {
		t.Run(fmt.Sprint(params), func(t *testing.T) {
			src := loadEnv(t, "lbf_c.wasm", params, core.Sandbox{})
			native, err := lbf.New(params)
			if err != nil {
				t.Fatal(err)
			}
			want := native.Spec() // the C port has no scripted policy (lbf's greedy_food)
			want.Capabilities &^= core.CapBaseline
			want.Baselines = nil
			if !reflect.DeepEqual(src.Spec(), want) {
				t.Fatalf("spec:\n wasm-c %+v\n native %+v", src.Spec(), want)
			}
			if got := src.Spec().Capabilities; got != core.CapTruncate {
				t.Fatalf("capabilities %v, want truncate", got)
			}
			env := startEnv(t, src)
			if !reflect.DeepEqual(env.State(), native.State()) {
				t.Fatalf("state before reset %v, native %v", env.State(), native.State())
			}
			nd := len(native.Spec().Decisions)
			steps, collected, truncations := 0, 0.0, 0
			for k := uint64(0); k < 120; k++ {
				seed := k
				if k%4 == 3 {
					seed = 1<<63 + k*0x9e3779b97f4a7c15
				}
				rng := rand.New(rand.NewPCG(seed, 99))
				wo, err := env.Reset(seed)
				if err != nil {
					t.Fatal(err)
				}
				no, _ := native.Reset(seed)
				if !reflect.DeepEqual(wo, no) {
					t.Fatalf("seed %d reset:\n wasm-c %+v\n native %+v", seed, wo, no)
				}
				if ws, ns := env.State(), native.State(); !reflect.DeepEqual(ws, ns) {
					t.Fatalf("seed %d state after reset %v, native %v", seed, ws, ns)
				}
				truncateAt := -1
				if k%10 == 7 {
					truncateAt = 3
				}
				for step := 0; ; step++ {
					if step == truncateAt {
						wr, err := env.(core.Truncater).Truncate()
						if err != nil {
							t.Fatal(err)
						}
						nr, _ := native.Truncate()
						sameStep(t, fmt.Sprintf("seed %d truncate", seed), wr, nr)
						truncations++
						break
					}
					acts := randomLegal(rng, no, nd)
					for i := range acts {
						switch {
						case rng.IntN(8) == 0: // maybe illegal
							acts[i].Decision = rng.IntN(nd)
						case no[i].Legal(lbf.Load) && rng.IntN(2) == 0: // load more often, so coop foods get collected
							acts[i].Decision = lbf.Load
						}
					}
					wr, err := env.Step(acts)
					if err != nil {
						t.Fatalf("seed %d step %d: %v", seed, step, err)
					}
					nr, _ := native.Step(acts)
					steps++
					sameStep(t, fmt.Sprintf("seed %d step %d", seed, step), wr, nr)
					if ws, ns := env.State(), native.State(); !reflect.DeepEqual(ws, ns) {
						t.Fatalf("seed %d step %d state %v, native %v", seed, step, ws, ns)
					}
					no = nr.Observations
					if nr.Done() {
						collected += nr.Metrics[lbf.MetricFoodsCollected]
						break
					}
				}
			}
			t.Logf("%d steps identical, %d truncations, %.0f foods collected", steps, truncations, collected)
			if collected == 0 {
				t.Fatal("no food was ever collected: the test exercises no reward")
			}
		})
	}
}

// The C port refuses bad params and bad steps like the built-in env.
func TestCLBFErrors(t *testing.T) {
	needC(t)
	for _, params := range []map[string]any{
		{"size": 2},
		{"size": 65},
		{"players": 0},
		{"size": 4, "players": 9},
		{"foods": 37},
		{"max_player_level": 1001},
		{"max_steps": 0},
		{"sight": -1},
		{"szie": 8},
		{"size": 8.5},
		{"coop": 1},
		{"players": "two"},
		{"size": 99999999999},
		{"max_steps": 1e30},
		{"Sight": -3},
	} {
		_, nerr := lbf.New(params)
		if nerr == nil {
			t.Fatalf("%v: native env accepted it", params)
		}
		_, err := testLoad.LoadEnv(context.Background(), core.SourceRef{Path: mod("lbf_c.wasm"), Params: params})
		if err == nil {
			t.Fatalf("%v: accepted", params)
		}
		if want := nerr.Error(); !strings.Contains(err.Error(), want) {
			t.Errorf("%v:\n wasm-c %v\n native %v", params, err, want)
		}
	}
	// Go's encoding/json matches keys case-insensitively; so does the port.
	if _, err := testLoad.LoadEnv(context.Background(), core.SourceRef{Path: mod("lbf_c.wasm"), Params: map[string]any{"Size": 5}}); err != nil {
		t.Fatalf("key Size: %v", err)
	}

	env := startEnv(t, loadEnv(t, "lbf_c.wasm", nil, core.Sandbox{}))
	if _, err := env.Step([]core.Action{{}, {}}); err == nil || !strings.Contains(err.Error(), "lbf: Step before Reset") {
		t.Fatalf("step before reset: %v", err)
	}
	env.Reset(1)
	_, err := env.Step([]core.Action{{Decision: 0}, {Decision: 6}})
	if err == nil || !strings.Contains(err.Error(), "agent 1: decision 6 out of range 0..5") {
		t.Fatalf("bad decision: %v", err)
	}
	var ce *CallError
	if !errors.As(err, &ce) || ce.Code != -1 || ce.Discarded {
		t.Fatalf("bad decision: want a kept instance and code -1, got %#v", err)
	}
	env.(core.Truncater).Truncate()
	if _, err := env.Step([]core.Action{{}, {}}); err == nil || !strings.Contains(err.Error(), "Step after the episode ended") {
		t.Fatalf("step after truncate: %v", err)
	}
}

// BenchmarkStepLBFC compares one LBF step in-process with the same step in
// the C port compiled to Wasm (default sandbox, and with the per-call
// timeout off), with the same action sequence as BenchmarkStepLBF; resets
// happen at the same points in all.
//
//	go test -run '^$' -bench StepLBFC -benchmem ./plugins/wasm/
func BenchmarkStepLBFC(b *testing.B) {
	needC(b)
	benchStepLBF(b, "lbf_c.wasm", "wasm-c")
}
