package llm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// BackendSim is the Usage.Backend of every completion of the simulated LLM.
const BackendSim = "sim"

// simStream is the second PCG word of the sim backend's generators, so that
// they differ from other generators seeded with the same request seed.
const simStream = 0x73696d5f6c6c6d31 // "sim_llm1"

// LatencyModel is the simulated latency of one completion:
// Base + prompt tokens ÷ PrefillTPS + completion tokens ÷ DecodeTPS.
type LatencyModel struct {
	// Base is the fixed per-call latency (network, queueing, first token).
	Base time.Duration `toml:"base" json:"base"`
	// PrefillTPS is the prompt throughput in tokens per second.
	PrefillTPS float64 `toml:"prefill_tps" json:"prefill_tps"`
	// DecodeTPS is the generation throughput in tokens per second.
	DecodeTPS float64 `toml:"decode_tps" json:"decode_tps"`
}

// DefaultLatencyModel is the default tier: 0.8 s base, 2000 prompt tokens/s,
// 40 completion tokens/s (a hosted mid-size model).
var DefaultLatencyModel = LatencyModel{Base: 800 * time.Millisecond, PrefillTPS: 2000, DecodeTPS: 40}

// Latency returns the modelled latency of a call with the given token
// counts, rounded to the nanosecond.
func (m LatencyModel) Latency(promptTokens, completionTokens int) time.Duration {
	s := float64(promptTokens)/m.PrefillTPS + float64(completionTokens)/m.DecodeTPS
	return m.Base + time.Duration(math.Round(s*float64(time.Second)))
}

// Validate reports a negative base or a non-positive throughput.
func (m LatencyModel) Validate() error {
	switch {
	case m.Base < 0:
		return fmt.Errorf("base must be >= 0, got %s", m.Base)
	case !(m.PrefillTPS > 0) || math.IsInf(m.PrefillTPS, 0):
		return fmt.Errorf("prefill_tps must be a positive number, got %v", m.PrefillTPS)
	case !(m.DecodeTPS > 0) || math.IsInf(m.DecodeTPS, 0):
		return fmt.Errorf("decode_tps must be a positive number, got %v", m.DecodeTPS)
	}
	return nil
}

// SimConfig configures the sim backend.
type SimConfig struct {
	// Tiers maps a tier name to its latency model. The key "" or "default"
	// sets the default tier (DefaultLatencyModel when neither is present);
	// a tier a request names but this map lacks gets the default tier.
	Tiers map[string]LatencyModel `toml:"tiers" json:"tiers,omitempty"`
}

// Sim is the simulated LLM, a core.LLM that runs offline: its text is the
// env's own surrogate (core.Simulator) and its latency is virtual, computed
// from a LatencyModel, so Chat never sleeps. Every Usage it returns has
// Backend "sim". It is safe for concurrent use if the Simulator is.
type Sim struct {
	sim   core.Simulator
	spec  core.EnvSpec
	tiers map[string]LatencyModel
	def   LatencyModel
	acc   Accounting
}

// NewSim returns a sim backend for the env described by spec, whose
// Simulator s writes the text. The spec maps ChatRequest.Decision (a name)
// to the decision index the Simulator takes, and gives each decision's
// default latency tier.
func NewSim(s core.Simulator, spec core.EnvSpec, cfg SimConfig) (*Sim, error) {
	if s == nil {
		return nil, fmt.Errorf("sim: env %q has no simulator (it does not implement core.Simulator)", spec.Name)
	}
	if len(spec.Decisions) == 0 {
		return nil, fmt.Errorf("sim: env %q spec lists no decisions", spec.Name)
	}
	sm := &Sim{sim: s, spec: spec, tiers: map[string]LatencyModel{}, def: DefaultLatencyModel}
	names := make([]string, 0, len(cfg.Tiers))
	for name := range cfg.Tiers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := cfg.Tiers[name]
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("sim: tier %q: %w", name, err)
		}
		sm.tiers[name] = m
	}
	d1, ok1 := cfg.Tiers[""]
	d2, ok2 := cfg.Tiers["default"]
	switch {
	case ok1 && ok2 && d1 != d2:
		return nil, fmt.Errorf(`sim: tiers "" and "default" both set and differ; set one`)
	case ok1:
		sm.def = d1
	case ok2:
		sm.def = d2
	}
	return sm, nil
}

// LatencyModel returns the latency model of the named tier.
func (s *Sim) LatencyModel(tier string) LatencyModel {
	if tier == "" || tier == "default" {
		return s.def
	}
	if m, ok := s.tiers[tier]; ok {
		return m
	}
	return s.def
}

// Accounting returns the backend's running totals.
func (s *Sim) Accounting() *Accounting { return &s.acc }

// String names the backend and its env.
func (s *Sim) String() string { return "sim(env=" + s.spec.Name + ")" }

// Chat asks the env's Simulator for the completion, with a generator seeded
// by rand.NewPCG(req.Seed, simStream) so the same request gives the same
// text. Token counts come from the Simulator (estimated at four characters
// a token when it reports zero); Latency comes from the tier's model: the
// request's Tier, else the decision's DecisionSpec.Tier, else the default.
func (s *Sim) Chat(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	if err := ctx.Err(); err != nil {
		s.acc.RecordFailure(req.Agent, 0)
		return core.ChatResponse{}, fmt.Errorf("sim: %w", err)
	}
	d := s.spec.DecisionIndex(req.Decision)
	if d < 0 {
		s.acc.RecordFailure(req.Agent, 0)
		return core.ChatResponse{}, fmt.Errorf("sim: env %q has no decision %q (have %s)", s.spec.Name, req.Decision, s.decisionNames())
	}
	if req.Agent < 0 || (len(s.spec.Agents) > 0 && req.Agent >= len(s.spec.Agents)) {
		s.acc.RecordFailure(req.Agent, 0)
		return core.ChatResponse{}, fmt.Errorf("sim: env %q: agent %d out of range [0, %d)", s.spec.Name, req.Agent, len(s.spec.Agents))
	}
	rng := rand.New(rand.NewPCG(req.Seed, simStream))
	c, err := s.sim.Simulate(req.Agent, d, req, rng)
	if err != nil {
		s.acc.RecordFailure(req.Agent, 0)
		return core.ChatResponse{}, fmt.Errorf("sim: env %q agent %d decision %q: %w", s.spec.Name, req.Agent, req.Decision, err)
	}
	if c.PromptTokens < 0 || c.CompletionTokens < 0 {
		s.acc.RecordFailure(req.Agent, 0)
		return core.ChatResponse{}, fmt.Errorf("sim: env %q agent %d decision %q: simulator reported negative tokens (%d, %d)", s.spec.Name, req.Agent, req.Decision, c.PromptTokens, c.CompletionTokens)
	}
	u := core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Backend: BackendSim}
	estimated := false
	if u.PromptTokens == 0 {
		u.PromptTokens = estimatePromptTokens(req.Messages)
		estimated = true
	}
	if u.CompletionTokens == 0 && c.Text != "" {
		u.CompletionTokens = estimateTokens(c.Text)
		estimated = true
	}
	tier := req.Tier
	if tier == "" {
		tier = s.spec.Decisions[d].Tier
	}
	u.Latency = s.LatencyModel(tier).Latency(u.PromptTokens, u.CompletionTokens)
	s.acc.RecordCall(req.Agent, u, 0, estimated)
	return core.ChatResponse{Text: c.Text, Usage: u}, nil
}

func (s *Sim) decisionNames() string {
	names := make([]string, len(s.spec.Decisions))
	for i, d := range s.spec.Decisions {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}
