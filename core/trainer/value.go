package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/safetensors"
)

// critic is the centralized value function of [CreditValue]: an MLP
// V(s, i) of the env's global state s and the agent i (its one-hot appended
// to the state: MAPPO's agent-specific global state), one network shared by
// all agents, with tanh hidden layers and a linear output. It is a
// [policy.Policy] with one output, so it shares the policy's initialisation
// (orthogonal, output gain 0.01), its batched forward and backward passes
// and their fixed summation order; Adam trains it.
type critic struct {
	net  *policy.Policy
	adam *policy.Adam
	ws   policy.Workspace
}

// newCritic returns a fresh critic for the env of spec.
func newCritic(spec core.EnvSpec, hidden []int, lr float64, seed uint64) (*critic, error) {
	net, err := policy.New(policy.Config{
		ObsSize: spec.StateSize, NumDecisions: 1, NumAgents: spec.NumAgents(),
		Hidden: hidden, Shared: true, Seed: seed,
	})
	if err != nil {
		return nil, fmt.Errorf("critic: %w", err)
	}
	return &critic{net: net, adam: policy.NewAdam(net.NumParams(), lr)}, nil
}

// values returns V(states[r], agents[r]) for every row r.
func (c *critic) values(agents []int, states [][]float64) ([]float64, error) {
	out := make([]float64, len(states))
	const chunk = 4096 // bounds the workspace
	for lo := 0; lo < len(states); lo += chunk {
		hi := min(lo+chunk, len(states))
		v, err := c.net.Forward(&c.ws, agents[lo:hi], states[lo:hi])
		if err != nil {
			return nil, fmt.Errorf("critic: %w", err)
		}
		copy(out[lo:hi], v)
	}
	return out, nil
}

// lossAndGrad returns the regression loss ½·mean (V − target)² over the
// rows and adds its gradient with respect to the critic's parameters to
// grad.
func (c *critic) lossAndGrad(agents []int, states [][]float64, targets, grad []float64) (float64, error) {
	v, err := c.net.Forward(&c.ws, agents, states)
	if err != nil {
		return 0, fmt.Errorf("critic: %w", err)
	}
	m := float64(len(states))
	d := make([]float64, len(v))
	loss := 0.0
	for r := range v {
		e := v[r] - targets[r]
		loss += 0.5 * e * e / m
		d[r] = e / m
	}
	if err := c.net.Backward(&c.ws, d, grad); err != nil {
		return 0, fmt.Errorf("critic: %w", err)
	}
	return loss, nil
}

// fit regresses V on the targets: epochs passes, each one seeded shuffle of
// the rows cut into minibatches nearly equal parts, one Adam step each,
// the gradient's global norm clipped to maxGradNorm (0: no clipping).
func (c *critic) fit(agents []int, states [][]float64, targets []float64, epochs, minibatches int, maxGradNorm float64, rng *rand.Rand) error {
	m := len(states)
	if m == 0 {
		return nil
	}
	grad := make([]float64, c.net.NumParams())
	mb := min(minibatches, m)
	as, ss, ts := make([]int, 0, m/mb+1), make([][]float64, 0, m/mb+1), make([]float64, 0, m/mb+1)
	for range epochs {
		perm := rng.Perm(m)
		for b := range mb {
			lo, hi := b*m/mb, (b+1)*m/mb
			as, ss, ts = as[:0], ss[:0], ts[:0]
			for _, r := range perm[lo:hi] {
				as, ss, ts = append(as, agents[r]), append(ss, states[r]), append(ts, targets[r])
			}
			clear(grad)
			if _, err := c.lossAndGrad(as, ss, ts, grad); err != nil {
				return err
			}
			if norm := policy.ClipGradNorm(grad, maxGradNorm); math.IsNaN(norm) || math.IsInf(norm, 0) {
				return fmt.Errorf("critic: gradient norm is %v", norm)
			}
			if err := c.adam.Step(c.net.Params(), grad); err != nil {
				return fmt.Errorf("critic: %w", err)
			}
		}
	}
	return nil
}

// gae returns the generalized advantage estimates (Schulman et al. 2016) of
// one agent's steps 0..T−1 given the step rewards r and values v (len T),
// the end of the episode being terminal (the value after the last step is
// 0):
//
//	δ_t = r_t + γ·v_{t+1} − v_t,   A_t = δ_t + γλ·A_{t+1},   A_T = 0
//
// and the critic's regression targets A_t + v_t (the λ-returns).
func gae(r, v []float64, gamma, lambda float64) (adv, ret []float64) {
	T := len(r)
	adv, ret = make([]float64, T), make([]float64, T)
	next, a := 0.0, 0.0
	for t := T - 1; t >= 0; t-- {
		delta := r[t] + gamma*next - v[t]
		a = delta + gamma*lambda*a
		adv[t], ret[t] = a, a+v[t]
		next = v[t]
	}
	return adv, ret
}

// stepRewards returns the team's reward of each step of r: the summed
// per-agent rewards the env reported, with whatever the reward functions'
// joint reward adds beyond their sum (R − Σ_t r_t: a speed bonus, a score
// of the final document) paid at the last step, so that the rewards of an
// episode add up to its joint reward exactly.
func stepRewards(r *rollout.EpisodeResult) []float64 {
	T := r.Episode.Steps
	out := make([]float64, T)
	if len(r.TeamRewards) == T {
		copy(out, r.TeamRewards)
	}
	sum := 0.0
	for _, x := range out {
		sum += x
	}
	out[T-1] += r.Reward - sum
	return out
}

// valueCredit is the credit of [CreditValue]:
//
//  1. step rewards: each episode's team reward per step (stepRewards);
//  2. values: the critic's V(s_t, i) for every step t and agent i, before
//     this iteration's critic update;
//  3. advantages: GAE(gamma, gae_lambda) per agent over the episode's
//     steps (gae); each recorded decision of agent i at step t takes A_{i,t};
//  4. normalisation: the decisions' advantages are standardised over the
//     iteration's batch (mean 0, standard deviation 1, as PPO
//     implementations do), so learning_rate means what it means with the
//     group-relative credits; a batch whose advantages are all equal (to
//     1e-12 relative) is only centred;
//  5. critic update: value_epochs passes of `minibatches` Adam steps
//     (value_learning_rate, max_grad_norm) on ½·(V(s_t, i) − (A_{i,t} +
//     V(s_t, i)))², every step of every agent of every episode.
//
// It returns the credit and the critic's loss on the iteration's targets
// before its update.
func (t *Trainer) valueCredit(results []rollout.EpisodeResult) (credit, float64, error) {
	n := t.spec.NumAgents()
	c := credit{agent: make([][]float64, len(results)), decision: make([][]float64, len(results)), credited: make([][]bool, len(results))}
	var agents []int
	var states [][]float64
	type span struct{ k, first int }
	var spans []span
	for k := range results {
		r := &results[k]
		c.agent[k] = make([]float64, n)
		c.decision[k] = make([]float64, len(r.Decisions))
		c.credited[k] = make([]bool, len(r.Decisions))
		if r.Failed || r.Episode.Steps == 0 {
			continue
		}
		if len(r.States) < r.Episode.Steps {
			return c, 0, fmt.Errorf("credit = \"value\": episode %d (task seed %d) carries %d states for its %d steps: the sampler must record core.Env.State before every step (rollout.Pool does)", k, r.Episode.Seed, len(r.States), r.Episode.Steps)
		}
		spans = append(spans, span{k, len(states)})
		for step, s := range r.States[:r.Episode.Steps] { // a budget stop records the state of a step it does not play
			if len(s) != t.spec.StateSize {
				return c, 0, fmt.Errorf("credit = \"value\": env %s: episode %d (task seed %d), step %d: State() returned %d values, its spec's StateSize is %d", t.spec.Name, k, r.Episode.Seed, step, len(s), t.spec.StateSize)
			}
			for i := range n {
				agents, states = append(agents, i), append(states, s)
			}
		}
	}
	v, err := t.critic.values(agents, states)
	if err != nil {
		return c, 0, err
	}
	targets := make([]float64, len(v))
	var all []float64
	for _, sp := range spans {
		r := &results[sp.k]
		T := r.Episode.Steps
		rew := stepRewards(r)
		adv := make([][]float64, n) // adv[i][t]
		vi := make([]float64, T)
		for i := range n {
			for s := range T {
				vi[s] = v[sp.first+s*n+i]
			}
			var ret []float64
			adv[i], ret = gae(rew, vi, t.cfg.Gamma, t.cfg.GAELambda)
			for s := range T {
				targets[sp.first+s*n+i] = ret[s]
			}
		}
		for j, d := range r.Decisions {
			if d.Step >= T {
				continue // made at a step a token budget stopped before it was played
			}
			c.decision[sp.k][j], c.credited[sp.k][j] = adv[d.Agent][d.Step], true
			all = append(all, adv[d.Agent][d.Step])
		}
	}
	mean, std := meanStd(all)
	scale := 1.0
	if std > flatSpread*math.Max(1, math.Abs(mean)) {
		scale = 1 / std
	}
	for k := range results {
		sums, counts := make([]float64, n), make([]int, n)
		for j, d := range results[k].Decisions {
			if c.credited[k][j] {
				c.decision[k][j] = (c.decision[k][j] - mean) * scale
				sums[d.Agent] += c.decision[k][j]
				counts[d.Agent]++
			}
		}
		for i := range n {
			if counts[i] > 0 {
				c.agent[k][i] = sums[i] / float64(counts[i])
			}
		}
	}
	loss := 0.0
	for r := range v {
		e := v[r] - targets[r]
		loss += 0.5 * e * e
	}
	if len(v) > 0 {
		loss /= float64(len(v))
	}
	rng := rand.New(rand.NewPCG(rollout.DeriveSeed(t.setup.Seed, 0x76616c7565), uint64(t.iter))) // "value"
	if err := t.critic.fit(agents, states, targets, t.cfg.ValueEpochs, t.cfg.Minibatches, t.cfg.MaxGradNorm, rng); err != nil {
		return c, loss, fmt.Errorf("credit = \"value\": %w", err)
	}
	return c, loss, nil
}

// flatSpread is the relative spread below which a batch's advantages count
// as equal (grpo's flat-group tolerance).
const flatSpread = 1e-12

// criticFormat is the "format" metadata value of a critic checkpoint.
const criticFormat = "troupe.trainer.critic"

// save writes the critic and its Adam state to path as one safetensors
// file: "critic.…", "adam.m.…", "adam.v.…" (F64, the policy layout) and
// "adam.step" (I64).
func (c *critic) save(path string) error {
	tensors := map[string]safetensors.Tensor{}
	for _, part := range []struct {
		prefix string
		v      []float64
	}{{"critic.", c.net.Params()}, {"adam.m.", c.adam.M}, {"adam.v.", c.adam.V}} {
		if err := c.net.EncodeVector(part.prefix, part.v, tensors); err != nil {
			return err
		}
	}
	tensors["adam.step"] = safetensors.FromInt64([]int{}, []int64{int64(c.adam.T)})
	meta := c.net.Metadata()
	meta["format"] = criticFormat
	meta["format_version"] = strconv.Itoa(1)
	return safetensors.WriteFile(path, tensors, meta)
}

// load restores what save wrote; the architecture must match. On error c
// is unchanged.
func (c *critic) load(path string) error {
	tensors, meta, err := safetensors.ReadFile(path)
	if err != nil {
		return err
	}
	if f := meta["format"]; f != criticFormat {
		return fmt.Errorf("%s: not a critic checkpoint (format %q, want %q)", path, f, criticFormat)
	}
	cfg, err := policy.ParseConfig(meta["config"])
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !cfg.SameArchitecture(c.net.Config()) {
		return fmt.Errorf("%s: the checkpoint's critic (state size %d, hidden %v) does not match the configured one (state size %d, value_hidden %v)",
			path, cfg.ObsSize, cfg.Hidden, c.net.Config().ObsSize, c.net.Config().Hidden)
	}
	n := c.net.NumParams()
	p, m, v := make([]float64, n), make([]float64, n), make([]float64, n)
	for _, part := range []struct {
		prefix string
		dst    []float64
	}{{"critic.", p}, {"adam.m.", m}, {"adam.v.", v}} {
		if err := c.net.DecodeVector(part.prefix, tensors, part.dst); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	st, ok := tensors["adam.step"]
	if !ok {
		return fmt.Errorf("%s: tensor \"adam.step\" missing", path)
	}
	steps, err := st.Int64()
	if err != nil || len(steps) != 1 || steps[0] < 0 {
		return fmt.Errorf("%s: tensor \"adam.step\" must be one non-negative integer (%v)", path, err)
	}
	copy(c.net.Params(), p)
	copy(c.adam.M, m)
	copy(c.adam.V, v)
	c.adam.T = int(steps[0])
	return nil
}
