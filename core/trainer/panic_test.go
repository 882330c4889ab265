package trainer

import (
	"context"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
)

// panickyReward panics when scoring the episode of one seed.
type panickyReward struct{ seed uint64 }

func (panickyReward) Name() string         { return "toy.panicky" }
func (panickyReward) Components() []string { return []string{"extra"} }
func (p panickyReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	if ep.Seed == p.seed {
		panic("reward bug")
	}
	return map[string]float64{"extra": 0}, nil, nil
}

// panickyLLM is a real (non-sim) backend that panics on every call.
type panickyLLM struct{}

func (panickyLLM) Chat(context.Context, core.ChatRequest) (core.ChatResponse, error) {
	panic("backend bug")
}

// A reward function or an LLM backend that panics fails its episodes with
// the panic as the reason; the process and the iteration go on.
func TestPanicsFailEpisodesNotTheProcess(t *testing.T) {
	t.Run("reward", func(t *testing.T) {
		s := toySetup(2)
		bad := rollout.TrainTaskSeed(s.Seed, 0, 1)
		s.Rewards = append(s.Rewards, panickyReward{seed: bad})
		s.Train.MaxFailureRatio = 0.5
		st, results := firstIteration(t, s.Setup, s.Train)
		if st.FailedEpisodes != s.Train.GroupSize {
			t.Fatalf("%d failed episodes, want the %d of the bad task", st.FailedEpisodes, s.Train.GroupSize)
		}
		for _, r := range results {
			if r.Failed && r.Reason != "reward toy.panicky: panic: reward bug" {
				t.Fatalf("reason %q", r.Reason)
			}
		}
	})
	t.Run("llm", func(t *testing.T) {
		s := toySetup(1)
		s.Agents = []rollout.AgentLLM{{Backend: panickyLLM{}}, {Backend: panickyLLM{}}}
		s.Train.MaxFailureRatio = 1
		tr, err := New(s.Setup, s.Train)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		_, results, err := tr.Step(context.Background())
		if err != nil && !strings.Contains(err.Error(), "every episode") {
			t.Fatal(err)
		}
		failed := 0
		for _, r := range results {
			if r.Failed {
				failed++
				if !strings.Contains(r.Reason, "LLM: panic: backend bug") {
					t.Fatalf("reason %q", r.Reason)
				}
			}
		}
		if failed == 0 {
			t.Fatal("no episode failed although every LLM call panics")
		}
	})
}
