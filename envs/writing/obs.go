package writing

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/ratelimit"
)

// observations builds every agent's observation and remembers the masks.
func (e *Env) observations() []core.Observation {
	obs := make([]core.Observation, len(e.agents))
	e.masks = make([][]bool, len(e.agents))
	board := e.boardLines()
	for i := range e.agents {
		m := e.legal(i)
		e.masks[i] = m
		obs[i] = core.Observation{Features: e.features(i), Text: e.contextText(i, board), Mask: m}
	}
	return obs
}

// features computes agent i's policy input (see the Feat* constants). It
// uses only what the agent knows: its own state, the shared task board
// (claims and completions, not texts) and what it has read.
func (e *Env) features(i int) []float64 {
	f := make([]float64, numFeatures)
	ag := &e.agents[i]
	n := float64(len(e.units))
	f[featBias] = 1
	f[featBusy] = b2f(ag.task != taskNone)
	f[featSubmitted] = b2f(ag.submitted)
	f[featReadStyle] = b2f(ag.read)
	if e.refMakespan > 0 {
		f[featClock] = e.now / e.refMakespan
	}
	var unclaimedN, inProgress, doneN, unclaimedTok, knownDev, unread int
	longest, next := 0, -1
	reviewable := false
	for k := range e.units {
		u := &e.units[k]
		switch u.status {
		case unclaimed:
			unclaimedN++
			unclaimedTok += e.rfc.Units[k].Tokens
			longest = max(longest, e.rfc.Units[k].Tokens)
			if next < 0 {
				next = e.rfc.Units[k].Tokens
			}
		case drafting:
			inProgress++
		case done:
			doneN++
			if u.owner >= 0 {
				inProgress++
			}
			if u.lastWriter != i {
				editable := e.editable(i, k)
				if ag.seen[k] == u.version {
					if u.defective() && editable {
						knownDev++
					}
				} else {
					unread++
					if u.edits == 0 && editable {
						reviewable = true
					}
				}
			}
		}
	}
	f[featUnclaimed] = float64(unclaimedN) / n
	f[featInProgress] = float64(inProgress) / n
	f[featDone] = float64(doneN) / n
	f[featLongest] = math.Min(float64(longest)/e.meanTokens/4, 2)
	if next >= 0 {
		f[featNext] = math.Min(float64(next)/e.meanTokens/4, 2)
	}
	f[featUnclaimedWork] = float64(unclaimedTok) / float64(e.rfc.Tokens)
	f[featKnownDefective] = math.Min(float64(knownDev)/4, 1)
	f[featUnreadPeer] = float64(unread) / n
	if len(e.agents) > 1 {
		busy, sub := 0, 0
		for j := range e.agents {
			if j == i {
				continue
			}
			if e.agents[j].task != taskNone {
				busy++
			}
			if e.agents[j].submitted {
				sub++
			}
		}
		f[featPeersBusy] = float64(busy) / float64(len(e.agents)-1)
		f[featPeersSubmitted] = float64(sub) / float64(len(e.agents)-1)
	}
	f[featOwnDrafts] = float64(ag.drafted) / n
	f[featReviewable] = b2f(reviewable && ag.read)
	f[featTeamSize] = float64(len(e.agents)) / 8
	tier := e.team[i]
	unitTime := tier.latency(0, int(e.meanTokens))
	if ag.read && ag.task == taskNone && !ag.submitted {
		if k := e.editTarget(i, -1); k >= 0 {
			f[featEditSize] = math.Min(float64(e.rfc.Units[k].Tokens)/e.meanTokens/4, 2)
		}
	}
	f[featPeersRemaining] = math.Min(e.peersRemaining(i)/unitTime/4, 1)
	ready, longestK := 0, -1
	for k := range e.units {
		if e.units[k].status != unclaimed {
			continue
		}
		if e.depsDrafted(k) {
			ready++
		}
		if longestK < 0 || e.rfc.Units[k].Tokens > e.rfc.Units[longestK].Tokens {
			longestK = k
		}
	}
	f[featReady] = float64(ready) / n
	if longestK >= 0 {
		f[featLongestBlocked] = b2f(!e.depsDrafted(longestK))
	}
	if ag.task == taskNone && !ag.submitted {
		if k := e.draftTarget(i, decDraftReady); k >= 0 {
			deps, unreadDeps := 0, 0
			for _, j := range e.rfc.Units[k].DependsOn {
				if u := &e.units[j]; u.version > 0 {
					deps++
					if ag.seen[j] != u.version {
						unreadDeps++
					}
				}
			}
			if deps > 0 {
				f[featDepsUnread] = float64(unreadDeps) / float64(deps)
			}
		}
	}
	f[featOwnSpeed] = tier.DecodeTPS / 100
	f[featOwnPrice] = tier.OutputUSDPerM / 10
	f[featOwnErrors] = tier.TermDriftProb
	if len(e.agents) > 1 {
		other := 0
		for j := range e.agents {
			if j != i && e.team[j].Name != tier.Name {
				other++
			}
		}
		f[featTeamMixed] = float64(other) / float64(len(e.agents)-1)
	}
	reqs, toks := e.windowUse()
	if e.limit.TokensPerMinute > 0 {
		tpm := float64(e.limit.TokensPerMinute)
		f[featLimitTokens] = math.Min(float64(toks)/tpm, 1)
		f[featLimitTight] = math.Min(30000/tpm, 1)
		f[featLongestVsLimit] = math.Min(10*float64(longest)/tpm, 1)
		f[featDocVsLimit] = math.Min(2*float64(e.rfc.Tokens)/tpm, 1)
	}
	if e.limit.RequestsPerMinute > 0 {
		f[featLimitRequests] = math.Min(float64(reqs)/float64(e.limit.RequestsPerMinute), 1)
	}
	return f
}

// windowUse returns the calls started, and the tokens they charged, in the
// rate-limit window (now − 60 s, now].
func (e *Env) windowUse() (requests, tokens int) {
	for j := len(e.calls) - 1; j >= 0; j-- {
		c := e.calls[j]
		if c.start > e.now {
			continue // queued, not started yet
		}
		if c.start <= e.now-60 {
			break
		}
		requests++
		tokens += c.tokens
	}
	return requests, tokens
}

// peersRemaining estimates, from the task board, how long until every
// other agent is free: a peer drafting or editing unit u since time s is
// expected to finish at s + its tier's time to write u's tokens (a read
// counts as done).
func (e *Env) peersRemaining(i int) float64 {
	rem := 0.0
	for j := range e.agents {
		a := &e.agents[j]
		if j == i || (a.task != taskDraft && a.task != taskEdit) {
			continue
		}
		end := a.startAt + e.team[j].latency(0, e.rfc.Units[a.unit].Tokens)
		rem = math.Max(rem, end-e.now)
	}
	return rem
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// contextText is agent i's context in brief: the brief, the task board and
// what it has read or written (by heading; Prompt quotes texts in full).
// board holds the shared part of every board line.
func (e *Env) contextText(i int, board []string) string {
	ag := &e.agents[i]
	var b strings.Builder
	b.Grow(len(e.contextHead) + len(e.guide) + 64*len(board) + 128)
	fmt.Fprintf(&b, "You are writer_%d, on %s. t = %.1f s.\n", i, e.team[i].Name, e.now)
	b.WriteString(e.contextHead)
	for k, line := range board {
		u := &e.units[k]
		b.WriteString(line)
		if u.status == done && u.owner < 0 && u.lastWriter != i {
			if ag.seen[k] != u.version {
				b.WriteString(", not read by you")
			} else if u.defective() {
				b.WriteString(", you found it inconsistent")
			}
		}
		b.WriteByte('\n')
	}
	if ag.read {
		b.WriteString("\n")
		b.WriteString(e.guide)
	} else {
		b.WriteString("\nYou have not read the house style.\n")
	}
	return b.String()
}

// buildContextHead returns what contextText writes after its first line
// and before the task board's lines: the team, the rate limit and the
// brief, the same for every agent all episode.
func (e *Env) buildContextHead() string {
	var b strings.Builder
	b.WriteString("Team: ")
	for j, t := range e.team {
		if j > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "writer_%d on %s", j, t.Name)
	}
	fmt.Fprintf(&b, ". Shared rate limit: %s.\n\n", limitText(e.limit))
	b.WriteString(e.brief)
	b.WriteString("\nTask board:\n")
	return b.String()
}

// boardLines returns the shared part of the task board, one line a unit.
func (e *Env) boardLines() []string {
	lines := make([]string, len(e.units))
	for k, ru := range e.rfc.Units {
		u := &e.units[k]
		var status string
		switch {
		case u.status == unclaimed:
			status = "unclaimed"
		case u.status == drafting:
			status = "being drafted by writer_" + itoa(u.owner)
		case u.owner >= 0:
			status = "drafted by writer_" + itoa(u.author) + ", being edited by writer_" + itoa(u.owner)
		default:
			status = "drafted by writer_" + itoa(u.author) + " (version " + itoa(u.version) + ")"
		}
		lines[k] = itoa(k) + ". " + ru.Path + " (" + itoa(ru.Words) + " words): " + status
	}
	return lines
}

func itoa(i int) string { return strconv.Itoa(i) }

// limitText describes a rate limit.
func limitText(l ratelimit.Config) string {
	part := func(n int, what string) string {
		if n == 0 {
			return "unlimited " + what
		}
		return itoa(n) + " " + what + " per minute"
	}
	return part(l.RequestsPerMinute, "requests") + ", " + part(l.TokensPerMinute, "tokens")
}

// Per-agent and per-unit widths of the global state.
const (
	stateAgentWidth = 10
	stateUnitWidth  = 11 + numHabits
)

func stateSize(writers, maxUnits int) int {
	return 4 + stateAgentWidth*writers + stateUnitWidth*maxUnits
}

// State returns the global state for centralized training (length
// EnvSpec.StateSize): the clock ÷ reference makespan, the document's
// units ÷ the corpus maximum, and the rate limit's fill (tokens and
// requests of the last 60 s ÷ the limit); per agent (10): busy, remaining
// busy time ÷ mean unit time, read the style, submitted, the task kind
// read/draft/edit one-hot, its tier's decode speed ÷ 100, output price ÷
// 10 and term-drift probability; per unit slot up to the corpus' largest
// document (19): present, status unclaimed/drafting/done one-hot, being
// edited, size ÷ mean unit ÷ 4, defective, outline correct, term written
// otherwise than its introducer, reference to a heading its target lacks,
// restates another unit, and one flag per habit
// (heading style, heading case, bullet, emphasis, strong, code, spelling,
// person) deviating from the house style.
func (e *Env) State() []float64 {
	s := make([]float64, e.spec.StateSize)
	if !e.started {
		return s
	}
	if e.refMakespan > 0 {
		s[0] = e.now / e.refMakespan
	}
	s[1] = float64(len(e.units)) / float64(max(1, e.maxUnits))
	reqs, toks := e.windowUse()
	if e.limit.TokensPerMinute > 0 {
		s[2] = math.Min(float64(toks)/float64(e.limit.TokensPerMinute), 1)
	}
	if e.limit.RequestsPerMinute > 0 {
		s[3] = math.Min(float64(reqs)/float64(e.limit.RequestsPerMinute), 1)
	}
	o := 4
	for i := range e.agents {
		ag := &e.agents[i]
		t := e.team[i]
		s[o] = b2f(ag.task != taskNone)
		if ag.task != taskNone {
			s[o+1] = math.Min((ag.busyUntil-e.now)/t.latency(0, int(e.meanTokens)), 10)
		}
		s[o+2] = b2f(ag.read)
		s[o+3] = b2f(ag.submitted)
		s[o+4] = b2f(ag.task == taskRead)
		s[o+5] = b2f(ag.task == taskDraft)
		s[o+6] = b2f(ag.task == taskEdit)
		s[o+7] = t.DecodeTPS / 100
		s[o+8] = t.OutputUSDPerM / 10
		s[o+9] = t.TermDriftProb
		o += stateAgentWidth
	}
	for k := range e.units {
		u := &e.units[k]
		s[o] = 1
		s[o+1+int(u.status)] = 1
		s[o+4] = b2f(u.owner >= 0 && u.status == done)
		s[o+5] = float64(e.rfc.Units[k].Tokens) / e.meanTokens / 4
		if u.version > 0 {
			s[o+6] = b2f(u.defective())
			s[o+7] = b2f(u.outlineOK)
			s[o+8] = b2f(u.termBad)
			s[o+9] = b2f(u.refBad)
			s[o+10] = b2f(u.repeatOf >= 0)
			for d := 0; d < numHabits; d++ {
				if u.dev&(1<<d) != 0 {
					s[o+11+d] = 1
				}
			}
		}
		o += stateUnitWidth
	}
	return s
}
