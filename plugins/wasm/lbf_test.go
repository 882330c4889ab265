package wasm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/envs/matrix"
)

// randomLegal picks a uniformly random legal decision for every agent.
func randomLegal(rng *rand.Rand, obs []core.Observation, decisions int) []core.Action {
	acts := make([]core.Action, len(obs))
	for i, o := range obs {
		var legal []int
		for d := range decisions {
			if o.Legal(d) {
				legal = append(legal, d)
			}
		}
		acts[i].Decision = legal[rng.IntN(len(legal))]
	}
	return acts
}

// Conformance: the built-in LBF env compiled to Wasm with the guest kit
// gives the same observations, rewards, flags, metrics and states as the
// same env in-process, for many seeds and random legal actions, with an
// early Truncate in some episodes.
func TestLBFWasmMatchesNative(t *testing.T) {
	seeds := make([]uint64, 150)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	var total envtest.Stats
	for _, params := range []map[string]any{
		nil, // Foraging-8x8-2p-2f-coop
		{"size": 10, "players": 3, "foods": 3, "coop": false, "sight": 2, "max_steps": 30},
		{"raw_obs": true, "max_player_level": 3, "max_steps": 20},
	} {
		t.Run(fmt.Sprint(params), func(t *testing.T) {
			native, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: lbf.Name, Params: params})
			if err != nil {
				t.Fatal(err)
			}
			st := envtest.SameTrajectories(t, native, loadEnv(t, "lbf.wasm", params, core.Sandbox{}), seeds...)
			total.Rewarded += st.Rewarded
			total.Truncations += st.Truncations
			t.Logf("%+v", st)
		})
	}
	if total.Rewarded == 0 || total.Truncations == 0 {
		t.Errorf("%+v: no reward or no truncation compared", total)
	}
}

// BenchmarkStepLBF compares one LBF step in-process with the same step in
// the Wasm module (default sandbox, and with the per-call timeout off),
// with the same action sequence; resets happen at the same points in all.
//
//	go test -run '^$' -bench StepLBF -benchmem ./plugins/wasm/
func BenchmarkStepLBF(b *testing.B) { benchStepLBF(b, "lbf.wasm", "wasm") }

// benchStepLBF steps native LBF and the given LBF module (sub-benchmarks
// named prefix and prefix-notimeout) on one fixed action sequence.
func benchStepLBF(b *testing.B, module, prefix string) {
	const nActs = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	acts := make([][]core.Action, nActs)
	for i := range acts {
		acts[i] = []core.Action{{Decision: rng.IntN(lbf.NumActions)}, {Decision: rng.IntN(lbf.NumActions)}}
	}
	run := func(b *testing.B, env core.Env) {
		seed := uint64(0)
		if _, err := env.Reset(seed); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			res, err := env.Step(acts[i%nActs])
			if err != nil {
				b.Fatal(err)
			}
			i++
			if res.Done() {
				seed++
				if _, err := env.Reset(seed); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("native", func(b *testing.B) {
		env, err := lbf.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		run(b, env)
	})
	for _, c := range []struct {
		name string
		sb   core.Sandbox
	}{{prefix, core.Sandbox{}}, {prefix + "-notimeout", core.Sandbox{CallTimeout: -1}}} {
		b.Run(c.name, func(b *testing.B) {
			run(b, startEnv(b, loadEnv(b, module, nil, c.sb)))
		})
	}
}

// BenchmarkStepMatrix shows the host and ABI overhead when the guest's own
// work is small: the built-in matrix env in-process against the same game
// written in C (examples/c-matrix), with the same actions.
//
//	go test -run '^$' -bench StepMatrix -benchmem ./plugins/wasm/
func BenchmarkStepMatrix(b *testing.B) {
	needC(b)
	rng := rand.New(rand.NewPCG(1, 2))
	acts := make([][]core.Action, 4096)
	for i := range acts {
		acts[i] = []core.Action{{Decision: rng.IntN(3)}, {Decision: rng.IntN(3)}}
	}
	run := func(b *testing.B, env core.Env) {
		env.Reset(0)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			res, err := env.Step(acts[i%len(acts)])
			if err != nil {
				b.Fatal(err)
			}
			i++
			if res.Done() {
				env.Reset(0)
			}
		}
	}
	b.Run("native", func(b *testing.B) {
		env, err := matrix.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		run(b, env)
	})
	for _, c := range []struct {
		name string
		sb   core.Sandbox
	}{{"wasm-c", core.Sandbox{}}, {"wasm-c-notimeout", core.Sandbox{CallTimeout: -1}}} {
		b.Run(c.name, func(b *testing.B) {
			run(b, startEnv(b, loadEnv(b, "matrix.wasm", nil, c.sb)))
		})
	}
}
