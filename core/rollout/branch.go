package rollout

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/policy"
)

// Replay plays jobs whose Prefix forces the first steps' decisions and
// lets the policy sample the rest, each agent from its own observation;
// it returns the scored results in job order, without recorded decisions.
// This is how training branches an episode: the env is Reset with the
// episode's task seed and fed the recorded decisions up to a branch point
// (envs must replay: same seed and same actions give the same
// observations, masks, rewards and metrics, see [core.Env]), one agent's
// decision is changed there, and the policy continues.
//
// The policy draws from the job's rollout generator at every step, forced
// or not, exactly as [Pool.Sample] does. So a replay with the rollout seed
// of the recorded episode reproduces the episode bit for bit up to the
// branch point, and after it the continuation uses the same random numbers
// as the recorded one (common random numbers: when the branch changes
// nothing downstream, the continuation is the recorded one). Texts for
// decisions that need them are written again by the agents' LLMs with the
// same per-call seeds, which reproduces the simulated LLM's texts; a real
// LLM's replies are not recorded for replay.
//
// A forced decision that is not legal in the replayed observation fails
// the episode: the env did not replay the recorded episode.
func (p *Pool) Replay(ctx context.Context, jobs []Job, pol *policy.Policy) ([]EpisodeResult, error) {
	return p.play(ctx, jobs, newActorFor("grpo", policyActor{p: pol}), false)
}

// replayActor forces the decisions of a prefix over an inner actor. The
// inner actor acts first at every step, so it consumes the generator as it
// would unforced.
type replayActor struct {
	inner  actor
	prefix [][]int
	step   int
}

func (a *replayActor) act(obs []core.Observation, rng *rand.Rand, decisions []int, logps []float64, scratch []float64) error {
	if err := a.inner.act(obs, rng, decisions, logps, scratch); err != nil {
		return err
	}
	step := a.step
	a.step++
	if step >= len(a.prefix) {
		return nil
	}
	forced := a.prefix[step]
	if len(forced) != len(obs) {
		return fmt.Errorf("replay: step %d: the prefix has %d decisions for %d agents", step, len(forced), len(obs))
	}
	for i, d := range forced {
		if d < 0 {
			continue
		}
		if d >= len(scratch) || !obs[i].Legal(d) {
			return fmt.Errorf("replay: step %d: agent %d: recorded decision %d is not legal in the replayed observation (the env does not replay the same episode for the same seed and actions)", step, i, d)
		}
		// The log-probability of a forced decision is not the policy's
		// draw; replays record no decisions, so nothing reads it.
		decisions[i], logps[i] = d, 0
	}
	return nil
}
