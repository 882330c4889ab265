package writing

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// Prompt builds agent's LLM request for a text decision from its own
// context only, and reserves the unit it will write (see the package doc).
// The prompt quotes, as the agent last read them, the units the target
// depends on and the context_units units it read or wrote most recently;
// units it has not read are named, not quoted. It implements
// core.Prompter.
func (e *Env) Prompt(agent, decision int) core.ChatRequest {
	if !e.started || agent < 0 || agent >= len(e.agents) || decision < 0 || decision >= numDecisions {
		return core.ChatRequest{Agent: agent, Messages: []core.Message{{Role: "user", Content: "No task."}}}
	}
	k := -1
	if decisionSpecs[decision].NeedsText {
		k = e.target(agent, decision)
	}
	ag := &e.agents[agent]
	start := max(0, len(ag.recent)-e.p.ContextUnits)
	known := func(j int) bool { _, ok := ag.seenText[j]; return ok && j != k }
	quoted := e.contextUnits(k, ag.recent[start:], known)
	var ctx []ctxUnit
	in := map[int]bool{}
	for _, r := range quoted {
		in[r] = true
		who := "you"
		if e.units[r].lastWriter != agent && e.units[r].author != agent {
			who = "a peer"
		}
		ctx = append(ctx, ctxUnit{unit: r, who: who, text: ag.seenText[r]})
	}
	var older []int
	for _, r := range ag.recent {
		if !in[r] && r != k {
			older = append(older, r)
		}
	}
	current := ""
	if decision == decEditPeer && k >= 0 {
		current = e.units[k].text
	}
	return e.buildRequest(agent, decision, k, ag.read, ctx, older, current)
}

// contextUnits returns the units a prompt for target k quotes: k's
// dependencies that known accepts, then the recent ones it accepts, each
// once.
func (e *Env) contextUnits(k int, recent []int, known func(int) bool) []int {
	var out []int
	seen := map[int]bool{}
	if k >= 0 {
		for _, j := range e.rfc.Units[k].DependsOn {
			if known(j) && !seen[j] {
				seen[j] = true
				out = append(out, j)
			}
		}
	}
	for _, j := range recent {
		if known(j) && !seen[j] && j != k {
			seen[j] = true
			out = append(out, j)
		}
	}
	return out
}

// ctxUnit is one unit quoted in a prompt.
type ctxUnit struct {
	unit int
	who  string
	text string
}

// Quoted units are delimited in prompts by these markers, which Simulate
// reads back.
const (
	quoteOpen  = "<<<unit "
	quoteClose = "<<<end of unit "
)

func (e *Env) buildBrief() string {
	r := e.rfc
	var b strings.Builder
	fmt.Fprintf(&b, "You are writing %q, a Rust RFC, with a team of %d writers. ", r.Title, e.p.Writers)
	b.WriteString("The RFC follows the Rust RFC template. What it proposes, in the words of its Summary:\n\n")
	b.WriteString(e.summaryLead())
	b.WriteString("\n")
	return b.String()
}

// summaryLead is the Summary's lead text as the RFC writes it.
func (e *Env) summaryLead() string {
	sum := e.rfc.Units[0].Source
	if _, after, ok := strings.Cut(sum, "## Summary"); ok {
		sum = after
	}
	if i := strings.Index(sum, "\n### "); i >= 0 {
		sum = sum[:i]
	}
	return strings.TrimSpace(sum)
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
			fmt.Fprintf(&b, "\n%s%d, written by %s>>>\n%s\n%s%d>>>\n", quoteOpen, c.unit, c.who, c.text, quoteClose, c.unit)
		}
	}
	if k >= 0 && decisionSpecs[decision].NeedsText {
		var unread []string
		quoted := map[int]bool{}
		for _, c := range ctx {
			quoted[c.unit] = true
		}
		for _, j := range e.rfc.Units[k].DependsOn {
			if !quoted[j] {
				unread = append(unread, strconv.Itoa(j))
			}
		}
		if len(unread) > 0 {
			fmt.Fprintf(&b, "\nUnit %d builds on units %s, which you have not read; keep to the outline's wording for them.\n", k, strings.Join(unread, ", "))
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
		fmt.Fprintf(&b, "Edit unit %d (%s), written by a peer, so that it follows the house style and the outline conventions exactly, "+
			"writes every term as the units you have read do, refers to other sections by their current headings and does not repeat them; keep its content. "+
			"Its headings must be: %s. Reply with the whole edited unit in Markdown and nothing else.\n\n%s%d, current text>>>\n%s\n%s%d>>>\n",
			k, u.Path, headingsText(u.Headings), quoteOpen, k, current, quoteClose, k)
		maxTok += 2 * u.Tokens
	default:
		u := e.rfc.Units[k]
		fmt.Fprintf(&b, "Write unit %d: %s, about %d words. Start with its heading(s): %s. ", k, u.Path, u.Words, headingsText(u.Headings))
		if k == 0 && len(u.Headings) > 0 && u.Headings[0].Level == 1 {
			b.WriteString("As the first unit it carries the document title and, below it, the RFC's metadata list (Feature Name, Start Date, RFC PR, Rust Issue). ")
		}
		b.WriteString("Use the terms and headings of the units you have read as they write them. Write only this unit, in Markdown, nothing else.\n")
		maxTok += 2 * u.Tokens
	}
	tier := e.team[agent]
	return core.ChatRequest{
		Messages: []core.Message{
			{Role: "system", Content: fmt.Sprintf("You are writer_%d (%s), one of %d technical writers drafting a Rust RFC together. You see only your own notes.", agent, tier.Name, e.p.Writers)},
			{Role: "user", Content: b.String()},
		},
		MaxTokens:   maxTok,
		Temperature: 0.7,
		Agent:       agent,
		Decision:    decisionSpecs[decision].Name,
	}
}

// quotedUnits reads back the units a prompt quotes (unit → text), the way
// Simulate learns what the writer has in front of it.
func quotedUnits(prompt string) map[int]string {
	out := map[int]string{}
	for {
		i := strings.Index(prompt, quoteOpen)
		if i < 0 {
			return out
		}
		rest := prompt[i+len(quoteOpen):]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		k, err := strconv.Atoi(rest[:j])
		nl := strings.IndexByte(rest, '\n')
		if err != nil || nl < 0 {
			prompt = rest
			continue
		}
		body := rest[nl+1:]
		end := strings.Index(body, "\n"+quoteClose+strconv.Itoa(k)+">>>")
		if end < 0 {
			prompt = rest
			continue
		}
		out[k] = body[:end]
		prompt = body[end:]
	}
}

func promptTokens(req core.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += tokensOf(m.Content)
	}
	return n
}

// Latency returns writer agent's tier latency for one call, as a duration
// (for tests and runtimes that want the same model).
func (e *Env) Latency(agent, prompt, completion int) time.Duration {
	if agent < 0 || agent >= len(e.team) {
		return 0
	}
	return time.Duration(e.team[agent].latency(prompt, completion) * float64(time.Second))
}

var errNotStarted = errors.New("writing: Simulate before Reset")

func sortedKeys(m map[int]string) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}
