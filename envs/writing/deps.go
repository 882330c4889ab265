package writing

import (
	"sort"
	"strings"
	"unicode"

	"github.com/troupe-dev/troupe/envs/writing/internal/markdown"
)

// This file extracts, from the real text of each RFC, how its units depend
// on each other: the terms each unit introduces and uses, the units whose
// headings it mentions, and the guide-level units a reference-level unit
// builds on. The simulated writers (sim.go) turn a dependency drafted
// without having read its current text into the failures parallel writers
// produce. Nothing here scores a document: that is the reward's business.

// maxTerms bounds the terms tracked per RFC (the most frequent ones).
const maxTerms = 16

// Term is a term of the RFC's own vocabulary, used in more than one unit:
// a hyphenated compound ("guide-level", "raw-dylib") or a recurring
// two-word phrase of content words ("import library").
type Term struct {
	// Form is the surface form the RFC writes.
	Form string
	// Variants are other surface forms a writer could give the same term
	// (spaced, hyphenated, closed or capitalised), none equal to Form.
	Variants []string
	// Intro is the unit that introduces the term: the first unit, in
	// template order, whose prose uses it.
	Intro int
	// Users are the other units whose prose uses it, in order.
	Users []int
	// Count is the term's occurrences in the RFC's prose.
	Count int
}

// Ref is a mention, in a unit's prose, of another unit's heading (a
// cross-reference by name, or an in-page link to its anchor).
type Ref struct {
	Target  int    // the unit whose heading is mentioned
	Heading int    // which of the target's outline headings (index into Unit.Headings)
	Mention string // the mention as the source writes it (the heading text)
}

// stopwords are function words that never start or end a term phrase.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but if of to in on at by for with from as is are was were be been
		being this that these those it its it's we our us you your they their them he she his her i me my not no nor
		so than then there here when where which who whom whose what why how all any both each few more most other
		some such only own same too very can will just should would could may might must shall do does did done
		has have had having into onto over under about above below between through during before after again
		further once also however therefore thus e.g i.e etc via per one two three new use used uses using make
		makes made like want need needs let lets get gets way ways case cases example examples see note well also
		currently today already still even much many way because while since although though either neither`) {
		stopwords[w] = true
	}
}

// proseOf returns the prose of a Markdown unit: outside fenced code, inline
// code, link destinations, headings and the metadata list, joined by
// newlines (one paragraph per line of output kept as it is).
func proseOf(src string) string {
	var b strings.Builder
	mapProse(src, func(seg string) string { b.WriteString(seg); b.WriteByte(' '); return seg })
	return b.String()
}

// mapProse calls f on every prose segment of src (outside fenced code,
// inline code spans, link destinations "](...)", heading lines, link
// reference definitions and the RFC metadata list) and returns src with
// each segment replaced by f's result.
func mapProse(src string, f func(string) string) string {
	lines := strings.Split(src, "\n")
	var code markdown.Fence
	for i, ln := range lines {
		if code.Line(ln) {
			continue
		}
		t := strings.TrimLeft(ln, " ")
		if _, _, ok := atx(ln); ok || len(ln)-len(t) >= 4 {
			continue
		}
		if strings.HasPrefix(t, "[") && strings.Contains(t, "]:") {
			continue
		}
		if metadataLine(t) {
			continue
		}
		lines[i] = mapLine(ln, f)
	}
	return strings.Join(lines, "\n")
}

// metadataLine reports an RFC metadata item ("- Feature Name: ...").
func metadataLine(t string) bool {
	t = strings.TrimLeft(t, "-*+ ")
	for _, p := range []string{"Feature Name:", "Start Date:", "RFC PR:", "Rust Issue:", "Tracking Issue:"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// mapLine applies f to the prose segments of one line (between code spans
// and link destinations).
func mapLine(ln string, f func(string) string) string {
	var out strings.Builder
	seg := 0
	flush := func(end int) {
		if end > seg {
			out.WriteString(f(ln[seg:end]))
		}
	}
	i := 0
	for i < len(ln) {
		switch {
		case ln[i] == '`':
			n := 0
			for i+n < len(ln) && ln[i+n] == '`' {
				n++
			}
			closeAt := strings.Index(ln[i+n:], strings.Repeat("`", n))
			if closeAt < 0 {
				i += n
				continue
			}
			flush(i)
			end := i + n + closeAt + n
			out.WriteString(ln[i:end])
			i, seg = end, end
		case ln[i] == ']' && i+1 < len(ln) && ln[i+1] == '(':
			closeAt := strings.IndexByte(ln[i:], ')')
			if closeAt < 0 {
				i++
				continue
			}
			flush(i)
			end := i + closeAt + 1
			out.WriteString(ln[i:end])
			i, seg = end, end
		default:
			i++
		}
	}
	flush(len(ln))
	return out.String()
}

// words splits prose into words of letters, digits, '-', '_' and '\”.
func words(prose string) []string {
	return strings.FieldsFunc(prose, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '\'')
	})
}

func alphaLower(w string, minLen int) bool {
	if len(w) < minLen {
		return false
	}
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// hyphenTerm reports a lower-case compound of two or three alphabetic
// parts joined by hyphens ("guide-level", "raw-dylib").
func hyphenTerm(w string) bool {
	w = strings.Trim(w, "-'")
	parts := strings.Split(w, "-")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	for _, p := range parts {
		if !alphaLower(p, 2) {
			return false
		}
	}
	return !stopwords[parts[0]] || len(parts[0]) > 3
}

// extractTerms finds the RFC's terms in its units' prose (see [Term]).
func extractTerms(units []Unit) []Term {
	type cand struct {
		form  string
		count int
		units []int
	}
	cands := map[string]*cand{}
	add := func(form string, k int) {
		c := cands[form]
		if c == nil {
			c = &cand{form: form}
			cands[form] = c
		}
		c.count++
		if n := len(c.units); n == 0 || c.units[n-1] != k {
			c.units = append(c.units, k)
		}
	}
	for k, u := range units {
		ws := words(withoutURLs(proseOf(u.Source)))
		for i, w := range ws {
			w = strings.Trim(w, "-'_")
			if hyphenTerm(w) {
				add(w, k)
			}
			if i+1 < len(ws) {
				a, b := ws[i], strings.Trim(ws[i+1], "-'_")
				if alphaLower(a, 3) && alphaLower(b, 3) && !stopwords[a] && !stopwords[b] &&
					!strings.HasSuffix(a, "ly") && !strings.HasSuffix(b, "ly") && !strings.HasSuffix(b, "ed") {
					add(a+" "+singular(b), k)
				}
			}
		}
	}
	var list []*cand
	for _, c := range cands {
		min := 2
		if strings.Contains(c.form, " ") {
			min = 3 // a phrase must recur to be a term
		}
		if len(c.units) >= 2 && c.count >= min {
			list = append(list, c)
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].count != list[j].count {
			return list[i].count > list[j].count
		}
		return list[i].form < list[j].form
	})
	var terms []Term
	for _, c := range list {
		if len(terms) == maxTerms {
			break
		}
		overlap := false
		for _, t := range terms { // "import library" and "library import": keep the first
			if strings.Contains(t.Form, c.form) || strings.Contains(c.form, t.Form) {
				overlap = true
				break
			}
		}
		if overlap {
			continue
		}
		terms = append(terms, Term{Form: c.form, Variants: termVariants(c.form), Intro: c.units[0], Users: c.units[1:], Count: c.count})
	}
	return terms
}

// singular undoes a regular English plural ("libraries" → "library",
// "tokens" → "token"), leaving words such as "class" or "analysis" alone.
func singular(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "is"), strings.HasSuffix(w, "us"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}

// withoutURLs drops the whitespace-separated fields of prose that are or
// contain a URL or a domain name.
func withoutURLs(prose string) string {
	f := strings.Fields(prose)
	out := f[:0]
	for _, w := range f {
		l := strings.ToLower(w)
		if strings.Contains(l, "://") || strings.HasPrefix(l, "www.") || strings.Contains(l, ".com") ||
			strings.Contains(l, ".org") || strings.Contains(l, ".html") || strings.Contains(l, ".io") {
			continue
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// termVariants returns the other surface forms a writer could give term:
// for a hyphenated compound, spaced and closed; for a phrase, hyphenated
// and capitalised.
func termVariants(term string) []string {
	if strings.Contains(term, "-") {
		return []string{strings.ReplaceAll(term, "-", " "), strings.ReplaceAll(term, "-", "")}
	}
	parts := strings.Fields(term)
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return []string{strings.ReplaceAll(term, " ", "-"), strings.Join(parts, " ")}
}

// extractRefs finds, in each unit's prose, mentions of other units'
// headings: every template section name of more than one word and every
// subsection heading of at least two words, matched case-insensitively,
// and in-page links to a unit's anchor.
func extractRefs(units []Unit) [][]Ref {
	type target struct {
		unit, heading int
		text          string
	}
	var targets []target
	for k, u := range units {
		for hi, h := range u.Headings {
			if h.Level < 2 || len(strings.Fields(h.Text)) < 2 {
				continue
			}
			targets = append(targets, target{k, hi, h.Text})
		}
	}
	refs := make([][]Ref, len(units))
	for k, u := range units {
		prose := strings.ToLower(proseOf(u.Source))
		links := strings.ToLower(u.Source)
		for _, t := range targets {
			if t.unit == k {
				continue
			}
			lt := strings.ToLower(t.text)
			if containsWord(prose, lt) || strings.Contains(links, "](#"+anchorOf(t.text)+")") {
				refs[k] = append(refs[k], Ref{Target: t.unit, Heading: t.heading, Mention: t.text})
			}
		}
	}
	return refs
}

// anchorOf is the in-page anchor a heading gets (GitHub's rule: lower case,
// punctuation dropped, spaces to hyphens).
func anchorOf(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// containsWord reports whether s contains w starting and ending at word
// boundaries (a trailing plural "s" allowed).
func containsWord(s, w string) bool {
	return indexWord(s, w, 0) >= 0
}

// indexWord returns the first index ≥ from where w occurs in s at word
// boundaries (a trailing plural "s" allowed), or -1.
func indexWord(s, w string, from int) int {
	for from <= len(s) {
		i := strings.Index(s[from:], w)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(w)
		if end < len(s) && s[end] == 's' {
			end++
		}
		if (i == 0 || !wordByte(s[i-1])) && (end >= len(s) || !wordByte(s[end])) {
			return i
		}
		from = i + 1
	}
	return -1
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c >= 0x80
}

// replaceWord replaces every word-bounded occurrence of old in s with new
// (keeping a trailing plural "s").
func replaceWord(s, old, new string) string {
	if old == new || old == "" {
		return s
	}
	return replaceMatches(s, s, old, new)
}

// replaceFold replaces the word-bounded occurrences of old in s, matched
// ignoring case, with new.
func replaceFold(s, old, new string) string {
	return replaceMatches(s, strings.ToLower(s), strings.ToLower(old), new)
}

// replaceMatches replaces in s, with new, the word-bounded occurrences of
// word found in searched (s itself, or its lower-case copy).
func replaceMatches(s, searched, word, new string) string {
	var b strings.Builder
	from := 0
	for {
		i := indexWord(searched, word, from)
		if i < 0 {
			break
		}
		b.WriteString(s[from:i])
		b.WriteString(new)
		from = i + len(word)
	}
	b.WriteString(s[from:])
	return b.String()
}

// linkDeps fills the units' dependencies (see [Unit.DependsOn]).
func linkDeps(r *RFC) {
	r.Terms = extractTerms(r.Units)
	refs := extractRefs(r.Units)
	for k := range r.Units {
		u := &r.Units[k]
		u.Refs = refs[k]
		deps := map[int]bool{}
		for ti, t := range r.Terms {
			if t.Intro == k {
				u.Introduces = append(u.Introduces, ti)
			}
			for _, x := range t.Users {
				if x == k {
					u.Uses = append(u.Uses, ti)
					deps[t.Intro] = true
				}
			}
		}
		for _, ref := range u.Refs {
			deps[ref.Target] = true
		}
		if u.Section == 3 { // the reference-level explanation builds on the guide-level one
			for j, v := range r.Units {
				if v.Section == 2 {
					deps[j] = true
					u.BuildsOn = append(u.BuildsOn, j)
				}
			}
		}
		for _, ti := range u.Uses {
			if in := r.Terms[ti].Intro; in != 0 && !containsInt(u.BuildsOn, in) {
				u.BuildsOn = append(u.BuildsOn, in)
			}
		}
		delete(deps, k)
		for j := range deps {
			u.DependsOn = append(u.DependsOn, j)
		}
		sort.Ints(u.DependsOn)
		sort.Ints(u.BuildsOn)
	}
}

func containsInt(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
