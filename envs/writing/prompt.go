package writing

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// Prompt builds agent's LLM request for a text decision from its own
// context only, and reserves the unit it will write (see the package doc).
// It implements core.Prompter.
func (e *Env) Prompt(agent, decision int) core.ChatRequest {
	if !e.started || agent < 0 || agent >= len(e.agents) || decision < 0 || decision >= numDecisions {
		return core.ChatRequest{Agent: agent, Messages: []core.Message{{Role: "user", Content: "No task."}}}
	}
	k := -1
	if decisionSpecs[decision].NeedsText {
		k = e.target(agent, decision)
	}
	ag := &e.agents[agent]
	var ctx []ctxUnit
	var older []int
	start := max(0, len(ag.recent)-e.p.ContextUnits)
	for _, r := range ag.recent[:start] {
		older = append(older, r)
	}
	for _, r := range ag.recent[start:] {
		who := "you"
		if e.units[r].lastWriter != agent && e.units[r].author != agent {
			who = "a peer"
		}
		ctx = append(ctx, ctxUnit{unit: r, who: who, text: ag.seenText[r]})
	}
	current := ""
	if decision == decEditPeer && k >= 0 {
		current = e.units[k].text
	}
	return e.buildRequest(agent, decision, k, ag.read, ctx, older, current)
}

// Simulate stands in for the LLM (core.Simulator): the reserved unit's real
// RFC text rendered in the writer's habits, or in the house style with
// slips when the writer has read it. Token counts: the prompt's, and
// completion = ⌈1.3 × words⌉ of the text.
func (e *Env) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	if !e.started {
		return core.SimCompletion{}, errors.New("writing: Simulate before Reset")
	}
	if agent < 0 || agent >= len(e.agents) || decision < 0 || decision >= numDecisions {
		return core.SimCompletion{}, fmt.Errorf("writing: Simulate: agent %d decision %d out of range", agent, decision)
	}
	if !decisionSpecs[decision].NeedsText {
		return core.SimCompletion{}, fmt.Errorf("writing: Simulate: decision %q needs no text", decisionSpecs[decision].Name)
	}
	if rng == nil {
		rng = e.rng
	}
	k := e.target(agent, decision)
	pt := promptTokens(req)
	if k < 0 {
		return core.SimCompletion{Text: "", PromptTokens: pt}, nil
	}
	read := e.agents[agent].read || decision == decEditPeer
	text := e.simulateUnit(agent, k, read, rng)
	return core.SimCompletion{Text: text, PromptTokens: pt, CompletionTokens: tokensOf(text)}, nil
}

// simulateUnit renders unit k as writer i would.
func (e *Env) simulateUnit(i, k int, read bool, rng *rand.Rand) string {
	st := e.habits[i]
	slipP := e.p.StructureSlipProb
	if read {
		st = mix(e.house, e.habits[i], e.p.StyleFollowProb, rng)
		slipP = e.p.StyledStructureSlipProb
	}
	slip := slipNone
	x, kind, alt := rng.Float64(), rng.IntN(2), rng.IntN(2)
	if x < slipP {
		slip = slipRename + slipKind(kind)
	}
	return render(e.rfc.Units[k].Source, st, slip, alt)
}

// ctxUnit is one unit quoted in a prompt.
type ctxUnit struct {
	unit int
	who  string
	text string
}

func (e *Env) buildBrief() string {
	r := e.rfc
	var b strings.Builder
	fmt.Fprintf(&b, "You are writing %q, a Rust RFC, with a team of %d writers. ", r.Title, e.p.Writers)
	b.WriteString("The RFC follows the Rust RFC template. What it proposes, in the words of its Summary:\n\n")
	sum := e.rfc.Units[0].Source
	if _, after, ok := strings.Cut(sum, "## Summary"); ok {
		sum = after
	}
	if i := strings.Index(sum, "\n### "); i >= 0 {
		sum = sum[:i]
	}
	b.WriteString(strings.TrimSpace(sum))
	b.WriteString("\n")
	return b.String()
}

// outlineText lists the units with their headings and lengths.
func (e *Env) outlineText() string {
	var b strings.Builder
	for k, u := range e.rfc.Units {
		fmt.Fprintf(&b, "%d. %s (about %d words)\n", k, u.Path, u.Words)
	}
	return b.String()
}

func headingsText(hs []OutlineHeading) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, fmt.Sprintf("H%d %q", h.Level, h.Text))
	}
	return strings.Join(parts, ", then ")
}

// buildRequest builds a prompt from the given pieces of one agent's own
// context.
func (e *Env) buildRequest(agent, decision, k int, read bool, ctx []ctxUnit, older []int, current string) core.ChatRequest {
	var b strings.Builder
	b.WriteString("## Brief\n\n")
	b.WriteString(e.brief)
	b.WriteString("\n## Outline (units of work, in document order)\n\n")
	b.WriteString(e.outlineText())
	if read {
		b.WriteString("\n## House style\n\n")
		b.WriteString(e.guide)
	}
	if len(older) > 0 || len(ctx) > 0 {
		b.WriteString("\n## What you have read or written so far\n\n")
		for _, o := range older {
			fmt.Fprintf(&b, "- unit %d (%s), not quoted again\n", o, e.rfc.Units[o].Path)
		}
		for _, c := range ctx {
			fmt.Fprintf(&b, "\n### Unit %d, written by %s\n\n%s\n", c.unit, c.who, c.text)
		}
	}
	b.WriteString("\n## Your task\n\n")
	maxTok := 256
	switch {
	case !decisionSpecs[decision].NeedsText:
		fmt.Fprintf(&b, "Your decision is %s; it needs no text. Reply with nothing.\n", decisionSpecs[decision].Name)
	case k < 0:
		b.WriteString("Every unit is taken; there is nothing for you to write. Reply with nothing.\n")
	case decision == decEditPeer:
		u := e.rfc.Units[k]
		fmt.Fprintf(&b, "Edit unit %d (%s), written by a peer, so that it follows the house style and the outline conventions exactly; keep its content. "+
			"Its headings must be: %s. Reply with the whole edited unit in Markdown and nothing else.\n\n%s\n", k, u.Path, headingsText(u.Headings), current)
		maxTok += 2 * u.Tokens
	default:
		u := e.rfc.Units[k]
		fmt.Fprintf(&b, "Write unit %d: %s, about %d words. Start with its heading(s): %s. ", k, u.Path, u.Words, headingsText(u.Headings))
		if k == 0 && len(u.Headings) > 0 && u.Headings[0].Level == 1 {
			b.WriteString("As the first unit it carries the document title and, below it, the RFC's metadata list (Feature Name, Start Date, RFC PR, Rust Issue). ")
		}
		b.WriteString("Write only this unit, in Markdown, nothing else.\n")
		maxTok += 2 * u.Tokens
	}
	return core.ChatRequest{
		Messages: []core.Message{
			{Role: "system", Content: fmt.Sprintf("You are writer_%d, one of %d technical writers drafting a Rust RFC together. You see only your own notes.", agent, e.p.Writers)},
			{Role: "user", Content: b.String()},
		},
		MaxTokens:   maxTok,
		Temperature: 0.7,
		Agent:       agent,
		Decision:    decisionSpecs[decision].Name,
	}
}

func promptTokens(req core.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += tokensOf(m.Content)
	}
	return n
}

// Latency returns the env's latency model for one call, as a duration
// (for tests and runtimes that want the same model).
func (e *Env) Latency(prompt, completion int) time.Duration {
	return time.Duration(e.latency(prompt, completion) * float64(time.Second))
}
