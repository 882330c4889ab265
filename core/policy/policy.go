// Package policy holds the agents' decision policies: small tanh MLPs that
// map an observation's feature vector to a masked softmax over the
// environment's discrete decisions, with batched gradients, Adam and
// safetensors checkpoints.
//
// A [Policy] is either one network shared by all agents, whose input is
// the observation followed by a one-hot agent id, or one network per agent
// whose input is the observation alone. Each network is a stack of dense
// layers, tanh after every hidden layer and none after the last, which
// outputs one logit per decision.
//
// Initialisation: weights are orthogonal (a Gaussian matrix orthonormalised
// by Gram–Schmidt, rows or columns, whichever are fewer) scaled by √2 for
// hidden layers and by 0.01 for the output layer; biases are zero. The
// small output layer makes the initial policy almost uniform over the legal
// decisions. The same Config (including Seed) gives the same weights.
//
// Parameters live in one flat float64 vector ([Policy.Params]); every
// network, then every layer in order, contributes its weight matrix
// (out×in, row-major, as PyTorch's nn.Linear stores it) followed by its
// bias vector. Gradients and Adam moments use the same layout.
package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/troupe-dev/troupe/core"
)

// MaxParams bounds the number of parameters of a policy (guarding against
// absurd configurations that would exhaust memory).
const MaxParams = 1 << 28

// Config describes a policy's architecture.
type Config struct {
	// ObsSize is the length of an observation's feature vector.
	ObsSize int `json:"obs_size"`
	// NumDecisions is the number of discrete decisions (the output size).
	NumDecisions int `json:"num_decisions"`
	// NumAgents is the number of agents.
	NumAgents int `json:"num_agents"`
	// Hidden lists the hidden layer widths; empty means a linear policy.
	Hidden []int `json:"hidden"`
	// Shared selects one network for all agents (input: observation +
	// one-hot agent id) instead of one network per agent.
	Shared bool `json:"shared"`
	// Seed seeds the weight initialisation.
	Seed uint64 `json:"seed"`
}

// MaxWidth is the widest hidden layer [CheckHidden] accepts.
const MaxWidth = 4096

// CheckHidden checks hidden layer widths, the agentfile's train.hidden:
// each in [1, MaxWidth]; an empty list is a linear policy. Its error is a
// *core.SettingError with the key "hidden".
func CheckHidden(hidden []int) error {
	for i, h := range hidden {
		if h < 1 || h > MaxWidth {
			return core.NewSettingError("hidden", "layer %d: width must be in [1, %d], got %d", i, MaxWidth, h)
		}
	}
	return nil
}

// Validate reports the first problem with the configuration.
func (c Config) Validate() error {
	switch {
	case c.ObsSize <= 0:
		return fmt.Errorf("policy: obs_size must be positive, got %d", c.ObsSize)
	case c.NumDecisions <= 0:
		return fmt.Errorf("policy: num_decisions must be positive, got %d", c.NumDecisions)
	case c.NumAgents <= 0:
		return fmt.Errorf("policy: num_agents must be positive, got %d", c.NumAgents)
	}
	if err := CheckHidden(c.Hidden); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	// Count parameters with overflow checks.
	total, in := 0, c.InputSize()
	nets := c.NumNets()
	for _, out := range append(slices.Clone(c.Hidden), c.NumDecisions) {
		if in > MaxParams || out > MaxParams || in*out > MaxParams {
			return fmt.Errorf("policy: layer of %d×%d weights is too large (limit %d parameters)", out, in, MaxParams)
		}
		total += in*out + out
		if total > MaxParams {
			return fmt.Errorf("policy: more than %d parameters", MaxParams)
		}
		in = out
	}
	if total > MaxParams/nets {
		return fmt.Errorf("policy: more than %d parameters", MaxParams)
	}
	return nil
}

// InputSize returns the networks' input width: ObsSize, plus NumAgents
// when Shared.
func (c Config) InputSize() int {
	if c.Shared {
		return c.ObsSize + c.NumAgents
	}
	return c.ObsSize
}

// NumNets returns the number of networks: 1 when Shared, else NumAgents.
func (c Config) NumNets() int {
	if c.Shared {
		return 1
	}
	return c.NumAgents
}

// NetName returns the tensor-name prefix of network n: "shared" or
// "agent<n>".
func (c Config) NetName(n int) string {
	if c.Shared {
		return "shared"
	}
	return fmt.Sprintf("agent%d", n)
}

// SameArchitecture reports whether c and d describe the same parameter
// layout (they may differ in Seed).
func (c Config) SameArchitecture(d Config) bool {
	return c.ObsSize == d.ObsSize && c.NumDecisions == d.NumDecisions && c.NumAgents == d.NumAgents &&
		c.Shared == d.Shared && slices.Equal(c.Hidden, d.Hidden)
}

// layer is one dense layer's place in the parameter vector.
type layer struct {
	in, out    int
	wOff, bOff int // offsets of the weight (out×in) and bias (out)
}

// Policy is a set of MLP decision policies, one per agent or shared.
//
// LogProbs and Forward only read the parameters, so any number of
// goroutines may call them at once; nothing may modify the parameters
// (CopyFrom, Adam.Step on Params, Load) at the same time.
type Policy struct {
	cfg     Config
	params  []float64
	layers  []layer // the layer layout of network 0; network n adds n*netSize
	netSize int     // parameters per network
	maxW    int     // widest layer input or output
	scratch sync.Pool
}

// New returns a freshly initialised policy (see the package doc).
func New(cfg Config) (*Policy, error) {
	p, err := newZero(cfg)
	if err != nil {
		return nil, err
	}
	p.initialise()
	return p, nil
}

// newZero builds the layout with all parameters zero.
func newZero(cfg Config) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Hidden = slices.Clone(cfg.Hidden)
	p := &Policy{cfg: cfg}
	in := cfg.InputSize()
	p.maxW = in
	off := 0
	for _, out := range append(slices.Clone(cfg.Hidden), cfg.NumDecisions) {
		p.layers = append(p.layers, layer{in: in, out: out, wOff: off, bOff: off + in*out})
		off += in*out + out
		p.maxW = max(p.maxW, out)
		in = out
	}
	p.netSize = off
	p.params = make([]float64, off*cfg.NumNets())
	return p, nil
}

// initialise draws the initial weights from the config's seed.
func (p *Policy) initialise() {
	rng := rand.New(rand.NewPCG(p.cfg.Seed, 0x7472_6f75_7065)) // "troupe"
	last := len(p.layers) - 1
	for n := 0; n < p.cfg.NumNets(); n++ {
		for l, ly := range p.layers {
			gain := math.Sqrt2
			if l == last {
				gain = 0.01
			}
			w := p.weight(n, l)
			orthogonal(ly.out, ly.in, w, rng)
			for i := range w {
				w[i] *= gain
			}
		}
	}
}

// orthogonal fills w (rows×cols, row-major) with a random matrix whose
// rows (if rows ≤ cols) or columns (otherwise) are orthonormal.
func orthogonal(rows, cols int, w []float64, rng *rand.Rand) {
	// q holds `long`-length vectors, `short` of them, to orthonormalise.
	long, short := rows, cols
	if rows < cols {
		long, short = cols, rows
	}
	q := make([]float64, long*short)
	for i := range q {
		q[i] = rng.NormFloat64()
	}
	// Modified Gram–Schmidt, applied twice for orthogonality to rounding
	// error ("twice is enough").
	for pass := 0; pass < 2; pass++ {
		for j := 0; j < short; j++ {
			v := q[j*long : (j+1)*long]
			for i := 0; i < j; i++ {
				u := q[i*long : (i+1)*long]
				d := dot(u, v)
				for t := range v {
					v[t] -= d * u[t]
				}
			}
			norm := math.Sqrt(dot(v, v))
			if norm == 0 { // probability zero; keep going deterministically
				norm = 1
			}
			for t := range v {
				v[t] /= norm
			}
		}
	}
	if rows < cols {
		copy(w, q) // the vectors are the rows
		return
	}
	for j := 0; j < cols; j++ { // the vectors are the columns
		for i := 0; i < rows; i++ {
			w[i*cols+j] = q[j*long+i]
		}
	}
}

func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var s float64
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// weight returns network n's layer l weight matrix (out×in, row-major), a
// view into the parameters.
func (p *Policy) weight(n, l int) []float64 {
	ly := p.layers[l]
	off := n*p.netSize + ly.wOff
	return p.params[off : off+ly.in*ly.out : off+ly.in*ly.out]
}

// bias returns network n's layer l bias, a view into the parameters.
func (p *Policy) bias(n, l int) []float64 {
	ly := p.layers[l]
	off := n*p.netSize + ly.bOff
	return p.params[off : off+ly.out : off+ly.out]
}

// Config returns the policy's configuration.
func (p *Policy) Config() Config {
	c := p.cfg
	c.Hidden = slices.Clone(c.Hidden)
	return c
}

// Params returns the flat parameter vector (see the package doc for its
// layout). It is the policy's own storage: writing to it changes the
// policy.
func (p *Policy) Params() []float64 { return p.params }

// NumParams returns len(Params()).
func (p *Policy) NumParams() int { return len(p.params) }

// Clone returns an independent copy of p.
func (p *Policy) Clone() *Policy {
	q, _ := newZero(p.cfg) // p.cfg is valid
	copy(q.params, p.params)
	return q
}

// CopyFrom overwrites p's parameters with q's. The two must have the same
// architecture (everything in Config but Seed).
func (p *Policy) CopyFrom(q *Policy) error {
	if q == nil {
		return errors.New("policy: CopyFrom(nil)")
	}
	if !p.cfg.SameArchitecture(q.cfg) {
		return fmt.Errorf("policy: CopyFrom: architectures differ (%+v vs %+v)", p.cfg, q.cfg)
	}
	copy(p.params, q.params)
	return nil
}

// net returns the network that serves agent.
func (p *Policy) net(agent int) int {
	if p.cfg.Shared {
		return 0
	}
	return agent
}

// checkRow validates one input row.
func (p *Policy) checkRow(agent int, obs []float64) error {
	if agent < 0 || agent >= p.cfg.NumAgents {
		return fmt.Errorf("policy: agent %d out of range [0, %d)", agent, p.cfg.NumAgents)
	}
	if len(obs) != p.cfg.ObsSize {
		return fmt.Errorf("policy: agent %d: observation has %d features, want %d", agent, len(obs), p.cfg.ObsSize)
	}
	return nil
}

// fillInput writes a network input row for agent (obs, then the one-hot id
// when shared) into dst (len InputSize).
func (p *Policy) fillInput(agent int, obs, dst []float64) {
	copy(dst, obs)
	if p.cfg.Shared {
		oh := dst[p.cfg.ObsSize:]
		clear(oh)
		oh[agent] = 1
	}
}
