package writing

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode"

	"github.com/troupe-dev/troupe/core"
)

// Simulate stands in for the LLM (core.Simulator). It writes the reserved
// unit from its real RFC text as the writer's tier would, conditioned only
// on what the request puts in front of the writer: the house style if the
// prompt carries it, and the units the prompt quotes (as the writer last
// read them; the brief's Summary too). See [Env.write] for what a writer
// does with them. Token counts: the prompt's, and completion =
// ⌈1.3 × words⌉ of the text.
func (e *Env) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	if !e.started {
		return core.SimCompletion{}, errNotStarted
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
	user := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			user += m.Content
		}
	}
	kn := knowledge{
		styled: e.guide != "" && strings.Contains(user, e.guide),
		texts:  quotedUnits(user),
	}
	if lead := e.summaryLead(); strings.Contains(user, lead) {
		kn.brief = lead
	}
	text, _ := e.write(agent, k, decision == decEditPeer, kn, rng)
	return core.SimCompletion{Text: text, PromptTokens: pt, CompletionTokens: tokensOf(text)}, nil
}

// knowledge is what a simulated writer has in front of it.
type knowledge struct {
	styled bool           // the house style guide is in the prompt
	texts  map[int]string // units quoted in the prompt
	brief  string         // the Summary as the brief quotes it ("" if absent)
	prose  map[int]string // the prose of texts, computed once
}

// proseOfUnit returns the prose of quoted unit k.
func (kn *knowledge) proseOfUnit(k int) string {
	if p, ok := kn.prose[k]; ok {
		return p
	}
	if kn.prose == nil {
		kn.prose = map[int]string{}
	}
	p := proseOf(kn.texts[k])
	kn.prose[k] = p
	return p
}

// termForm returns the surface form of term t that the writer's prompt
// shows: the introducing unit's quoted text first, then the brief, then
// any other quoted unit (in template order); "" if none shows it.
func (kn *knowledge) termForm(t Term) string {
	if _, ok := kn.texts[t.Intro]; ok {
		if f := formInProse(kn.proseOfUnit(t.Intro), t); f != "" {
			return f
		}
	}
	if f := formIn(kn.brief, t); f != "" {
		return f
	}
	for _, k := range sortedKeys(kn.texts) {
		if f := formInProse(kn.proseOfUnit(k), t); f != "" {
			return f
		}
	}
	return ""
}

// formIn returns the form of term t that occurs first in the prose of s,
// or "".
func formIn(s string, t Term) string {
	if s == "" {
		return ""
	}
	return formInProse(proseOf(s), t)
}

// formInProse is formIn on prose already extracted.
func formInProse(p string, t Term) string {
	best, at := "", -1
	for _, f := range append([]string{t.Form}, t.Variants...) {
		if i := indexWord(p, f, 0); i >= 0 && (at < 0 || i < at) {
			best, at = f, i
		}
	}
	return best
}

// termForms returns formInProse of prose for every term unit k uses or
// introduces (what refreshDefects compares), keyed by term index.
func (e *Env) termForms(k int, prose string) map[int]string {
	m := map[int]string{}
	for _, ti := range e.rfc.Units[k].Uses {
		m[ti] = formInProse(prose, e.rfc.Terms[ti])
	}
	for ti, t := range e.rfc.Terms {
		if _, ok := m[ti]; !ok && t.Intro == k {
			m[ti] = formInProse(prose, t)
		}
	}
	return m
}

// write renders unit k as writer i would, with what kn puts in front of
// it (edit: rewriting the unit's current text). The generator draws from
// rng in a fixed order, so the same request gives the same text:
//
//   - Style: the tier's own habits, or, with the house style in the
//     prompt, the house style followed per habit with the tier's
//     style_follow_prob; a structure slip with the tier's
//     structure_slip_prob when the style (and its outline conventions) is
//     not in the prompt.
//   - Headings: a draft words a subsection heading its own way with the
//     tier's retitle_prob; an edit restores the outline's headings.
//   - Terms: each term the unit uses is written as the prompt shows it;
//     one the prompt does not show is written in another surface form
//     with the tier's term_drift_prob (the unit that introduces it writes
//     the RFC's form).
//   - Cross-references: a mention of another unit's heading follows that
//     unit's current heading when the prompt quotes it, the outline's
//     wording otherwise.
//   - Repeats: a draft of a unit that builds on units the prompt does not
//     quote restates one paragraph of one of them with the tier's
//     repeat_prob; an edit keeps a repeat unless its writer has the
//     repeated unit in front of it.
//
// It returns the text and the unit it restates (-1 none).
func (e *Env) write(i, k int, edit bool, kn knowledge, rng *rand.Rand) (string, int) {
	tier := e.team[i]
	unit := e.rfc.Units[k]
	src := unit.Source

	st := tier.Habits
	slipP := tier.StructureSlipProb
	if kn.styled {
		st = mix(e.house, tier.Habits, tier.StyleFollowProb, rng)
		slipP = 0
	} else {
		mix(e.house, tier.Habits, 1, rng) // same draws either way
	}
	x, kind, alt := rng.Float64(), rng.IntN(2), rng.IntN(2)
	slip := slipNone
	if x < slipP {
		slip = slipRename + slipKind(kind)
	}
	retitle, how := rng.Float64() < tier.RetitleProb, rng.IntN(len(retitleForms))

	// Terms.
	for _, ti := range append(append([]int(nil), unit.Introduces...), unit.Uses...) {
		t := e.rfc.Terms[ti]
		drift, pick := rng.Float64() < tier.TermDriftProb, rng.IntN(len(t.Variants))
		form := kn.termForm(t)
		if form == "" {
			form = t.Form
			if t.Intro != k && drift {
				form = t.Variants[pick]
			}
		}
		if form != t.Form {
			src = mapProse(src, func(seg string) string { return replaceWord(seg, t.Form, form) })
		}
	}
	// Cross-references.
	for _, ref := range unit.Refs {
		text, ok := kn.texts[ref.Target]
		if !ok {
			continue
		}
		h := currentHeading(text, e.rfc.Units[ref.Target].Headings, ref.Heading)
		if h == "" || strings.EqualFold(h, ref.Mention) {
			continue
		}
		src = mapProse(src, func(seg string) string { return replaceFold(seg, ref.Mention, h) })
		src = strings.ReplaceAll(src, "](#"+anchorOf(ref.Mention)+")", "](#"+anchorOf(h)+")")
	}
	// Repeats.
	rep := -1
	var missing []int
	for _, j := range unit.BuildsOn {
		if _, ok := kn.texts[j]; !ok {
			missing = append(missing, j)
		}
	}
	repeat, which := rng.Float64() < tier.RepeatProb, rng.IntN(max(1, len(missing)))
	if edit {
		if cur := e.units[k].repeatOf; cur >= 0 {
			if _, ok := kn.texts[cur]; !ok {
				rep = cur
			}
		}
	} else if repeat && len(missing) > 0 {
		rep = missing[which]
	}
	if rep >= 0 {
		if p := restatable(e.rfc.Units[rep].Source); p != "" {
			src = insertParagraph(src, p)
		} else {
			rep = -1
		}
	}
	if retitle && !edit {
		src = retitleSubsection(src, how)
	}
	return render(src, st, slip, alt), rep
}

// retitleForms are the ways a writer words a subsection heading its own
// way.
var retitleForms = []func(string) string{
	func(h string) string { return h + " in detail" },
	func(h string) string { return "On " + lowerFirst(h) },
	func(h string) string { return "The " + lowerFirst(h) },
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// retitleSubsection rewords the first H3 heading of src.
func retitleSubsection(src string, how int) string {
	lines := strings.Split(src, "\n")
	for i, ln := range lines {
		if lv, text, ok := atx(ln); ok && lv == 3 {
			lines[i] = "### " + retitleForms[how%len(retitleForms)](text)
			break
		}
	}
	return strings.Join(lines, "\n")
}

// currentHeading returns, from a unit's current text, the heading that
// stands where the outline puts the unit's heading want[idx]: the same
// position when the text has the outline's headings, else the first
// heading of that level; "" if none.
func currentHeading(text string, want []OutlineHeading, idx int) string {
	got := outline(text)
	if len(got) == len(want) {
		return got[idx].Text
	}
	for _, h := range got {
		if h.Level == want[idx].Level {
			return h.Text
		}
	}
	return ""
}

// restatable returns the first prose paragraph of src of at least 20
// words (the one a writer who has not read the unit would restate), or "".
func restatable(src string) string {
	for _, p := range strings.Split(src, "\n\n") {
		p = strings.TrimSpace(p)
		if p == "" || strings.HasPrefix(p, "#") || strings.HasPrefix(p, "-") || strings.HasPrefix(p, "*") ||
			strings.HasPrefix(p, "```") || strings.HasPrefix(p, "~~~") || strings.HasPrefix(p, "|") ||
			strings.HasPrefix(p, ">") || strings.HasPrefix(p, "[") || strings.HasPrefix(p, "<") || strings.HasPrefix(p, "    ") {
			continue
		}
		if wordCount(p) >= 20 {
			return p
		}
	}
	return ""
}

// insertParagraph puts p after the unit's headings and first paragraph.
func insertParagraph(src, p string) string {
	parts := strings.Split(strings.TrimRight(src, "\n"), "\n\n")
	at := 0
	for at < len(parts) && strings.HasPrefix(strings.TrimSpace(parts[at]), "#") {
		at++
	}
	if at < len(parts) {
		at++
	}
	out := append(append(append([]string(nil), parts[:at]...), p), parts[at:]...)
	return strings.Join(out, "\n\n") + "\n"
}

// refreshDefects recomputes, for every drafted unit, whether it writes a
// term otherwise than its introducing unit now does and whether it
// mentions a heading its target no longer has.
func (e *Env) refreshDefects() {
	forms := make([]string, len(e.rfc.Terms))
	for ti, t := range e.rfc.Terms {
		if u := &e.units[t.Intro]; u.version > 0 {
			forms[ti] = u.forms[ti]
		}
	}
	for k := range e.units {
		u := &e.units[k]
		if u.version == 0 {
			continue
		}
		unit := &e.rfc.Units[k]
		u.termBad = false
		for _, ti := range unit.Uses {
			if forms[ti] == "" {
				continue
			}
			if f := u.forms[ti]; f != "" && f != forms[ti] {
				u.termBad = true
				break
			}
		}
		u.refBad = false
		prose := ""
		for _, ref := range unit.Refs {
			tu := &e.units[ref.Target]
			if tu.version == 0 {
				continue
			}
			h := currentHeading(tu.text, e.rfc.Units[ref.Target].Headings, ref.Heading)
			if h == "" || strings.EqualFold(h, ref.Mention) {
				continue
			}
			if prose == "" {
				prose = strings.ToLower(u.prose)
			}
			if !containsWord(prose, strings.ToLower(h)) && containsWord(prose, strings.ToLower(ref.Mention)) {
				u.refBad = true
				break
			}
		}
	}
}

// Defects counts the drafted units that are defective now (for tests and
// calibration; the reward never sees it).
func (e *Env) Defects() int {
	n := 0
	for k := range e.units {
		if e.units[k].version > 0 && e.units[k].defective() {
			n++
		}
	}
	return n
}

// restates returns the unit that unit k's text restates: one it builds on
// whose first long paragraph (the one a writer restates, [restatable])
// reappears in text, its words at least 80 % the same (Jaccard) whatever
// the writer's spelling and markup; -1 if none.
func (e *Env) restates(k int, text string) int {
	sets := e.restatableWords()
	var paras []wordSet
	for _, j := range e.rfc.Units[k].BuildsOn {
		pw := sets[j]
		if pw == nil {
			continue
		}
		if paras == nil {
			for _, q := range strings.Split(text, "\n\n") {
				paras = append(paras, newWordSet(q))
			}
		}
		for _, q := range paras {
			if jaccard(pw, q) >= 0.8 {
				return j
			}
		}
	}
	return -1
}

// restatableWords returns, for each unit of the episode's RFC, the word
// set of its restatable paragraph ([restatable]; nil if it has none),
// computed once per RFC of the corpus: a unit's source does not change.
func (e *Env) restatableWords() []wordSet {
	if s, ok := e.restatable[e.rfc]; ok {
		return s
	}
	s := make([]wordSet, len(e.rfc.Units))
	for j, u := range e.rfc.Units {
		if p := restatable(u.Source); p != "" {
			s[j] = newWordSet(p)
		}
	}
	if e.restatable == nil {
		e.restatable = map[*RFC][]wordSet{}
	}
	e.restatable[e.rfc] = s
	return s
}

// wordSet is the set of the lower-case words of letters in a text.
type wordSet map[string]struct{}

func newWordSet(s string) wordSet {
	ws := wordSet{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) }) {
		ws[w] = struct{}{}
	}
	return ws
}

// jaccard is |A ∩ B| / |A ∪ B| of two word sets (0 if either is empty).
func jaccard(a, b wordSet) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	inter := 0
	for w := range a {
		if _, ok := b[w]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
