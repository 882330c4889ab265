// Package envtest checks that an env keeps the contract between envs and
// the runtime, for the tests of env authors and of env loaders, as
// net/http/httptest does for HTTP handlers.
//
// [Check] plays a few episodes of a source and reports the first breach:
// a spec that does not validate, instances whose spec differs from the
// source's, observations of the wrong shape or with no legal decision, a
// trajectory that the same seed and the same actions do not reproduce (on
// another instance, or on the same instance replaying a prefix of an
// episode it played and branching off it, as training does), a declared
// capability that is missing or does not work. [SameTrajectories]
// plays the same episodes on two sources, such as one env loaded natively
// and as a plugin, and reports the first difference.
//
// Both drive the env as the runtime does: decisions drawn uniformly among
// the legal ones from a generator seeded by the task seed, or from the
// env's baselines; text for the decisions that need it from the env's
// simulator (through its prompter when it has one), or a fixed text when
// it has none; a Truncate in the middle of some episodes when the env
// declares core.CapTruncate.
package envtest

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// TB is what Check and SameTrajectories need of a test: *testing.T and
// *testing.B are TBs. They report the first breach with one Errorf call and
// return.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// Text is the text an action carries for a decision that needs text when
// the env has no simulator.
const Text = "envtest: the text of a decision"

// Check opens two instances of src and plays, on both in lockstep, three
// episodes with random legal decisions, one episode with each baseline the
// env declares, and one episode cut short by Truncate if it declares
// core.CapTruncate. One instance first plays an episode of its own, so the
// comparison also shows that Reset starts each episode afresh. Last, it
// checks the replay that counterfactual credit relies on: instance 1 plays
// an episode, then both instances replay its first half with the recorded
// actions (observations, masks, rewards, states, metrics and artifacts
// must equal the recorded ones to the bit), one agent's decision is
// changed at the branch step, and both play on in lockstep. Check reports
// through t the first breach of the contract and closes what it opened.
func Check(t TB, src core.EnvSource) {
	t.Helper()
	if err := check(src); err != nil {
		t.Errorf("envtest.Check: %v", err)
	}
}

func check(src core.EnvSource) (err error) {
	spec := src.Spec()
	if err := spec.Validate(); err != nil {
		return err
	}
	a, b, err := openPair(src, src)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closePair(a, b)) }()
	if bp, ok := core.BaselineProviderOf(a); ok {
		if _, err := bp.Baseline("envtest: no such baseline"); err == nil {
			return fmt.Errorf("env %s: Baseline of an unknown name returned no error", spec.Name)
		}
	}
	warmUp := &pair{spec: spec, a: b, b: b, names: [2]string{"instance 2", "instance 2"}}
	if _, err := warmUp.play(plan{seed: 99, truncateAt: -1}); err != nil {
		return err
	}
	p := &pair{spec: spec, a: a, b: b, names: [2]string{"instance 1", "instance 2"}}
	plans := []plan{{seed: 1, truncateAt: -1}, {seed: 2, truncateAt: -1}, {seed: 3, truncateAt: -1}}
	if spec.Capabilities.Has(core.CapTruncate) {
		plans = append(plans, plan{seed: 4, truncateAt: 1})
	}
	if spec.Capabilities.Has(core.CapBaseline) {
		for i, name := range spec.Baselines {
			plans = append(plans, plan{seed: uint64(5 + i), baseline: name, truncateAt: -1})
		}
	}
	for _, pl := range plans {
		if _, err := p.play(pl); err != nil {
			return err
		}
	}
	return p.branch(7)
}

// branch plays an episode of seed on a with random legal decisions,
// recording it; then on a and b in lockstep replays the recorded actions
// of its first half, comparing each observation, result and state with
// the recording to the bit; changes one agent's decision at the branch
// step to another legal one; and plays on with random legal decisions, a
// and b agreeing. An env that remembered the recorded episode (instead of
// replaying it from the seed and the actions) breaks the lockstep at the
// branch.
func (p *pair) branch(seed uint64) (err error) {
	spec := p.spec
	defer func() {
		if err != nil {
			err = fmt.Errorf("env %s: seed %d replayed and branched: %w", spec.Name, seed, err)
		}
	}()
	maxSteps := spec.MaxSteps
	if maxSteps == 0 {
		maxSteps = 1000 // the runtime's default
	}
	// 1. Record an episode on a.
	solo := &pair{spec: spec, a: p.a, b: p.a, names: [2]string{"instance 1", "instance 1"}}
	rng := rand.New(rand.NewPCG(seed, 0x7265706c6179)) // "replay"
	obs, err := p.a.Reset(seed)
	if err != nil {
		return fmt.Errorf("recording: Reset: %w", err)
	}
	first := cloneObservations(obs)
	var actions [][]core.Action
	var states [][]float64
	var results []core.StepResult
	for step := 0; step < maxSteps; step++ {
		states = append(states, slices.Clone(p.a.State()))
		acts, err := solo.act(rng, seed, step, obs, obs, nil, nil)
		if err != nil {
			return fmt.Errorf("recording: step %d: %w", step, err)
		}
		r, err := p.a.Step(acts)
		if err != nil {
			return fmt.Errorf("recording: step %d: Step: %w", step, err)
		}
		actions, results = append(actions, acts), append(results, cloneResult(r))
		if r.Done() {
			break
		}
		obs = r.Observations
	}
	if len(actions) == 0 {
		return nil
	}
	// 2. Replay the first half on a and b, against the recording.
	rec := &pair{spec: spec, a: p.a, b: p.a, names: [2]string{"recorded", "replayed"}}
	oa, err := p.a.Reset(seed)
	if err != nil {
		return fmt.Errorf("%s: Reset: %w", p.names[0], err)
	}
	ob, err := p.b.Reset(seed)
	if err != nil {
		return fmt.Errorf("%s: Reset: %w", p.names[1], err)
	}
	if err := p.observed("Reset", oa, ob); err != nil {
		return err
	}
	if err := rec.sameObservations("Reset", first, oa); err != nil {
		return err
	}
	m := len(actions) / 2
	for step := 0; step < m; step++ {
		at := fmt.Sprintf("replayed step %d", step)
		if err := p.sameState(at); err != nil {
			return err
		}
		if sa := p.a.State(); !sameFloats(states[step], sa) {
			return fmt.Errorf("%s: states differ:\n recorded %v\n replayed %v", at, states[step], sa)
		}
		ra, rb, err := both(p, "Step", func() (core.StepResult, error) { return p.a.Step(actions[step]) },
			func() (core.StepResult, error) { return p.b.Step(actions[step]) })
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if err := p.stepped(at, ra, rb); err != nil {
			return err
		}
		if err := rec.sameObservations(at, results[step].Observations, ra.Observations); err != nil {
			return err
		}
		if err := rec.sameResult(at, results[step], ra); err != nil {
			return err
		}
		oa, ob = ra.Observations, rb.Observations
	}
	// 3. Branch: the first agent with a choice takes another legal
	// decision; then both play on.
	acts := slices.Clone(actions[m])
	for i, o := range oa {
		if o.NumLegal(len(spec.Decisions)) < 2 {
			continue
		}
		d := (acts[i].Decision + 1) % len(spec.Decisions)
		for !o.Legal(d) {
			d = (d + 1) % len(spec.Decisions)
		}
		acts[i] = core.Action{Decision: d}
		if spec.Decisions[d].NeedsText {
			text, usage, err := p.write(i, d, o.Text, rand.New(rand.NewPCG(seed, uint64(m)<<16|uint64(i))))
			if err != nil {
				return fmt.Errorf("branch step %d: agent %d: %w", m, i, err)
			}
			acts[i].Text, acts[i].Usage = text, usage
		}
		break
	}
	for step := m; step < maxSteps; step++ {
		at := fmt.Sprintf("branched step %d", step)
		if err := p.sameState(at); err != nil {
			return err
		}
		if step > m {
			if acts, err = p.act(rng, seed, step, oa, ob, nil, nil); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
		ra, rb, err := both(p, "Step", func() (core.StepResult, error) { return p.a.Step(acts) },
			func() (core.StepResult, error) { return p.b.Step(acts) })
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if ra.Done() {
			return p.finished(at, ra, rb)
		}
		if err := p.stepped(at, ra, rb); err != nil {
			return err
		}
		oa, ob = ra.Observations, rb.Observations
	}
	return nil
}

// cloneObservations copies observations, so that an env reusing its
// buffers cannot change a recording.
func cloneObservations(obs []core.Observation) []core.Observation {
	out := make([]core.Observation, len(obs))
	for i, o := range obs {
		out[i] = core.Observation{Features: slices.Clone(o.Features), Mask: slices.Clone(o.Mask), Text: o.Text}
	}
	return out
}

// cloneResult copies a step result's observations, rewards and maps.
func cloneResult(r core.StepResult) core.StepResult {
	r.Observations = cloneObservations(r.Observations)
	r.Rewards = slices.Clone(r.Rewards)
	r.Metrics = maps.Clone(r.Metrics)
	r.Artifacts = maps.Clone(r.Artifacts)
	return r
}

// Stats says what SameTrajectories compared, for tests that require the
// comparison to have covered enough.
type Stats struct {
	// Episodes played, Steps taken, episodes Ended by the env (terminated
	// or truncated by it), Truncations requested, steps that Rewarded an
	// agent with a nonzero reward, and episodes played by a Baseline.
	Episodes, Steps, Ended, Truncations, Rewarded, Baseline int
}

// SameTrajectories plays one episode per seed on an instance of a and one
// of b in lockstep with the same actions, and reports through t the first
// difference: in the specs, observations, rewards, episode ends, states,
// metrics, artifacts, prompts or baseline decisions (floating-point values
// must be equal to the bit). Every fifth episode is cut short by Truncate
// after one to three steps when the env declares core.CapTruncate, and
// every fourth is played by one
// of its baselines when it declares core.CapBaseline. With no seeds it
// plays seeds 1 to 20.
//
// Text for decisions that need it comes from a's simulator (or is [Text])
// and goes to both: the plugin hosts give their plugin's simulator a
// generator derived from the runtime's, so the simulators of two loaders
// need not agree on the same generator.
func SameTrajectories(t TB, a, b core.EnvSource, seeds ...uint64) Stats {
	t.Helper()
	st, err := sameTrajectories(a, b, seeds)
	if err != nil {
		t.Errorf("envtest.SameTrajectories: %v", err)
	}
	return st
}

func sameTrajectories(a, b core.EnvSource, seeds []uint64) (st Stats, err error) {
	spec := a.Spec()
	if err := spec.Validate(); err != nil {
		return st, err
	}
	if sb := b.Spec(); !reflect.DeepEqual(spec, sb) {
		return st, fmt.Errorf("the specs differ:\n a: %+v\n b: %+v", spec, sb)
	}
	ea, eb, err := openPair(a, b)
	if err != nil {
		return st, err
	}
	defer func() { err = errors.Join(err, closePair(ea, eb)) }()
	if len(seeds) == 0 {
		for s := uint64(1); s <= 20; s++ {
			seeds = append(seeds, s)
		}
	}
	p := &pair{spec: spec, a: ea, b: eb, names: [2]string{"a", "b"}}
	for k, seed := range seeds {
		pl := plan{seed: seed, truncateAt: -1}
		switch {
		case k%5 == 4 && spec.Capabilities.Has(core.CapTruncate):
			pl.truncateAt = 1 + rand.New(rand.NewPCG(seed, 0x7472756e63)).IntN(3)
		case k%4 == 3 && spec.Capabilities.Has(core.CapBaseline) && len(spec.Baselines) > 0:
			pl.baseline = spec.Baselines[(k/4)%len(spec.Baselines)]
		}
		ep, err := p.play(pl)
		st.Episodes++
		st.Steps += ep.Steps
		st.Rewarded += ep.Rewarded
		if ep.Ended > 0 {
			st.Ended++
		}
		if ep.Truncations > 0 {
			st.Truncations++
		}
		if pl.baseline != "" {
			st.Baseline++
		}
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// openPair opens an instance of each source and checks it against the
// source's spec and its declared capabilities.
func openPair(a, b core.EnvSource) (core.Env, core.Env, error) {
	ea, err := open(a)
	if err != nil {
		return nil, nil, err
	}
	eb, err := open(b)
	if err != nil {
		_ = ea.Close()
		return nil, nil, err
	}
	return ea, eb, nil
}

func open(src core.EnvSource) (core.Env, error) {
	spec := src.Spec()
	e, err := src.Open()
	if err != nil {
		return nil, fmt.Errorf("env %s: Open: %w", spec.Name, err)
	}
	if got := e.Spec(); !reflect.DeepEqual(got, spec) {
		_ = e.Close()
		return nil, fmt.Errorf("env %s: an instance's spec differs from the source's:\n instance %+v\n source   %+v", spec.Name, got, spec)
	}
	if err := core.CheckCapabilities(e); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}

func closePair(a, b core.Env) error {
	return errors.Join(a.Close(), b.Close())
}

// plan is one episode to play.
type plan struct {
	seed uint64
	// baseline, if set, picks the decisions; else they are random legal.
	baseline string
	// truncateAt is the step before which Truncate ends the episode (-1:
	// never).
	truncateAt int
}

// pair is two env instances played in lockstep: a drives, b must follow.
// a and b may be the same instance.
type pair struct {
	spec  core.EnvSpec
	a, b  core.Env
	names [2]string
}

// episode is what one played episode covered.
type episode struct{ Steps, Ended, Truncations, Rewarded int }

func (p *pair) play(pl plan) (ep episode, err error) {
	spec := p.spec
	at := fmt.Sprintf("env %s: seed %d", spec.Name, pl.seed)
	if pl.baseline != "" {
		at += " (baseline " + pl.baseline + ")"
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%s: %w", at, err)
		}
	}()
	oa, err := p.a.Reset(pl.seed)
	if err != nil {
		return ep, fmt.Errorf("%s: Reset: %w", p.names[0], err)
	}
	ob := oa
	if p.b != p.a {
		if ob, err = p.b.Reset(pl.seed); err != nil {
			return ep, fmt.Errorf("%s: Reset: %w", p.names[1], err)
		}
	}
	if err := p.observed("Reset", oa, ob); err != nil {
		return ep, err
	}
	var ba, bb core.Baseline
	if pl.baseline != "" {
		if ba, bb, err = p.baselines(pl.baseline); err != nil {
			return ep, err
		}
	}
	rng := rand.New(rand.NewPCG(pl.seed, 0x656e7674657374)) // "envtest"
	maxSteps := spec.MaxSteps
	if maxSteps == 0 {
		maxSteps = 1000 // the runtime's default
	}
	for step := 0; step < maxSteps; step++ {
		at := fmt.Sprintf("step %d", step)
		if err := p.sameState(at); err != nil {
			return ep, err
		}
		if step == pl.truncateAt {
			ta, _ := core.TruncaterOf(p.a)
			tb, _ := core.TruncaterOf(p.b)
			ra, rb, err := both(p, "Truncate", ta.Truncate, tb.Truncate)
			if err != nil {
				return ep, fmt.Errorf("%s: %w", at, err)
			}
			ep.Truncations++
			if !ra.Truncated {
				return ep, fmt.Errorf("%s: Truncate's result is not marked Truncated", at)
			}
			return ep, p.finished(at+": Truncate", ra, rb)
		}
		actions, err := p.act(rng, pl.seed, step, oa, ob, ba, bb)
		if err != nil {
			return ep, fmt.Errorf("%s: %w", at, err)
		}
		ra, rb, err := both(p, "Step", func() (core.StepResult, error) { return p.a.Step(actions) },
			func() (core.StepResult, error) { return p.b.Step(actions) })
		if err != nil {
			return ep, fmt.Errorf("%s: %w", at, err)
		}
		ep.Steps++
		if slices.ContainsFunc(ra.Rewards, func(r float64) bool { return r != 0 }) {
			ep.Rewarded++
		}
		if ra.Done() {
			ep.Ended++
			return ep, p.finished(at, ra, rb)
		}
		if err := p.stepped(at, ra, rb); err != nil {
			return ep, err
		}
		oa, ob = ra.Observations, rb.Observations
	}
	return ep, nil
}

// both calls fa, then fb unless b is a.
func both(p *pair, call string, fa, fb func() (core.StepResult, error)) (ra, rb core.StepResult, err error) {
	if ra, err = fa(); err != nil {
		return ra, rb, fmt.Errorf("%s: %s: %w", p.names[0], call, err)
	}
	if p.b == p.a {
		return ra, ra, nil
	}
	if rb, err = fb(); err != nil {
		return ra, rb, fmt.Errorf("%s: %s: %w", p.names[1], call, err)
	}
	return ra, rb, nil
}

// baselines returns the named baseline of a and of b.
func (p *pair) baselines(name string) (core.Baseline, core.Baseline, error) {
	var out [2]core.Baseline
	for i, e := range []core.Env{p.a, p.b} {
		bp, ok := core.BaselineProviderOf(e)
		if !ok {
			return nil, nil, fmt.Errorf("%s: declares no core.CapBaseline", p.names[i])
		}
		b, err := bp.Baseline(name)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: Baseline(%q): %w", p.names[i], name, err)
		}
		out[i] = b
	}
	return out[0], out[1], nil
}

// act returns the joint action: the baseline's decisions (ba and bb must
// agree) or random legal ones, with text for those that need it.
func (p *pair) act(rng *rand.Rand, seed uint64, step int, oa, ob []core.Observation, ba, bb core.Baseline) ([]core.Action, error) {
	spec := p.spec
	decisions := make([]int, len(oa))
	if ba != nil {
		da, err := ba.Act(oa)
		if err != nil {
			return nil, fmt.Errorf("%s: baseline: %w", p.names[0], err)
		}
		db, err := bb.Act(ob)
		if err != nil {
			return nil, fmt.Errorf("%s: baseline: %w", p.names[1], err)
		}
		if !slices.Equal(da, db) {
			return nil, fmt.Errorf("baseline decisions differ: %s %v, %s %v", p.names[0], da, p.names[1], db)
		}
		if len(da) != len(oa) {
			return nil, fmt.Errorf("the baseline returned %d decisions for %d agents", len(da), len(oa))
		}
		for i, d := range da {
			if d < 0 || d >= len(spec.Decisions) || !oa[i].Legal(d) {
				return nil, fmt.Errorf("the baseline picked illegal decision %d for agent %d", d, i)
			}
		}
		copy(decisions, da)
	} else {
		for i, o := range oa {
			k := rng.IntN(o.NumLegal(len(spec.Decisions)))
			for d := range spec.Decisions {
				if o.Legal(d) {
					if k == 0 {
						decisions[i] = d
						break
					}
					k--
				}
			}
		}
	}
	actions := make([]core.Action, len(decisions))
	for i, d := range decisions {
		actions[i].Decision = d
		if !spec.Decisions[d].NeedsText {
			continue
		}
		text, usage, err := p.write(i, d, oa[i].Text, rand.New(rand.NewPCG(seed, uint64(step)<<16|uint64(i))))
		if err != nil {
			return nil, fmt.Errorf("agent %d: %s: %w", i, spec.Decisions[d].Name, err)
		}
		actions[i].Text, actions[i].Usage = text, usage
	}
	return actions, nil
}

// write returns agent's text for decision d: from a's simulator if it
// declares one, else [Text]. It compares the prompts of a and b first.
func (p *pair) write(agent, d int, ownText string, rng *rand.Rand) (string, core.Usage, error) {
	ds := p.spec.Decisions[d]
	req := core.ChatRequest{Messages: []core.Message{{Role: "user", Content: ownText + "\n\nYour decision: " + ds.Name}}}
	if pa, ok := core.PrompterOf(p.a); ok {
		pb, _ := core.PrompterOf(p.b)
		req = pa.Prompt(agent, d)
		if rb := pb.Prompt(agent, d); !reflect.DeepEqual(req, rb) {
			return "", core.Usage{}, fmt.Errorf("the prompts differ:\n %s: %+v\n %s: %+v", p.names[0], req, p.names[1], rb)
		}
	}
	req.Agent, req.Decision, req.Tier = agent, ds.Name, ds.Tier
	sim, ok := core.SimulatorOf(p.a)
	if !ok {
		return Text, core.Usage{PromptTokens: 10, CompletionTokens: 10, Latency: time.Second, Backend: "envtest"}, nil
	}
	c, err := sim.Simulate(agent, d, req, rng)
	if err != nil {
		return "", core.Usage{}, fmt.Errorf("%s: Simulate: %w", p.names[0], err)
	}
	latency := time.Duration(c.CompletionTokens) * 20 * time.Millisecond
	return c.Text, core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Latency: latency, Backend: "sim"}, nil
}

// observed checks a's observations against the spec and b's against a's.
func (p *pair) observed(at string, oa, ob []core.Observation) error {
	if err := p.spec.CheckObservations(oa); err != nil {
		return fmt.Errorf("%s: %s: %w", at, p.names[0], err)
	}
	return p.sameObservations(at, oa, ob)
}

// stepped checks a step's result that did not end the episode.
func (p *pair) stepped(at string, ra, rb core.StepResult) error {
	if err := p.observed(at, ra.Observations, rb.Observations); err != nil {
		return err
	}
	return p.sameResult(at, ra, rb)
}

// finished checks the result that ended an episode: its observations
// need not offer a legal decision, but its metrics must be exactly the
// spec's.
func (p *pair) finished(at string, ra, rb core.StepResult) error {
	if len(ra.Observations) != p.spec.NumAgents() {
		return fmt.Errorf("%s: %s: %d observations for %d agents", at, p.names[0], len(ra.Observations), p.spec.NumAgents())
	}
	if err := p.sameObservations(at, ra.Observations, rb.Observations); err != nil {
		return err
	}
	if err := p.sameResult(at, ra, rb); err != nil {
		return err
	}
	for _, m := range p.spec.Metrics {
		if _, ok := ra.Metrics[m]; !ok {
			return fmt.Errorf("%s: the spec lists metric %q, but the episode's last result has none (has %v)", at, m, slices.Sorted(maps.Keys(ra.Metrics)))
		}
	}
	// TaskNames name the task metric's values: each value must index one.
	if n := len(p.spec.TaskNames); n > 0 {
		if v := ra.Metrics[core.MetricTask]; v != math.Trunc(v) || v < 0 || v >= float64(n) {
			return fmt.Errorf("%s: the episode reports %s %v, which is not the index of one of the spec's %d task_names", at, core.MetricTask, v, n)
		}
	}
	// Reward functions are checked against the list before training
	// (core.CheckRequiredMetrics), so a metric left out of it is one no
	// reward may use.
	for _, m := range slices.Sorted(maps.Keys(ra.Metrics)) {
		if !slices.Contains(p.spec.Metrics, m) {
			return fmt.Errorf("%s: the episode's last result reports metric %q, which the spec does not list (it lists %v); add it to EnvSpec.Metrics", at, m, p.spec.Metrics)
		}
	}
	return nil
}

func (p *pair) sameObservations(at string, oa, ob []core.Observation) error {
	if len(oa) != len(ob) {
		return fmt.Errorf("%s: %d observations, %s %d", at, len(oa), p.names[1], len(ob))
	}
	for i := range oa {
		a, b := oa[i], ob[i]
		switch {
		case !sameFloats(a.Features, b.Features):
			return fmt.Errorf("%s: agent %d: features differ:\n %s %v\n %s %v", at, i, p.names[0], a.Features, p.names[1], b.Features)
		case a.Text != b.Text:
			return fmt.Errorf("%s: agent %d: texts differ:\n %s %q\n %s %q", at, i, p.names[0], a.Text, p.names[1], b.Text)
		case (a.Mask == nil) != (b.Mask == nil) || !slices.Equal(a.Mask, b.Mask):
			return fmt.Errorf("%s: agent %d: masks differ: %s %v, %s %v", at, i, p.names[0], a.Mask, p.names[1], b.Mask)
		}
	}
	return nil
}

// sameResult compares everything but the observations; metric and
// artifact maps that are nil and empty are alike.
func (p *pair) sameResult(at string, ra, rb core.StepResult) error {
	n := p.spec.NumAgents()
	switch {
	case ra.Rewards != nil && len(ra.Rewards) != n:
		return fmt.Errorf("%s: %d rewards for %d agents", at, len(ra.Rewards), n)
	case (ra.Rewards == nil) != (rb.Rewards == nil) || !sameFloats(ra.Rewards, rb.Rewards):
		return fmt.Errorf("%s: rewards differ: %s %v, %s %v", at, p.names[0], ra.Rewards, p.names[1], rb.Rewards)
	case ra.Terminated != rb.Terminated || ra.Truncated != rb.Truncated:
		return fmt.Errorf("%s: terminated/truncated differ: %s %v/%v, %s %v/%v", at, p.names[0], ra.Terminated, ra.Truncated, p.names[1], rb.Terminated, rb.Truncated)
	}
	keys := slices.Sorted(maps.Keys(ra.Metrics))
	if kb := slices.Sorted(maps.Keys(rb.Metrics)); !slices.Equal(keys, kb) {
		return fmt.Errorf("%s: metric names differ: %s %v, %s %v", at, p.names[0], keys, p.names[1], kb)
	}
	for _, k := range keys {
		if va, vb := ra.Metrics[k], rb.Metrics[k]; math.Float64bits(va) != math.Float64bits(vb) {
			return fmt.Errorf("%s: metric %s differs: %s %v, %s %v", at, k, p.names[0], va, p.names[1], vb)
		}
	}
	names := slices.Sorted(maps.Keys(ra.Artifacts))
	if nb := slices.Sorted(maps.Keys(rb.Artifacts)); !slices.Equal(names, nb) {
		return fmt.Errorf("%s: artifact names differ: %s %v, %s %v", at, p.names[0], names, p.names[1], nb)
	}
	for _, k := range names {
		if string(ra.Artifacts[k]) != string(rb.Artifacts[k]) {
			return fmt.Errorf("%s: artifact %s differs", at, k)
		}
	}
	return nil
}

// sameState compares the global states and checks their length.
func (p *pair) sameState(at string) error {
	sa := p.a.State()
	if p.spec.StateSize > 0 && len(sa) != p.spec.StateSize {
		return fmt.Errorf("%s: %s: state of %d values, spec says %d", at, p.names[0], len(sa), p.spec.StateSize)
	}
	if p.b == p.a {
		return nil
	}
	if sb := p.b.State(); !sameFloats(sa, sb) {
		return fmt.Errorf("%s: states differ:\n %s %v\n %s %v", at, p.names[0], sa, p.names[1], sb)
	}
	return nil
}

// sameFloats reports whether a and b hold the same values to the bit.
func sameFloats(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}
