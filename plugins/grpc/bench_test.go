package grpcplugin

import (
	"math/rand/v2"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/lbf"
)

// BenchmarkStepLBF compares one joint step of LBF 8x8-2p-2f in-process with
// the same step through a go-plugin process (encode, gRPC round trip over a
// Unix socket, decode). Agents take random legal actions; episodes are long
// (max_steps 100000) so Resets do not count.
//
//	go test -run '^$' -bench StepLBF -benchmem ./plugins/grpc/
func BenchmarkStepLBF(b *testing.B) {
	params := map[string]any{"max_steps": 100000}
	run := func(b *testing.B, env core.Env) {
		spec := env.Spec()
		rng := rand.New(rand.NewPCG(1, 2))
		obs, err := env.Reset(1)
		if err != nil {
			b.Fatal(err)
		}
		actions := make([]core.Action, spec.NumAgents())
		legal := make([]int, 0, len(spec.Decisions))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			for i := range actions {
				legal = legal[:0]
				for d := range spec.Decisions {
					if obs[i].Legal(d) {
						legal = append(legal, d)
					}
				}
				actions[i].Decision = legal[rng.IntN(len(legal))]
			}
			r, err := env.Step(actions)
			if err != nil {
				b.Fatal(err)
			}
			obs = r.Observations
			if r.Done() {
				if obs, err = env.Reset(rng.Uint64()); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("native", func(b *testing.B) {
		env, err := lbf.New(params)
		if err != nil {
			b.Fatal(err)
		}
		defer env.Close()
		run(b, env)
	})
	b.Run("go-plugin", func(b *testing.B) {
		src, err := (&Loader{}).LoadEnv(b.Context(), ref(bin.lbf, params))
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		env, err := src.Open()
		if err != nil {
			b.Fatal(err)
		}
		defer env.Close()
		run(b, env)
	})
}
