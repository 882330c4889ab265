package writing_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/writing"
	"github.com/troupe-dev/troupe/rewards"
)

// Five simulated writers draft a short RFC at once without reading the
// house style (the parallel_naive baseline), stepping the env the way the
// runtime does with the sim backend: Prompt, then Simulate, then Step with
// the text and its modelled latency. As the runtime does, the
// "writing.consistency" reward then scores the document the env reports.
func Example() {
	env, err := writing.New(map[string]any{"rfcs": []string{"2707-dotdot-patterns"}})
	if err != nil {
		panic(err)
	}
	obs, err := env.Reset(1)
	if err != nil {
		panic(err)
	}
	team, _ := env.Baseline(writing.BaselineParallelNaive)
	for step := 0; ; step++ {
		decisions, err := team.Act(obs)
		if err != nil {
			panic(err)
		}
		actions := make([]core.Action, len(decisions))
		for i, d := range decisions {
			actions[i].Decision = d
			if env.Spec().Decisions[d].NeedsText {
				req := env.Prompt(i, d)
				c, err := env.Simulate(i, d, req, rand.New(rand.NewPCG(1, uint64(step*8+i))))
				if err != nil {
					panic(err)
				}
				actions[i].Text = c.Text
				actions[i].Usage = core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens,
					Backend: "sim"}
			}
		}
		res, err := env.Step(actions)
		if err != nil {
			panic(err)
		}
		if res.Done() {
			m := res.Metrics
			fmt.Printf("%v of %v units drafted by %d writers\n", m["units_drafted"], m["units"], len(obs))
			fmt.Println("faster than one writer:", m["makespan_s"] < m["reference_makespan_s"]/2)
			reward, err := rewards.NewWritingConsistency(nil)
			if err != nil {
				panic(err)
			}
			_, scores, err := reward.Score(&core.Episode{Artifacts: res.Artifacts, Metrics: m})
			if err != nil {
				panic(err)
			}
			fmt.Println("consistent as one writer:", scores["consistency"] >= 0.97)
			break
		}
		obs = res.Observations
	}
	// Output:
	// 9 of 9 units drafted by 5 writers
	// faster than one writer: true
	// consistent as one writer: false
}
