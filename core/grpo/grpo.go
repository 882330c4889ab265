// Package grpo is troupe's critic-free policy optimizer: Group Relative
// Policy Optimization (Shao et al. 2024) over the agents' decision policies,
// with group-relative advantages, a clipped importance-ratio surrogate, a
// k3 KL penalty towards a frozen reference policy, an optional entropy
// bonus, Adam and global gradient-norm clipping.
//
// For each decision d (one agent, one step, one rollout) with advantage A,
// the loss is
//
//	ℓ = −min(ρA, clip(ρ, 1−ε, 1+ε_high)·A) + β·k3 − η·H(π_θ(·|o))
//	ρ = π_θ(a|o) / π_old(a|o),  k3 = r − log r − 1 with r = π_ref(a|o) / π_θ(a|o)
//
// averaged over the decisions of a minibatch; H is the entropy of the
// masked policy. [Optimizer.Update] makes Epochs passes over a batch, each
// shuffled into Minibatches, with one Adam step per minibatch.
//
// Results are bit-for-bit reproducible for the same inputs and rng state,
// whatever GOMAXPROCS is: a minibatch is split into a number of shards that
// depends only on its size, shards run in parallel, and their gradients and
// statistics are summed in shard order.
package grpo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/troupe-dev/troupe/core/policy"
)

// Decision is one agent's decision in one rollout, as the optimizer needs
// it.
type Decision struct {
	// Agent is the agent's index.
	Agent int
	// Obs is the agent's feature vector (len ObsSize).
	Obs []float64
	// Mask marks the legal decisions (nil: all legal).
	Mask []bool
	// Action is the decision taken; it must be legal.
	Action int
	// LogpOld is log π_old(Action|Obs), the log-probability under the
	// policy that sampled it.
	LogpOld float64
	// Advantage is the decision's advantage (its rollout's, for joint
	// credit).
	Advantage float64
}

// Stats summarises one Update. Loss, KL, ClipFrac and Entropy are means
// over every (epoch, decision) pair, each measured with the parameters in
// force when its minibatch was evaluated (before that minibatch's step).
type Stats struct {
	// Loss is the mean per-decision loss ℓ.
	Loss float64
	// KL is the mean k3 estimate of KL(π_θ‖π_ref) on the taken actions.
	KL float64
	// ClipFrac is the fraction of decisions whose clipped term was
	// selected (so they contributed no surrogate gradient).
	ClipFrac float64
	// Entropy is the mean entropy of the masked policy, in nats.
	Entropy float64
	// GradNorm is the mean global gradient norm before clipping, over the
	// Adam steps.
	GradNorm float64
	// Steps is the number of Adam steps taken.
	Steps int
}

// maxLogRatio caps |log ρ| and |log r| before exponentiating, so that a
// stale LogpOld or a collapsed probability cannot overflow to Inf/NaN.
const maxLogRatio = 20

// Optimizer runs GRPO updates on a policy. It is not safe for concurrent
// use; Update parallelises internally.
type Optimizer struct {
	cfg  Config
	pol  *policy.Policy
	ref  *policy.Policy
	adam *policy.Adam

	shards []*shard
	grad   []float64
	refLp  []float64
	order  []int
}

// NewOptimizer returns an optimizer that updates p in place. It copies p
// as the frozen reference policy of the KL term and starts Adam from zero.
func NewOptimizer(p *policy.Policy, cfg Config) (*Optimizer, error) {
	if p == nil {
		return nil, errors.New("grpo: nil policy")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Optimizer{cfg: cfg, pol: p, ref: p.Clone(), adam: policy.NewAdam(p.NumParams(), cfg.LearningRate)}
	o.grad = make([]float64, p.NumParams())
	for range maxShards {
		o.shards = append(o.shards, &shard{grad: make([]float64, p.NumParams())})
	}
	return o, nil
}

// Config returns the optimizer's configuration.
func (o *Optimizer) Config() Config { return o.cfg }

// Policy returns the policy being trained (the one given to NewOptimizer).
func (o *Optimizer) Policy() *policy.Policy { return o.pol }

// validate checks a batch against the policy's shapes.
func (o *Optimizer) validate(batch []Decision) error {
	cfg := o.pol.Config()
	for i, d := range batch {
		switch {
		case d.Agent < 0 || d.Agent >= cfg.NumAgents:
			return fmt.Errorf("grpo: decision %d: agent %d out of range [0, %d)", i, d.Agent, cfg.NumAgents)
		case len(d.Obs) != cfg.ObsSize:
			return fmt.Errorf("grpo: decision %d: observation has %d features, want %d", i, len(d.Obs), cfg.ObsSize)
		case d.Mask != nil && len(d.Mask) != cfg.NumDecisions:
			return fmt.Errorf("grpo: decision %d: mask has length %d, want %d", i, len(d.Mask), cfg.NumDecisions)
		case d.Action < 0 || d.Action >= cfg.NumDecisions:
			return fmt.Errorf("grpo: decision %d: action %d out of range [0, %d)", i, d.Action, cfg.NumDecisions)
		case d.Mask != nil && !d.Mask[d.Action]:
			return fmt.Errorf("grpo: decision %d: action %d is illegal under its mask", i, d.Action)
		case math.IsNaN(d.LogpOld) || math.IsInf(d.LogpOld, 0) || d.LogpOld > 1e-9:
			return fmt.Errorf("grpo: decision %d: logp_old %v is not a log-probability", i, d.LogpOld)
		case math.IsNaN(d.Advantage) || math.IsInf(d.Advantage, 0):
			return fmt.Errorf("grpo: decision %d: advantage is %v", i, d.Advantage)
		}
		for j, x := range d.Obs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("grpo: decision %d: observation feature %d is %v", i, j, x)
			}
		}
	}
	return nil
}

// Update runs Epochs passes over batch, each a fresh shuffle (drawn from
// rng) split into Minibatches nearly equal minibatches, and takes one Adam
// step per minibatch. Its only use of rng is one rng.Shuffle(len(batch), …)
// per epoch. An error leaves the policy as it was after the last completed
// step; a non-finite gradient is an error and is not applied.
func (o *Optimizer) Update(batch []Decision, rng *rand.Rand) (Stats, error) {
	if len(batch) == 0 {
		return Stats{}, errors.New("grpo: empty batch")
	}
	if rng == nil {
		return Stats{}, errors.New("grpo: nil rng")
	}
	if err := o.validate(batch); err != nil {
		return Stats{}, err
	}
	n := len(batch)
	// The reference policy is frozen: log π_ref(a|o) once per update.
	if err := o.referenceLogProbs(batch); err != nil {
		return Stats{}, err
	}

	// μ epochs, each a fresh shuffle cut into Minibatches; one Adam step
	// per minibatch.
	var st Stats
	var normSum float64
	var evaluated int
	mbs := min(o.cfg.Minibatches, n)
	for epoch := 0; epoch < o.cfg.Epochs; epoch++ {
		rng.Shuffle(n, func(i, j int) { o.order[i], o.order[j] = o.order[j], o.order[i] })
		for mb := 0; mb < mbs; mb++ {
			rows := o.order[mb*n/mbs : (mb+1)*n/mbs]
			// The mean of decisionLoss over the minibatch and its gradient,
			// computed in parallel shards (shard.go).
			loss, kl, ent, clipped, err := o.lossAndGrad(batch, rows, o.grad)
			if err != nil {
				return st, err
			}
			// Global gradient-norm clipping, then the Adam step.
			norm := policy.ClipGradNorm(o.grad, o.cfg.MaxGradNorm)
			if math.IsNaN(norm) || math.IsInf(norm, 0) {
				return st, fmt.Errorf("grpo: non-finite gradient norm at epoch %d minibatch %d (diverged? lower the learning rate)", epoch, mb)
			}
			o.adam.LR = o.cfg.LearningRate
			if err := o.adam.Step(o.pol.Params(), o.grad); err != nil {
				return st, err
			}
			st.Loss += loss
			st.KL += kl
			st.Entropy += ent
			st.ClipFrac += float64(clipped)
			normSum += norm
			st.Steps++
			evaluated += len(rows)
		}
	}
	e := float64(evaluated)
	st.Loss /= e
	st.KL /= e
	st.Entropy /= e
	st.ClipFrac /= e
	st.GradNorm = normSum / float64(st.Steps)
	return st, nil
}

// decisionLoss computes one decision's loss ℓ and writes inv·∂ℓ/∂z (z the
// logits) into dz. lp holds the masked log-probabilities under π_θ and
// refLp is log π_ref(a). It returns ℓ, k3, the entropy H and whether the
// clipped term was selected.
func (o *Optimizer) decisionLoss(d *Decision, lp []float64, refLp, inv float64, dz []float64) (loss, k3, entropy float64, clipped bool) {
	a := d.Action
	A := d.Advantage
	lpa := lp[a]

	// Clipped surrogate. With g = ∂ℓ/∂log π(a): g = −ρA when the unclipped
	// term is selected, 0 when the clipped one is (ρ outside the range on
	// the side where clipping binds).
	logRatio := math.Max(-maxLogRatio, math.Min(maxLogRatio, lpa-d.LogpOld))
	rho := math.Exp(logRatio)
	lo, hi := 1-o.cfg.Clip, 1+o.cfg.clipHigh()
	clipped = (A > 0 && rho > hi) || (A < 0 && rho < lo)
	var g float64
	if clipped {
		loss = -math.Max(lo, math.Min(hi, rho)) * A
	} else {
		loss = -rho * A
		g = -rho * A
	}

	// k3 = r − log r − 1, r = π_ref(a)/π_θ(a); ∂k3/∂log π(a) = 1 − r.
	logR := math.Max(-maxLogRatio, math.Min(maxLogRatio, refLp-lpa))
	r := math.Exp(logR)
	k3 = r - logR - 1
	if o.cfg.KL > 0 {
		loss += o.cfg.KL * k3
		g += o.cfg.KL * (1 - r)
	}

	// Entropy H = −Σ p log p over legal decisions;
	// ∂H/∂z_k = −p_k (log p_k + H).
	for _, l := range lp {
		if !math.IsInf(l, -1) {
			entropy -= math.Exp(l) * l
		}
	}
	if o.cfg.Entropy > 0 {
		loss -= o.cfg.Entropy * entropy
	}

	// ∂ℓ/∂z_k = g·(δ_ak − p_k) + η·p_k·(log p_k + H) for legal k, 0 else.
	for k, l := range lp {
		if math.IsInf(l, -1) {
			dz[k] = 0
			continue
		}
		p := math.Exp(l)
		v := -g * p
		if k == a {
			v += g
		}
		if o.cfg.Entropy > 0 {
			v += o.cfg.Entropy * p * (l + entropy)
		}
		dz[k] = inv * v
	}
	return loss, k3, entropy, clipped
}
