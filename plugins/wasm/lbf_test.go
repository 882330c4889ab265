package wasm

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/troupe-dev/troupe/core"
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
// same env in-process, for many seeds and random legal actions.
func TestLBFWasmMatchesNative(t *testing.T) {
	for _, params := range []map[string]any{
		nil, // Foraging-8x8-2p-2f-coop
		{"size": 10, "players": 3, "foods": 3, "coop": false, "sight": 2, "max_steps": 30},
		{"raw_obs": true, "max_player_level": 3, "max_steps": 20},
	} {
		t.Run(fmt.Sprint(params), func(t *testing.T) {
			src := loadEnv(t, "lbf.wasm", params, core.Sandbox{})
			native, err := lbf.New(params)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(src.Spec(), native.Spec()) {
				t.Fatalf("spec:\n wasm   %+v\n native %+v", src.Spec(), native.Spec())
			}
			env := startEnv(t, src)
			nd := len(native.Spec().Decisions)
			steps := 0
			for seed := uint64(0); seed < 150; seed++ {
				rng := rand.New(rand.NewPCG(seed, 99))
				wo, err := env.Reset(seed)
				if err != nil {
					t.Fatal(err)
				}
				no, _ := native.Reset(seed)
				if !reflect.DeepEqual(wo, no) {
					t.Fatalf("seed %d reset:\n wasm   %+v\n native %+v", seed, wo, no)
				}
				for {
					acts := randomLegal(rng, no, nd)
					wr, err := env.Step(acts)
					if err != nil {
						t.Fatalf("seed %d step %d: %v", seed, steps, err)
					}
					nr, _ := native.Step(acts)
					steps++
					sameStep(t, fmt.Sprintf("seed %d", seed), wr, nr)
					if ws, ns := env.State(), native.State(); !reflect.DeepEqual(ws, ns) {
						t.Fatalf("seed %d state %v, native %v", seed, ws, ns)
					}
					no = nr.Observations
					if nr.Done() {
						break
					}
				}
			}
			t.Logf("%d steps identical", steps)
		})
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
