package rollout

import (
	"context"
	"fmt"

	"github.com/troupe-dev/troupe/core/policy"
)

// RunEpisode plays one episode with decentralized execution: each agent
// decides from its own observation with the trained policy (greedy; a nil
// policy means the named baseline or "random"), and its text comes from
// its own LLM. observe, if set, sees every step.
func RunEpisode(ctx context.Context, s Setup, trained *policy.Policy, baseline string, seed uint64, observe func(StepEvent)) (EpisodeResult, error) {
	if err := s.Validate(); err != nil {
		return EpisodeResult{}, err
	}
	w, err := newWorker(&s)
	if err != nil {
		return EpisodeResult{}, err
	}
	defer w.close()
	name := baseline
	var a actor
	if trained != nil {
		if err := checkPolicyFits(trained, w.spec.ObsSize, len(w.spec.Decisions), w.spec.NumAgents()); err != nil {
			return EpisodeResult{}, err
		}
		name, a = "grpo", policyActor{p: trained, greedy: true}
	} else if name == "" {
		name = "random"
	}
	act, err := newActorFor(name, a)(w)
	if err != nil {
		return EpisodeResult{}, err
	}
	ectx, span := s.Telemetry.StartEpisode(ctx, w.spec.Name, seed, RolloutSeed(seed, 0))
	w.traceBackends(span)
	res, err := w.run(ectx, seed, RolloutSeed(seed, 0), act, false, observe)
	if err != nil {
		span.End(err)
		return res, err
	}
	s.score(&res)
	span.Episode(res.Episode.Steps, res.Reward, res.Components, res.Failed, res.Reason)
	span.End(nil)
	if res.Failed {
		return res, fmt.Errorf("episode failed: %s", res.Reason)
	}
	return res, nil
}
