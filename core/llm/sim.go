package llm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/core"
)

// simStream is the second PCG word of the sim backend's generators, so that
// they differ from other generators seeded with the same request seed.
const simStream = 0x73696d5f6c6c6d31 // "sim_llm1"

// Sim is the simulated LLM (BackendSim), a core.LLM that runs offline: its
// text is the env's own surrogate (core.Simulator) and its latency is
// virtual, computed from a LatencyModel, so Chat never sleeps. Every Usage
// it returns has Backend "sim". It is safe for concurrent use if the
// Simulator is.
type Sim struct {
	sim   core.Simulator
	spec  core.EnvSpec
	tiers map[string]LatencyModel
	def   LatencyModel
	acc   accounting
}

// NewSim returns a sim backend (BackendSim) for the env described by spec,
// whose Simulator s writes the text. The spec maps ChatRequest.Decision (a
// name) to the decision index the Simulator takes, and gives each
// decision's latency tier. m is the latency model of the default tier (the
// tier "" or "default", and any tier not in tiers); tiers, which may be
// nil, gives other tiers their own models.
func NewSim(s core.Simulator, spec core.EnvSpec, m LatencyModel, tiers map[string]LatencyModel) (*Sim, error) {
	if s == nil {
		return nil, fmt.Errorf("sim: env %q has no simulator (the env must implement core.Simulator and its spec declare core.CapSimulate)", spec.Name)
	}
	if len(spec.Decisions) == 0 {
		return nil, fmt.Errorf("sim: env %q spec lists no decisions", spec.Name)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("sim: default tier: %w", err)
	}
	sm := &Sim{sim: s, spec: spec, tiers: map[string]LatencyModel{}, def: m}
	names := make([]string, 0, len(tiers))
	for name := range tiers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "" || name == "default" {
			return nil, fmt.Errorf("sim: tier %q is the default tier: set it with the default model", name)
		}
		tm := tiers[name]
		if err := tm.Validate(); err != nil {
			return nil, fmt.Errorf("sim: tier %q: %w", name, err)
		}
		sm.tiers[name] = tm
	}
	return sm, nil
}

// latencyModel returns the latency model of the named tier.
func (s *Sim) latencyModel(tier string) LatencyModel {
	if tier == "" || tier == "default" {
		return s.def
	}
	if m, ok := s.tiers[tier]; ok {
		return m
	}
	return s.def
}

// accounting returns the backend's running totals.
func (s *Sim) accounting() *accounting { return &s.acc }

// String names the backend and its env.
func (s *Sim) String() string { return "sim(env=" + s.spec.Name + ")" }

// Chat asks the env's Simulator for the completion, with a generator seeded
// by rand.NewPCG(req.Seed, simStream) so the same request gives the same
// text. Token counts come from the Simulator (estimated at four characters
// a token when it reports zero); a completion longer than req.MaxTokens
// (when set) is cut to it, as an endpoint stops at max_tokens. Latency
// comes from the tier's model: the request's Tier, else the decision's
// DecisionSpec.Tier, else the default.
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
	u := core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Backend: string(BackendSim)}
	estimated := false
	if u.PromptTokens == 0 {
		u.PromptTokens = EstimatePromptTokens(req.Messages)
		estimated = true
	}
	if u.CompletionTokens == 0 && c.Text != "" {
		u.CompletionTokens = estimateTokens(c.Text)
		estimated = true
	}
	text := c.Text
	if req.MaxTokens > 0 && u.CompletionTokens > req.MaxTokens {
		// An endpoint stops generating at max_tokens; so does the sim.
		text = cutText(text, req.MaxTokens, u.CompletionTokens)
		u.CompletionTokens = req.MaxTokens
	}
	tier := req.Tier
	if tier == "" {
		tier = s.spec.Decisions[d].Tier
	}
	u.Latency = s.latencyModel(tier).Latency(u.PromptTokens, u.CompletionTokens)
	s.acc.RecordCall(req.Agent, u, 0, estimated)
	return core.ChatResponse{Text: text, Usage: u}, nil
}

// cutText returns the first keep/of of text (by bytes, never splitting a
// UTF-8 character): a completion of `of` tokens stopped after keep.
func cutText(text string, keep, of int) string {
	n := int(int64(len(text)) * int64(keep) / int64(of))
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

func (s *Sim) decisionNames() string {
	names := make([]string, len(s.spec.Decisions))
	for i, d := range s.spec.Decisions {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}
