package rollout

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
	"github.com/troupe-dev/troupe/core/telemetry"
)

// Decision is one recorded decision of a learned policy: what the agent
// saw, what it chose and how likely that was.
type Decision struct {
	// Step is the episode step (0-based) at which the decision was made.
	Step     int
	Agent    int
	Features []float64
	Mask     []bool
	Action   int
	Logp     float64
}

// LLMCall is one recorded LLM call (kept for real backends, for export).
type LLMCall struct {
	Step       int
	Agent      int
	Decision   string
	Prompt     []core.Message
	Completion string
	Usage      core.Usage
}

// EpisodeResult is one finished, stopped or failed episode.
type EpisodeResult struct {
	Episode core.Episode
	// Failed episodes carry the reason; they are counted, never dropped.
	// An episode the runtime cut short (step limit, token budget) is not
	// failed: it is truncated (Episode.Truncated) and scored.
	Failed bool
	Reason string
	// StepLimited is true when the runtime's step limit (Config.StepLimit:
	// the smaller of the env's MaxSteps and rollout.max_steps) ended the
	// episode.
	StepLimited bool
	// Decisions are the learned policy's decisions with more than one
	// legal choice (only when recording).
	Decisions []Decision
	// States are the env's global state (core.Env.State) before each
	// step, and TeamRewards the sum of the agents' rewards of each step
	// (nil for an env that declares no EnvSpec.StepRewards), one entry per
	// step played;
	// only when recording and the env declares a state (EnvSpec.StateSize
	// > 0). Training's critic (credit = "value") reads them.
	States      [][]float64
	TeamRewards []float64
	// LLMCalls are recorded for non-sim backends.
	LLMCalls []LLMCall
	// Traffic is what the episode's LLM calls cost on the wire, failed
	// calls and failed episodes included (zero for the simulated LLM).
	Traffic core.Traffic
	// Advantages holds each agent's GRPO advantage (training only).
	Advantages []float64
	// Reward is the joint reward; Components and Metrics what the reward
	// functions returned (filled by scoring).
	Reward     float64
	Components map[string]float64
	Metrics    map[string]float64
	// cutNote explains a cut the env could not report on (no Truncater);
	// scoring adds it to the reason of a reward function that fails.
	cutNote string
}

// StepEvent is passed to an observer after every step of RunEpisode.
type StepEvent struct {
	Step      int
	Decisions []int
	Texts     []string
	Result    core.StepResult
}

// worker owns one env instance and the agents' LLMs bound to it.
type worker struct {
	setup *Setup
	env   core.Env
	spec  core.EnvSpec
	// truncater and prompter are the env's declared optional interfaces
	// (nil when it declares none).
	truncater core.Truncater
	prompter  core.Prompter
	llms      []core.LLM
	// configs are the agents' resolved LLM settings (request defaults).
	configs []llm.Config
	isSim   []bool
	// wire is true when an agent's LLM is not the simulated one: its
	// episodes report their traffic as metrics (core.MetricLLMRequests …).
	wire bool
}

func newWorker(s *Setup) (*worker, error) {
	w := &worker{setup: s}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// open (re)opens the env and binds the agents' LLMs to it.
func (w *worker) open() error {
	if w.env != nil {
		_ = w.env.Close()
		w.env = nil
	}
	e, err := w.setup.Env.Open()
	if err != nil {
		return err
	}
	if err := core.CheckCapabilities(e); err != nil {
		_ = e.Close()
		return err
	}
	w.env, w.spec = e, e.Spec()
	w.truncater, _ = core.TruncaterOf(e)
	w.prompter, _ = core.PrompterOf(e)
	sim, _ := core.SimulatorOf(e)
	n := w.spec.NumAgents()
	w.llms, w.configs, w.isSim = make([]core.LLM, n), make([]llm.Config, n), make([]bool, n)
	for i := 0; i < n; i++ {
		a := w.setup.agentLLM(i)
		w.configs[i] = a.config()
		if a.Backend != nil {
			w.llms[i] = a.Backend
			w.wire = true
			continue
		}
		w.isSim[i] = true
		if sim != nil {
			l, err := llm.NewSim(sim, w.spec, w.configs[i].Sim, nil)
			if err != nil {
				return fmt.Errorf("agent %d: sim LLM: %w", i, err)
			}
			w.llms[i] = l
		}
	}
	if tel := w.setup.Telemetry; tel.Enabled() {
		for i, l := range w.llms {
			a := w.setup.agentLLM(i)
			base := a.Config.BaseURL
			if c, ok := a.Backend.(llm.Client); ok {
				base = c.Config().BaseURL
			}
			w.llms[i] = tel.WrapLLM(l, telemetry.Caller{AgentName: w.spec.Agents[i], AgentID: i, Backend: a.backendName(), BaseURL: base})
		}
	}
	return nil
}

func (w *worker) close() {
	if w.env != nil {
		_ = w.env.Close()
	}
}

func (w *worker) maxSteps() int { return w.setup.Rollout.StepLimit(w.spec) }

// run plays one episode. A failure of the env or an LLM is returned as a
// failed result (and the env is reopened), never as an error; the error is
// reserved for cancellation and for an env that cannot be reopened.
func (w *worker) run(ctx context.Context, taskSeed, rollout uint64, a actor, record bool, observe func(StepEvent)) (EpisodeResult, error) {
	res, err := w.play(ctx, taskSeed, rollout, a, record, observe)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Failed, res.Reason = true, err.Error()
		if oerr := w.open(); oerr != nil {
			return res, fmt.Errorf("reopening env after a failed episode: %w", oerr)
		}
	}
	return res, nil
}

func (w *worker) play(ctx context.Context, taskSeed, rollout uint64, a actor, record bool, observe func(StepEvent)) (res EpisodeResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in env %s: %v", w.spec.Name, r)
		}
	}()
	n := w.spec.NumAgents()
	nd := len(w.spec.Decisions)
	ep := &res.Episode
	ep.Env, ep.Seed = w.spec.Name, taskSeed
	ep.AgentReturns = make([]float64, n)
	ep.AgentUsage = make([]core.Usage, n)
	obs, err := w.env.Reset(taskSeed)
	if err != nil {
		return res, fmt.Errorf("env %s: reset(%d): %w", w.spec.Name, taskSeed, err)
	}
	if err := w.spec.CheckObservations(obs); err != nil {
		return res, err
	}
	rng := rand.New(rand.NewPCG(rollout, 0x616374))
	decisions, logps := make([]int, n), make([]float64, n)
	scratch := make([]float64, nd)
	actions := make([]core.Action, n)
	var last core.StepResult
	llmCalls, tokens := 0, 0
	for step := 0; ; step++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if step >= w.maxSteps() {
			// The runtime's step limit: the episode is cut and scored like
			// any other (see truncate).
			res.StepLimited = true
			if last, err = w.truncate(&res, last); err != nil {
				return res, err
			}
			break
		}
		if err := a.act(obs, rng, decisions, logps, scratch); err != nil {
			return res, err
		}
		if record && w.spec.StateSize > 0 {
			res.States = append(res.States, slices.Clone(w.env.State()))
		}
		if record {
			for i, o := range obs {
				if o.NumLegal(nd) > 1 {
					res.Decisions = append(res.Decisions, Decision{
						Step: step, Agent: i, Features: append([]float64(nil), o.Features...),
						Mask: copyMask(o.Mask, nd), Action: decisions[i], Logp: logps[i],
					})
				}
			}
		}
		for i := range actions {
			actions[i] = core.Action{Decision: decisions[i]}
		}
		calls, traffic, stopped, err := w.writeTexts(ctx, rollout, step, obs, decisions, actions, ep.AgentUsage)
		res.Traffic = res.Traffic.Add(traffic)
		for _, c := range calls {
			llmCalls++
			tokens += c.Usage.Tokens()
			ep.AgentUsage[c.Agent] = ep.AgentUsage[c.Agent].Add(c.Usage)
			if c.Usage.Backend != "sim" {
				res.LLMCalls = append(res.LLMCalls, c)
			}
		}
		if err != nil {
			return res, err
		}
		if stopped {
			// A call of this step did not fit in the token budget: the
			// episode ends before it, and the step is not played.
			ep.BudgetStopped = true
			if last, err = w.truncate(&res, last); err != nil {
				return res, err
			}
			break
		}
		last, err = w.env.Step(actions)
		if err != nil {
			return res, fmt.Errorf("env %s: step %d: %w", w.spec.Name, step, err)
		}
		ep.Steps++
		if err := addRewards(ep, last.Rewards); err != nil {
			return res, fmt.Errorf("env %s: step %d: %w", w.spec.Name, step, err)
		}
		if record && w.spec.StateSize > 0 && w.spec.StepRewards {
			team := 0.0
			for _, r := range last.Rewards {
				team += r
			}
			res.TeamRewards = append(res.TeamRewards, team)
		}
		if observe != nil {
			texts := make([]string, n)
			for i := range actions {
				texts[i] = actions[i].Text
			}
			observe(StepEvent{Step: step, Decisions: append([]int(nil), decisions...), Texts: texts, Result: last})
		}
		if last.Done() {
			break
		}
		if w.overBudget(ep.AgentUsage) {
			ep.BudgetStopped = true
			if last, err = w.truncate(&res, last); err != nil {
				return res, err
			}
			break
		}
		obs = last.Observations
		if err := w.spec.CheckObservations(obs); err != nil {
			return res, fmt.Errorf("step %d: %w", step, err)
		}
	}
	ep.Terminated, ep.Truncated = last.Terminated, last.Truncated
	ep.Artifacts = last.Artifacts
	ep.Metrics = make(map[string]float64, len(last.Metrics)+3)
	for k, v := range last.Metrics {
		ep.Metrics[k] = v
	}
	ep.Metrics[core.MetricLLMCalls] = float64(llmCalls)
	ep.Metrics[core.MetricLLMTokens] = float64(tokens)
	if _, ok := ep.Metrics[core.MetricTokens]; !ok {
		ep.Metrics[core.MetricTokens] = float64(tokens)
	}
	ep.Metrics[core.MetricBudgetStopped] = 0
	if ep.BudgetStopped {
		ep.Metrics[core.MetricBudgetStopped] = 1
	}
	if w.wire {
		for k, v := range res.Traffic.Metrics() {
			ep.Metrics[k] = v
		}
	}
	return res, nil
}

// truncate ends an episode the runtime cuts short (its step limit or a
// token budget). An env that declares [core.CapTruncate] is asked for its
// final result (rewards, metrics and artifacts of the partial work), which
// replaces last. An env that does not is scored from last, the result of
// its last step, marked truncated: its per-step rewards up to the cut are
// complete (the usual time-limit truncation of RL), and a reward function
// that needs what only a finished episode reports fails the episode with
// its own reason, which the scoring completes with the cut (see
// [Setup.score]). Either way the episode is not dropped: it is scored, or
// counted as failed with a reason.
func (w *worker) truncate(res *EpisodeResult, last core.StepResult) (core.StepResult, error) {
	if w.truncater != nil {
		var err error
		if last, err = w.truncater.Truncate(); err != nil {
			return last, fmt.Errorf("env %s: truncate: %w", w.spec.Name, err)
		}
		if err := addRewards(&res.Episode, last.Rewards); err != nil {
			return last, fmt.Errorf("env %s: truncate: %w", w.spec.Name, err)
		}
	} else {
		res.cutNote = fmt.Sprintf("the runtime cut the episode after %d steps and env %s declares no core.CapTruncate, so it was scored from its last step's result", res.Episode.Steps, w.spec.Name)
	}
	last.Truncated = true
	return last, nil
}

// addRewards adds per-step rewards (nil: none) to the episode's returns.
func addRewards(ep *core.Episode, rewards []float64) error {
	if rewards == nil {
		return nil
	}
	if len(rewards) != len(ep.AgentReturns) {
		return fmt.Errorf("%d rewards for %d agents", len(rewards), len(ep.AgentReturns))
	}
	for i, r := range rewards {
		ep.AgentReturns[i] += r
	}
	return nil
}

// overBudget reports whether usage has reached a token budget: the
// team's, or an agent's.
func (w *worker) overBudget(usage []core.Usage) bool {
	b := w.setup.Budget
	total := 0
	for _, u := range usage {
		total += u.Tokens()
		if b.MaxTokensPerAgent > 0 && u.Tokens() >= b.MaxTokensPerAgent {
			return true
		}
	}
	return b.MaxTokens > 0 && total >= b.MaxTokens
}

// budgeted reports whether a token budget is set.
func (w *worker) budgeted() bool {
	return w.setup.Budget.MaxTokens > 0 || w.setup.Budget.MaxTokensPerAgent > 0
}

// fit returns the max_tokens agent's call req may have within the token
// budgets, given what the agents have spent: what is left of the team's
// budget and of the agent's, less the prompt (estimated as the backends
// do, llm.EstimatePromptTokens), and at most req.MaxTokens. ok is false
// when not one completion token fits.
func (w *worker) fit(req core.ChatRequest, agent int, spent []core.Usage) (maxTokens int, ok bool) {
	b := w.setup.Budget
	left := math.MaxInt
	if b.MaxTokens > 0 {
		total := 0
		for _, u := range spent {
			total += u.Tokens()
		}
		left = b.MaxTokens - total
	}
	if b.MaxTokensPerAgent > 0 {
		left = min(left, b.MaxTokensPerAgent-spent[agent].Tokens())
	}
	left -= llm.EstimatePromptTokens(req.Messages)
	if left < 1 {
		return 0, false
	}
	return min(req.MaxTokens, left), true
}

// writeTexts asks each agent whose decision needs text for it, from the
// agent's own context, and returns the calls made, in agent order, and
// their traffic (failed calls included). Simulated calls run in agent
// order (they are cheap and must be deterministic); real calls run
// concurrently. Under a token budget every call runs in agent order
// instead, each given at most what is left of the budget after the
// agents' spending so far (spent) and the calls before it (see fit); a
// call that cannot fit is not made, and stopped reports that the step
// must not be played. So an episode overshoots its budget by at most
// what the one call that reached it used beyond its estimate.
func (w *worker) writeTexts(ctx context.Context, rollout uint64, step int, obs []core.Observation, decisions []int, actions []core.Action, spent []core.Usage) (calls []LLMCall, traffic core.Traffic, stopped bool, err error) {
	var reqs []core.ChatRequest
	var who []int
	for i, d := range decisions {
		ds := w.spec.Decisions[d]
		if !ds.NeedsText {
			continue
		}
		if w.llms[i] == nil {
			return nil, traffic, false, fmt.Errorf("agent %d: decision %s needs text but the agent has no LLM (env %s is not a simulator)", i, ds.Name, w.spec.Name)
		}
		reqs = append(reqs, w.request(i, d, rollout, step, obs[i].Text))
		who = append(who, i)
	}
	if len(reqs) == 0 {
		return nil, traffic, false, nil
	}
	if w.budgeted() {
		spent = slices.Clone(spent)
		for k, req := range reqs {
			i := who[k]
			var ok bool
			if req.MaxTokens, ok = w.fit(req, i, spent); !ok {
				return calls, traffic, true, nil
			}
			c, t, err := w.chat(ctx, step, i, req, actions)
			traffic = traffic.Add(t)
			if err != nil {
				return calls, traffic, false, err
			}
			spent[i] = spent[i].Add(c.Usage)
			calls = append(calls, c)
		}
		return calls, traffic, false, nil
	}
	calls = make([]LLMCall, len(reqs))
	traffics := make([]core.Traffic, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for k, req := range reqs {
		i := who[k]
		if w.isSim[i] {
			calls[k], traffics[k], errs[k] = w.chat(ctx, step, i, req, actions)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			calls[k], traffics[k], errs[k] = w.chat(ctx, step, i, req, actions)
		}()
	}
	wg.Wait()
	for _, t := range traffics {
		traffic = traffic.Add(t)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, traffic, false, err
	}
	return calls, traffic, false, nil
}

// chat makes agent's call req and puts its text and usage in
// actions[agent]. Its traffic is returned whether it succeeds or fails
// (an *llm.CallError carries a failed call's).
func (w *worker) chat(ctx context.Context, step, agent int, req core.ChatRequest, actions []core.Action) (c LLMCall, t core.Traffic, err error) {
	// A panicking backend fails the episode, not the process (concurrent
	// calls run outside play's recover).
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agent %d: %s: LLM: panic: %v", agent, req.Decision, r)
		}
	}()
	resp, err := w.llms[agent].Chat(ctx, req)
	if err != nil {
		var ce *llm.CallError
		if errors.As(err, &ce) {
			t = ce.Traffic
		}
		return c, t, fmt.Errorf("agent %d: %s: LLM: %w", agent, req.Decision, err)
	}
	actions[agent].Text, actions[agent].Usage = resp.Text, resp.Usage
	return LLMCall{Step: step, Agent: agent, Decision: req.Decision, Prompt: req.Messages, Completion: resp.Text, Usage: resp.Usage}, resp.Traffic, nil
}

func (w *worker) request(agent, decision int, rollout uint64, step int, ownText string) core.ChatRequest {
	ds := w.spec.Decisions[decision]
	var req core.ChatRequest
	if w.prompter != nil {
		req = w.prompter.Prompt(agent, decision)
	} else {
		req.Messages = []core.Message{
			{Role: "system", Content: fmt.Sprintf("You are %s, one agent of a team working on the task %q.", w.spec.Agents[agent], w.spec.Name)},
			{Role: "user", Content: ownText + "\n\nYour decision: " + ds.Name},
		}
	}
	l := w.configs[agent]
	if req.Model == "" {
		req.Model = l.Model
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = l.MaxTokens
	}
	if req.Temperature == 0 {
		req.Temperature = l.Temperature
	}
	req.Agent, req.Decision, req.Tier = agent, ds.Name, ds.Tier
	req.Seed = llmSeed(rollout, step, agent)
	return req
}

func copyMask(m []bool, nd int) []bool {
	if m == nil {
		out := make([]bool, nd)
		for i := range out {
			out[i] = true
		}
		return out
	}
	return append([]bool(nil), m...)
}
