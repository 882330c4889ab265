package consistency

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// prose collects the words of a document's prose (paragraphs, list items
// and tables; not headings, quotes or code) for the checks that read
// content: terminology and duplication.
type prose struct {
	toks   []tok
	blocks []proseBlock
	plain  string   // the current block's plain text
	spans  []string // the contents of every inline code span
	// emphasized holds the plain text of every emphasis and strong span,
	// links every link's text and destination.
	emphasized []string
	links      []link
}

// tok is one word of prose.
type tok struct {
	w       string // as written
	lower   string
	block   int  // index into prose.blocks
	part    int  // the template section or other top-level part it is in
	initial bool // first word of a sentence, list item or clause after a colon
	code    bool // part of unquoted code (my_crate, x2, foo::Bar, camelCase)
	term    bool // can be (part of) a term: see isTermWord
	glued   bool // joined to the next word by a single space or line break only
	ends    bool // ends a sentence
}

// proseBlock is one block's share of the words.
type proseBlock struct {
	kind       blockKind
	part, line int
	from, to   int // token range
	plain      string
	// cite marks a list item that is only a link to another site: a
	// reference list's entry, whose text is the cited page's title, not
	// the document's prose; it holds no terms.
	cite bool
}

func (p *prose) startBlock(b *block, part int, plain string, cite bool) {
	n := len(p.toks)
	p.blocks = append(p.blocks, proseBlock{kind: b.kind, part: part, line: b.line, from: n, to: n, plain: plain, cite: cite})
	p.plain = plain
}

func (p *prose) addWord(w string, at int, initial, code bool) {
	bi := len(p.blocks) - 1
	rest := p.plain[at+len(w):]
	lower := lowerWord(w)
	anchor := at > 0 && p.plain[at-1] == anchorMark // a link labelled with its anchor
	p.toks = append(p.toks, tok{
		w: w, lower: lower, block: bi, part: p.blocks[bi].part,
		initial: initial, code: code,
		term: !code && !anchor && !p.blocks[bi].cite && utf8.RuneCountInString(w) >= minTermLetters && !functionWords[lower],
		// A line break inside a paragraph is a space ("future-possibilities
		// sections" wrapped after the compound is still attributive).
		glued: len(rest) > 1 && (rest[0] == ' ' || rest[0] == '\n') && rest[1] != ' ' && rest[1] != '\n',
		ends:  sentenceEnds(rest),
	})
	p.blocks[bi].to = len(p.toks)
}

// Terminology thresholds, chosen so that the untouched RFCs of the
// project's data are not flagged (see the package doc).
const (
	minTermLetters   = 3   // shorter words are never terms
	minSwapCount     = 4   // a swapped term is used at least this often on each side
	maxSwapStray     = 3.0 // … and at most 1/maxSwapStray of its uses are on the other side
	minSwapParts     = 2   // … in at least this many sections on each side
	maxSwapRateRatio = 3.0 // and at comparable rates (per word of its side)
	minSwapContext   = 0.5 // shared left/right neighbours, over the smaller set …
	// … or at least minSwapKeyContext for key terms: each among the
	// swapTopRank most frequent terms of its own side.
	minSwapKeyContext = 0.2
	swapTopRank       = 5
	// minSwapContentContext is how many of the shared neighbours must be
	// content words ("the crate graph", "the package graph").
	minSwapContentContext = 2
)

// bestSplit returns the token position that best separates the sorted
// positions a (before) from b (after), and how many fall on the wrong
// side.
func bestSplit(a, b []int) (split, wrong int) {
	// Candidate splits are just after each position; wrong(s) = #a ≥ s + #b < s.
	best, bestWrong := 0, len(a)
	i, j := 0, 0
	for {
		w := (len(a) - i) + j
		pos := 0
		if i > 0 {
			pos = a[i-1] + 1
		}
		if j > 0 && b[j-1]+1 > pos {
			pos = b[j-1] + 1
		}
		if w < bestWrong {
			best, bestWrong = pos, w
		}
		if i == len(a) && j == len(b) {
			break
		}
		if j == len(b) || (i < len(a) && a[i] < b[j]) {
			i++
		} else {
			j++
		}
	}
	return best, bestWrong
}

func countAfter(pos []int, split int) int {
	n := 0
	for _, x := range pos {
		if x >= split {
			n++
		}
	}
	return n
}

// countParts counts the parts the positions on one side of split are in.
func countParts(p *prose, pos []int, split int, before bool) int {
	// Positions are in document order, so parts change monotonically.
	n, last := 0, -1
	for _, x := range pos {
		if part := p.toks[x].part; (x < split) == before && part != last {
			n++
			last = part
		}
	}
	return n
}

// foldPlural maps a lower-case word to its singular by English's regular
// endings; words it cannot fold, and adverbs that end in "s" (sometimes is
// not the plural of "some-time"), stay as they are.
func foldPlural(w string) string {
	if sAdverbs[w] {
		return w
	}
	switch n := len(w); {
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 4 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

// sAdverbs are adverbs and conjunctions that end in "s".
var sAdverbs = wordSet(`sometimes always perhaps besides towards afterwards backwards forwards upwards downwards
onwards nowadays whereas sideways overseas indoors outdoors`)

// surfaceForm is a word as written, without a possessive "'s" or "'"
// and in the singular (an acronym's plural "CPUs" is "CPU", which
// foldPlural, reading "cpus" like "status", does not fold).
func surfaceForm(w string) string {
	for _, suf := range []string{"'s", "’s", "'", "’"} {
		if len(w) > len(suf)+1 && strings.HasSuffix(w, suf) {
			w = w[:len(w)-len(suf)]
			break
		}
	}
	if acronymPlural(w) {
		return w[:len(w)-1]
	}
	l := strings.ToLower(w)
	f := foldPlural(l)
	if len(f) < len(w) && strings.EqualFold(w[:len(f)], f) {
		return w[:len(f)]
	}
	// "-ies" to "-y" keeps the case of the stem: "Repositories" is
	// "Repository", not a capitalization of its own.
	if n := len(w); len(f) == n-2 && len(l) == n && strings.HasSuffix(l, "ies") && strings.HasSuffix(f, "y") {
		y := "y"
		if w[n-3] == 'I' {
			y = "Y"
		}
		return w[:n-3] + y
	}
	return w
}

// acronymPlural reports an acronym of two or more capitals with a plural
// "s" (CPUs, APIs).
func acronymPlural(w string) bool {
	n := len(w)
	if n < 3 || w[n-1] != 's' {
		return false
	}
	for i := 0; i < n-1; i++ {
		if w[i] < 'A' || w[i] > 'Z' {
			return false
		}
	}
	return true
}

// joined reports a word with a hyphen or an apostrophe in it.
func joined(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c == '-' || c == '\'' || c == 0xE2 && strings.HasPrefix(w[i:], "’") {
			return true
		}
	}
	return false
}

var keyReplacer = strings.NewReplacer("-", "", "'", "", "’", "")

// termKey is the identity of a term across its surface forms: lower
// case, singular, without hyphens or apostrophes.
func termKey(lower string) string {
	if joined(lower) {
		lower = keyReplacer.Replace(lower)
	}
	return foldPlural(lower)
}

// isTermWord reports whether a word can be (part of) a term: prose, no
// function word, at least minTermLetters letters.
func isTermWord(t *tok) bool { return t.term }

// variantGroup counts the surface forms of one term.
type variantGroup struct {
	order  []string // forms in order of first use
	counts []int    // occurrences of each form
	total  int
	reason string
}

func (g *variantGroup) add(form string, k int) {
	g.total += k
	for i, f := range g.order {
		if f == form {
			g.counts[i] += k
			return
		}
	}
	g.order = append(g.order, form)
	g.counts = append(g.counts, k)
}

// count returns the occurrences of a form.
func (g *variantGroup) count(form string) int {
	for i, f := range g.order {
		if f == form {
			return g.counts[i]
		}
	}
	return 0
}

// cost is 2(1 − p) with p the majority form's share: 0 for one form, 1
// for an even split of two.
func (g *variantGroup) cost() float64 {
	best := 0
	for _, n := range g.counts {
		best = max(best, n)
	}
	return 2 * (1 - float64(best)/float64(g.total))
}

func (g *variantGroup) String() string {
	parts := make([]string, 0, len(g.order))
	sorted := append([]string(nil), g.order...)
	sort.SliceStable(sorted, func(a, b int) bool { return g.count(sorted[a]) > g.count(sorted[b]) })
	for _, f := range sorted {
		parts = append(parts, fmt.Sprintf("%q %d", f, g.count(f)))
	}
	return g.reason + " " + strings.Join(parts, " / ")
}

// terminology is the check "one surface form per term": it finds the
// terms written in more than one way (spacing, hyphenation, case,
// backticks) and the terms replaced by another word part-way through the
// document, and scores Pass = 1 / (1 + Σ cost) over them.
func (p *prose) terminology(tr trace) CheckResult {
	type term struct {
		spelled variantGroup // forms by hyphenation and spacing
		cased   variantGroup // forms by capitalization (mid-sentence only)
	}
	terms := make(map[string]*term, len(p.toks)/4)
	var keys []string // in order of first use
	count := make(map[string]int, len(p.toks)/4)
	get := func(k string) *term {
		t := terms[k]
		if t == nil {
			t = &term{}
			terms[k] = t
			keys = append(keys, k)
		}
		return t
	}
	for i := range p.toks {
		t := &p.toks[i]
		if !isTermWord(t) || contraction(t.w) {
			continue
		}
		k := termKey(t.lower)
		count[k]++
		tm := get(k)
		form := surfaceForm(t.w)
		if !p.attributive(i) {
			// A hyphenated compound before a noun ("command-line tool") is
			// English's attributive form, not a variant of "command line".
			tm.spelled.add(foldPlural(lowerWord(form)), 1)
		}
		if !t.initial {
			tm.cased.add(casePattern(form), 1)
		}
	}
	// Open compounds ("type checker") of a closed or hyphenated term the
	// document also uses ("typechecker", "type-checker"), unless every
	// use of that term is an emphasized label: a name the document
	// defines in bold or italics ("**publish-new**: allows publishing new
	// crates", a scope's name) is not a spelling of the words of a verb
	// phrase ("publish new packages").
	labels := map[string]int{}
	for _, e := range p.emphasized {
		if e = strings.TrimSpace(e); e != "" && strings.IndexByte(e, ' ') < 0 {
			labels[termKey(lowerWord(e))]++
		}
	}
	for i := 0; i+1 < len(p.toks); i++ {
		a, b := &p.toks[i], &p.toks[i+1]
		if !a.glued || a.ends || a.block != b.block || !isTermWord(a) || !isTermWord(b) ||
			joined(a.lower) || joined(b.lower) || particles[b.lower] {
			continue
		}
		k := a.lower + termKey(b.lower)
		if tm := terms[k]; tm != nil && tm.spelled.total > 0 && labels[k] < count[k] {
			tm.spelled.add(a.lower+" "+strings.ToLower(surfaceForm(b.w)), 1)
			count[k]++
		}
	}

	var found []*variantGroup
	for _, k := range keys {
		tm := terms[k]
		if g := &tm.spelled; len(g.order) > 1 && !strayOpenCompound(g) {
			g.reason = "spelled"
			found = append(found, g)
		}
		if g := &tm.cased; capitalized(g) > 1 {
			g.reason = "cased"
			found = append(found, g)
		}
	}
	found = append(found, p.codeVariants()...)
	found = append(found, p.swappedTerms(count)...)

	judged := 0
	for _, n := range count {
		if n >= 2 {
			judged++
		}
	}
	sort.Slice(found, func(a, b int) bool {
		if ca, cb := found[a].cost(), found[b].cost(); ca != cb {
			return ca > cb
		}
		return found[a].String() < found[b].String()
	})
	cost := 0.0
	var shown []string
	for _, g := range found {
		cost += g.cost()
		tr.add(checkTerminology, g.reason, "cost %.3f: %s", g.cost(), g)
		if len(shown) < 3 {
			shown = append(shown, g.String())
		}
	}
	detail := fmt.Sprintf("%d term(s) used twice or more, %d written more than one way", judged, len(found))
	if len(shown) > 0 {
		detail += ": " + strings.Join(shown, "; ")
	}
	return CheckResult{Name: checkTerminology, Pass: 1 / (1 + cost), N: judged, Detail: detail}
}

// attributive reports a hyphenated compound before a noun ("command-line
// tool"), English's attributive form and not a variant of the open
// "command line"; also when it is coordinated with another one before
// the noun ("single-file and multi-file packages").
func (p *prose) attributive(i int) bool {
	t := &p.toks[i]
	if strings.IndexByte(t.w, '-') < 0 || i+1 >= len(p.toks) || !t.glued || t.ends || p.toks[i+1].block != t.block {
		return false
	}
	next := &p.toks[i+1]
	if isTermWord(next) {
		return true
	}
	return (next.lower == "and" || next.lower == "or") && next.glued && !next.ends &&
		i+2 < len(p.toks) && p.toks[i+2].block == t.block && strings.IndexByte(p.toks[i+2].w, '-') >= 0 &&
		p.attributive(i+2)
}

// casePattern names how a word is capitalized: its lower-case form, a
// capital first letter, all capitals, or the word itself when mixed.
func casePattern(w string) string {
	lower, upper := strings.ToLower(w), strings.ToUpper(w)
	switch {
	case w == lower:
		return lower
	case w == upper && utf8.RuneCountInString(w) > 1:
		return upper
	default:
		r, n := utf8.DecodeRuneInString(w)
		if string(unicode.ToUpper(r))+lower[n:] == w {
			return string(unicode.ToUpper(r)) + lower[n:]
		}
		return w
	}
}

// capitalized is the number of a term's capitalizations other than all
// lower case. Names written two ways (WASM / Wasm, GitHub / Github) are
// variants; a capital against lower case alone is usually a name against
// a common noun (the Reference, a reference) or emphasis (MUST, SAFETY)
// and is not counted.
func capitalized(g *variantGroup) int {
	n := 0
	for _, f := range g.order {
		if f != strings.ToLower(f) {
			n++
		}
	}
	return n
}

// strayOpenCompound reports a term written hyphenated and open ("use
// case", "use-case") whose other form occurs once: English hyphenates
// compounds by their role in the sentence, so one such alternation is
// tolerated. A closed form ("usecase") is never tolerated.
func strayOpenCompound(g *variantGroup) bool {
	if len(g.order) != 2 || g.cost() == 0 {
		return false
	}
	a, b := g.order[0], g.order[1]
	if strings.ReplaceAll(a, "-", " ") != strings.ReplaceAll(b, "-", " ") {
		return false
	}
	return g.counts[0] == 1 || g.counts[1] == 1
}

// particles complete phrasal verbs ("fall back", "set up"): an open
// compound ending in one is a verb, not a spelling of the closed noun.
var particles = wordSet("back away around about along aside")

// contraction reports a word with an apostrophe inside ("we'll").
func contraction(w string) bool {
	return (strings.IndexByte(w, '\'') >= 0 || strings.Contains(w, "’")) && surfaceForm(w) == w
}

// codeVariants finds identifiers the document writes as inline code in
// some places and as plain text in others: names that look like code
// (snake_case, paths with ::, camelCase) and appear in backticks at
// least once. A link labelled with the name of what it points to
// ("[lazy_static](https://crates.io/crates/lazy_static)") names its
// target, as a reference list does, and is not a plain use.
func (p *prose) codeVariants() []*variantGroup {
	labels := map[string]int{}
	for _, l := range p.links {
		if t := strings.TrimSpace(l.text); t != "" && strings.Contains(l.dest, t) {
			labels[t]++
		}
	}
	inCode := map[string]int{}
	var ids []string
	for _, s := range p.spans {
		s = strings.TrimSuffix(s, "()")
		if !identifierShaped(s) {
			continue
		}
		if inCode[s] == 0 {
			ids = append(ids, s)
		}
		inCode[s]++
	}
	var out []*variantGroup
	for _, id := range ids {
		plain := 0
		for _, b := range p.blocks {
			if b.cite {
				continue
			}
			for s := b.plain; ; {
				i := strings.Index(s, id)
				if i < 0 {
					break
				}
				end := i + len(id)
				if (i == 0 || !identByte(s[i-1])) && (end == len(s) || !identByte(s[end]) || (s[end] == '.' && (end+1 == len(s) || !identByte(s[end+1])))) {
					plain++
				}
				s = s[end:]
			}
		}
		if plain -= labels[id]; plain > 0 {
			g := &variantGroup{reason: "backticked"}
			g.add("`"+id+"`", inCode[id])
			g.add(id, plain)
			out = append(out, g)
		}
	}
	return out
}

// identifierShaped reports a code span that is one name that can only be
// code: snake_case, a path with "::", or camelCase.
func identifierShaped(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	letter, code := false, strings.Contains(s, "_") || strings.Contains(s, "::")
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !identByte(c) && c != ':' {
			return false
		}
		if c|0x20 >= 'a' && c|0x20 <= 'z' {
			letter = true
		}
		if i > 0 && c >= 'A' && c <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
			code = true
		}
	}
	return letter && code && strings.Trim(s, "_:") == s
}

func identByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z' || c == escUnderscore
}

// swappedTerms finds a term replaced by another word part-way through the
// document, as a renaming by some of its writers produces ("crate" in the
// first half, "package" in the second). A pair (A, B) is reported when
//
//   - A and B are each used at least minSwapCount times, in at least
//     minSwapParts sections, and never on the same side: every A comes
//     before the first B (or the reverse), up to a tenth of their uses
//     in all and a third of each term's own;
//   - their rates on their own sides differ by at most maxSwapRateRatio;
//   - they occur in the same contexts: the words right before and after
//     them overlap by at least minSwapContext of the smaller set, and at
//     least minSwapContentContext of the shared ones are content words
//     (not inline code, which all reads as one placeholder word).
//
// Limits: a swap confined to one section, or a term used fewer than
// minSwapCount times on a side, is not seen; nor are two synonyms used
// interchangeably throughout (that needs a thesaurus, which a checker
// that reads only the document does not have).
func (p *prose) swappedTerms(count map[string]int) []*variantGroup {
	type occ struct {
		pos       []int
		ctx       map[string]bool
		lowerCase int
	}
	occs := map[string]*occ{}
	var keys []string
	for i := range p.toks {
		t := &p.toks[i]
		if !isTermWord(t) || joined(t.lower) || len(t.lower) < 4 {
			continue
		}
		k := termKey(t.lower)
		if count[k] < minSwapCount {
			continue
		}
		o := occs[k]
		if o == nil {
			o = &occ{}
			occs[k] = o
			keys = append(keys, k)
		}
		o.pos = append(o.pos, i)
		if t.w == t.lower {
			o.lowerCase++
		}
	}
	// context returns a term's immediate neighbours ("<the", ">graph"),
	// built when first needed.
	context := func(o *occ) map[string]bool {
		if o.ctx != nil {
			return o.ctx
		}
		o.ctx = map[string]bool{}
		for _, i := range o.pos {
			t := &p.toks[i]
			if i > 0 && p.toks[i-1].block == t.block && !p.toks[i-1].ends {
				o.ctx["<"+p.toks[i-1].lower] = true
			}
			if i+1 < len(p.toks) && p.toks[i+1].block == t.block && !t.ends {
				o.ctx[">"+p.toks[i+1].lower] = true
			}
		}
		return o.ctx
	}
	var cands []string
	for _, k := range keys {
		o := occs[k]
		if len(o.pos) >= minSwapCount && 2*o.lowerCase > len(o.pos) {
			cands = append(cands, k)
		}
	}
	total := len(p.toks)
	type pair struct {
		a, b string
		sim  float64
	}
	var pairs []pair
	for _, a := range cands {
		oa := occs[a]
		for _, b := range cands {
			ob := occs[b]
			if a == b {
				continue
			}
			// At most m of A after the split and m of B before it: a
			// necessary condition first, then the best split itself.
			m := max(1, (len(oa.pos)+len(ob.pos))/10)
			if m < len(oa.pos) && m < len(ob.pos) && oa.pos[len(oa.pos)-1-m] >= ob.pos[m] {
				continue
			}
			split, misplaced := bestSplit(oa.pos, ob.pos)
			if misplaced > m {
				continue
			}
			nA, nB := len(oa.pos)-countAfter(oa.pos, split), countAfter(ob.pos, split)
			if nA < minSwapCount || nB < minSwapCount {
				continue
			}
			// A word used on both sides throughout was not replaced: most
			// of each term's own uses must be on its side ("written",
			// 4 before and 3 after "parameter" takes over, is no term
			// of RFC 3654 replaced by "parameter").
			if maxSwapStray*float64(len(oa.pos)-nA) > float64(len(oa.pos)) || maxSwapStray*float64(len(ob.pos)-nB) > float64(len(ob.pos)) {
				continue
			}
			rateA := float64(nA) / float64(max(1, split))
			rateB := float64(nB) / float64(max(1, total-split))
			if rateA > maxSwapRateRatio*rateB || rateB > maxSwapRateRatio*rateA {
				continue
			}
			if countParts(p, oa.pos, split, true) < minSwapParts || countParts(p, ob.pos, split, false) < minSwapParts {
				continue
			}
			ca, cb := context(oa), context(ob)
			shared, content := 0, 0
			for c := range ca {
				if cb[c] {
					shared++
					// Every inline code span reads as the placeholder
					// codeWord: sharing it ("the `asm` statement", "the `h`
					// modifier") is no shared content word.
					if w := c[1:]; !functionWords[w] && w != codeWord {
						content++
					}
				}
			}
			sim := float64(shared) / float64(min(len(ca), len(cb)))
			if content < minSwapContentContext || sim < minSwapKeyContext {
				continue
			}
			if sim >= minSwapContext || (p.rank(a, 0, split) <= swapTopRank && p.rank(b, split, total) <= swapTopRank) {
				pairs = append(pairs, pair{a, b, sim})
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].sim != pairs[j].sim {
			return pairs[i].sim > pairs[j].sim
		}
		return pairs[i].a+" "+pairs[i].b < pairs[j].a+" "+pairs[j].b
	})
	used := map[string]bool{}
	var out []*variantGroup
	for _, pr := range pairs {
		if used[pr.a] || used[pr.b] {
			continue
		}
		used[pr.a], used[pr.b] = true, true
		g := &variantGroup{reason: "replaced"}
		g.add(pr.a, len(occs[pr.a].pos))
		g.add(pr.b, len(occs[pr.b].pos))
		out = append(out, g)
	}
	return out
}

// rank returns the rank (1 = most frequent) of term key k among the term
// words of tokens [from, to).
func (p *prose) rank(k string, from, to int) int {
	counts := map[string]int{}
	for i := from; i < to; i++ {
		t := &p.toks[i]
		if isTermWord(t) && !joined(t.lower) && len(t.lower) >= 4 {
			counts[termKey(t.lower)]++
		}
	}
	n := counts[k]
	r := 1
	for _, c := range counts {
		if c > n {
			r++
		}
	}
	return r
}
