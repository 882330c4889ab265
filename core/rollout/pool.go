package rollout

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/telemetry"
)

// Job is one episode to play: the task (the env's seed) and the rollout
// (the sampling seed, see [RolloutSeed]).
type Job struct {
	Task, Rollout uint64
	// Prefix, if set, forces decisions (only [Pool.Replay] takes it):
	// Prefix[s][i] is agent i's decision at step s, or -1 to let the
	// policy choose. Steps past the prefix are the policy's.
	Prefix [][]int
}

// Pool is a set of workers, one env instance each, that plays episodes.
// It is not safe for concurrent use.
type Pool struct {
	setup   *Setup
	workers []*worker
}

// NewPool opens s.Rollout.Workers env instances (one per CPU when 0).
func NewPool(s *Setup) (*Pool, error) {
	return newPool(s, s.Rollout.NumWorkers())
}

// Workers returns the number of workers, each with its own env instance.
func (p *Pool) Workers() int { return len(p.workers) }

// Close closes the workers' envs.
func (p *Pool) Close() { p.close() }

// Sample plays the jobs with the policy, each agent sampling its decision
// from its own observation, and returns the scored results in job order
// with every decision recorded (the data of a training iteration).
func (p *Pool) Sample(ctx context.Context, jobs []Job, pol *policy.Policy) ([]EpisodeResult, error) {
	for k, j := range jobs {
		if j.Prefix != nil {
			return nil, fmt.Errorf("rollout: Sample: job %d has a forced prefix (use Replay)", k)
		}
	}
	return p.play(ctx, jobs, newActorFor("grpo", policyActor{p: pol}), true)
}

func newPool(s *Setup, n int) (*Pool, error) {
	p := &Pool{setup: s}
	for i := 0; i < n; i++ {
		w, err := newWorker(s)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("opening env for worker %d: %w", i, err)
		}
		p.workers = append(p.workers, w)
	}
	return p, nil
}

func (p *Pool) close() {
	for _, w := range p.workers {
		w.close()
	}
}

// play runs the jobs on the workers and returns the scored results in job
// order, so the outcome does not depend on the number of workers.
func (p *Pool) play(ctx context.Context, jobs []Job, mkActor func(w *worker) (actor, error), record bool) ([]EpisodeResult, error) {
	type indexed struct {
		idx int
		Job
	}
	results := make([]EpisodeResult, len(jobs))
	ch := make(chan indexed)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	episodeDone := EpisodeDoneFunc(ctx)
	for _, w := range p.workers {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			for j := range ch {
				a, err := mkActor(w)
				if err == nil && j.Prefix != nil {
					a = &replayActor{inner: a, prefix: j.Prefix}
				}
				var res EpisodeResult
				var span telemetry.Span
				if err != nil {
					res = EpisodeResult{Failed: true, Reason: err.Error()}
					res.Episode.Env, res.Episode.Seed = w.spec.Name, j.Task
				} else {
					var ectx context.Context
					ectx, span = p.setup.Telemetry.StartEpisode(ctx, w.spec.Name, j.Task, j.Rollout)
					w.traceBackends(span)
					res, err = w.run(ectx, j.Task, j.Rollout, a, record, nil)
					if err != nil {
						span.End(err)
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						continue
					}
				}
				p.setup.score(&res)
				span.Episode(res.Episode.Steps, res.Reward, res.Components, res.Failed, res.Reason)
				span.End(nil)
				results[j.idx] = res
				episodeDone()
			}
		}(w)
	}
	for i, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		ch <- indexed{i, j}
	}
	close(ch)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return results, nil
}

// score fills the reward, its components and metrics. A reward function
// that fails marks the episode failed with its reason.
func (s *Setup) score(res *EpisodeResult) {
	res.Components = map[string]float64{}
	res.Metrics = map[string]float64{}
	for k, v := range res.Episode.Metrics {
		res.Metrics[k] = v
	}
	if res.Failed {
		return
	}
	for _, r := range s.Rewards {
		c, m, err := scoreSafely(r, &res.Episode)
		if err != nil {
			res.Failed, res.Reason = true, fmt.Sprintf("reward %s: %v", r.Name(), err)
			if res.cutNote != "" {
				res.Reason += " (" + res.cutNote + ")"
			}
			return
		}
		for k, v := range c {
			res.Components[k] = v
		}
		for k, v := range m {
			res.Metrics[k] = v
		}
	}
	// Summed in name order: floating-point addition is not associative, and
	// map order would make the same seed give a different last bit.
	res.Reward = 0
	for _, k := range slices.Sorted(maps.Keys(s.Weights)) {
		res.Reward += s.Weights[k] * res.Components[k]
	}
}

// scoreSafely calls r.Score and turns a panic into an error, so that a
// faulty reward function fails its episode instead of the process.
func scoreSafely(r core.RewardFunc, ep *core.Episode) (c, m map[string]float64, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, m, err = nil, nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return r.Score(ep)
}

// FailureSummary groups the failure reasons of results with counts, most
// frequent first.
func FailureSummary(results []EpisodeResult) string {
	counts := map[string]int{}
	for _, r := range results {
		if r.Failed {
			counts[r.Reason]++
		}
	}
	type kv struct {
		k string
		n int
	}
	var list []kv
	for k, n := range counts {
		list = append(list, kv{k, n})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].k < list[j].k
	})
	var b strings.Builder
	for i, e := range list {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d other reasons", len(list)-3)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d× %s", e.n, e.k)
	}
	return b.String()
}

// newActorFor returns the actor named policy for worker w.
func newActorFor(name string, trained actor) func(w *worker) (actor, error) {
	return func(w *worker) (actor, error) {
		switch name {
		case "grpo":
			if trained == nil {
				return nil, fmt.Errorf("no trained policy")
			}
			return trained, nil
		case "random":
			return randomActor{n: len(w.spec.Decisions)}, nil
		}
		bp, ok := core.BaselineProviderOf(w.env)
		if !ok {
			return nil, fmt.Errorf("env %s offers no baseline policies (asked for %q)", w.spec.Name, name)
		}
		b, err := bp.Baseline(name)
		if err != nil {
			return nil, err
		}
		return baselineActor{b: b, name: name, n: len(w.spec.Decisions)}, nil
	}
}

// traceBackends puts the agents' LLM backends on the episode span s
// (troupe.llm.backend: "sim", "openai", "replay:openai", …, the distinct
// ones in agent order, comma-separated).
func (w *worker) traceBackends(s telemetry.Span) {
	if !s.Recording() {
		return
	}
	var names []string
	for i := range w.spec.NumAgents() {
		if n := w.setup.agentLLM(i).backendName(); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	s.SetBackend(strings.Join(names, ","))
}
