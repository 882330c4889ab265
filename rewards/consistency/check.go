package consistency

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Check names, in the order Report.Checks lists them.
const (
	checkTitle            = "title"
	checkSections         = "sections"
	checkNonemptySections = "nonempty_sections"
	checkHeadingLevels    = "heading_levels"
	checkHeadingStyle     = "heading_style"
	checkHeadingCase      = "heading_case"
	checkBulletStyle      = "bullet_style"
	checkEmphasisStyle    = "emphasis_style"
	checkStrongStyle      = "strong_style"
	checkCodeStyle        = "code_style"
	checkSpelling         = "spelling"
	checkPerson           = "person"
	checkReadability      = "readability"
	checkTerminology      = "terminology"
	checkCrossReferences  = "cross_references"
	checkDuplication      = "duplication"
	checkFluency          = "fluency"
)

// Template is the section structure a document must follow.
type Template struct {
	// Title requires exactly one H1, as the first heading (MD025 and
	// MD041). When false, at most one H1 is allowed (MD025 alone), which
	// suits documents such as the Rust RFC files, whose title lives
	// outside the text.
	Title bool
	// Sections are the required section names, in order. Headings match
	// them ignoring case, hyphens versus spaces, punctuation, inline
	// Markdown, leading numbering ("3. ") and a trailing plural "s".
	Sections []string
}

// defaultTemplate is the Rust RFC template (rust-lang/rfcs 0000-template.md)
// with a required title.
var defaultTemplate = Template{
	Title: true,
	Sections: []string{
		"Summary",
		"Motivation",
		"Guide-level explanation",
		"Reference-level explanation",
		"Drawbacks",
		"Rationale and alternatives",
		"Prior art",
		"Unresolved questions",
		"Future possibilities",
	},
}

// Defaults of Options.
const (
	DefaultReadabilityBound = 12.0
	DefaultMinSectionWords  = 30
)

// Options configure Check. The zero value of each field means its default.
type Options struct {
	// Template is the required structure; nil means the Rust RFC template
	// (rust-lang/rfcs 0000-template.md: Summary, Motivation, Guide-level
	// explanation, Reference-level explanation, Drawbacks, Rationale and
	// alternatives, Prior art, Unresolved questions, Future possibilities)
	// with a required title.
	Template *Template
	// ReadabilityBound is the largest Flesch–Kincaid grade spread (max −
	// min over sections) that passes in full (default 12 grades).
	ReadabilityBound float64
	// MinSectionWords is the smallest section, in words, whose
	// readability is judged (default 30).
	MinSectionWords int
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	// Name is the check's name: "title", "sections", "nonempty_sections",
	// "heading_levels", "heading_style", "heading_case", "bullet_style",
	// "emphasis_style", "strong_style", "code_style", "spelling", "person",
	// "readability", "terminology", "cross_references", "duplication" or
	// "fluency"
	// (the package doc describes each).
	Name string
	// Pass is the check's score in [0, 1]; 1 means fully consistent.
	Pass float64
	// Detail says what was counted, e.g. "bullets: - 12, * 1".
	Detail string
	// N is how many things the check judged (headings, bullets, words,
	// sections …). A check with N = 0 has nothing to judge: it passes and
	// is left out of Score's mean.
	N int
	// Majority is the dominant variant for the "one style" checks (e.g.
	// "atx", "-", "us", "we"); empty when nothing was counted or the check
	// has no variants.
	Majority string
}

// Report is the result of checking one document.
type Report struct {
	// Score is Coverage × the mean Pass of the checks with N > 0, in [0, 1].
	Score float64
	// Coverage is the fraction of the template's sections that are present
	// and have content. It gates Score so that a short or empty document
	// cannot score high on style alone.
	Coverage float64
	// Checks lists every check, in the order CheckResult.Name lists them.
	Checks []CheckResult
}

// Pass returns the named check's Pass value and whether it exists.
func (r Report) Pass(name string) (float64, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c.Pass, true
		}
	}
	return 0, false
}

// Map returns check name → Pass.
func (r Report) Map() map[string]float64 {
	m := make(map[string]float64, len(r.Checks))
	for _, c := range r.Checks {
		m[c.Name] = c.Pass
	}
	return m
}

// String renders the report on one line per check.
func (r Report) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "score %.4f (coverage %.3f)\n", r.Score, r.Coverage)
	for _, c := range r.Checks {
		fmt.Fprintf(&sb, "  %-18s %.3f  %s\n", c.Name, c.Pass, c.Detail)
	}
	return sb.String()
}

// Check scores doc with the default options.
func Check(doc []byte) Report {
	return Options{}.Check(doc)
}

// sectionMatcher maps heading text to a template section index.
type sectionMatcher struct {
	names map[string]int
	defs  map[string]string
}

func newSectionMatcher(sections []string) *sectionMatcher {
	m := &sectionMatcher{names: make(map[string]int, len(sections))}
	for i, s := range sections {
		m.names[headingKey(s)] = i
	}
	return m
}

func (m *sectionMatcher) index(text string) int {
	if i, ok := m.names[headingKey(plainText(text, m.defs, nil))]; ok {
		return i
	}
	return -1
}

// sectionText accumulates readability counts of one section.
type sectionText struct {
	words, sentences, syllables int
	open                        bool
	lastPara                    int
}

func (s *sectionText) grade() float64 {
	return 0.39*float64(s.words)/float64(s.sentences) + 11.8*float64(s.syllables)/float64(s.words) - 15.59
}

// abbreviations never end a sentence.
var abbreviations = map[string]bool{
	"etc": true, "vs": true, "cf": true, "al": true, "eg": true, "ie": true, "approx": true,
	"fig": true, "mr": true, "mrs": true, "dr": true, "st": true, "no": true,
}

// abbreviation reports whether a word followed by a period is an
// abbreviation or an initial (the "g" of "e.g."), not a sentence end. The
// code-span placeholder "x" does end sentences.
func abbreviation(w string) bool {
	if len(w) == 1 {
		return w != "x"
	}
	return abbreviations[asciiLower(w)]
}

// Check scores src under the options o.
func (o Options) Check(src []byte) Report {
	return o.check(src, nil)
}

// check is Check, recording every finding in tr when tr is not nil.
func (o Options) check(src []byte, tr trace) Report {
	tmpl := defaultTemplate
	if o.Template != nil {
		tmpl = *o.Template
	}
	bound := o.ReadabilityBound
	if bound <= 0 {
		bound = DefaultReadabilityBound
	}
	minWords := o.MinSectionWords
	if minWords <= 0 {
		minWords = DefaultMinSectionWords
	}

	sm := newSectionMatcher(tmpl.Sections)
	d := parseBlocks(string(src), sm.index)

	var (
		info     inlineInfo
		us, uk   int
		we, i1   int
		sections = map[int]*sectionText{}
		caps     = capitalStats{}
		text     = &prose{toks: make([]tok, 0, len(src)/7)}
		quotes   []int // [start, end) pairs of double-quoted text in the current block
		heads    = make([]string, len(d.headings))
	)
	for bi := range d.blocks {
		b := &d.blocks[bi]
		plain := plainText(b.text, d.defs, &info)
		if b.kind == blockHeading {
			heads[b.heading] = headingText(b.text, d.defs)
			continue
		}
		// Quoted material is someone else's words: block quotes are left
		// out of every text check, double-quoted text of spelling and person.
		if b.kind == blockQuote {
			continue
		}
		quotes = quotedRanges(plain, quotes[:0])
		var acc *sectionText
		if b.section >= 0 && b.kind != blockTable {
			acc = sections[b.section]
			if acc == nil {
				acc = &sectionText{lastPara: -1}
				sections[b.section] = acc
			}
			if acc.open && acc.lastPara != b.para {
				acc.sentences++
				acc.open = false
			}
			acc.lastPara = b.para
		}
		part := b.section
		if part < 0 {
			part = len(tmpl.Sections) + b.heading + 1
		}
		text.startBlock(b, part, plain, b.kind == blockItem && citation(b.text, d.defs))
		q := 0
		prevEnd := 0
		eachWord(plain, func(w string, at int) {
			initial := prevEnd == 0 || strings.ContainsAny(plain[prevEnd:at], ".!?:;\n")
			prevEnd = at + len(w)
			code := codeLike(plain, w, at)
			text.addWord(w, at, initial, code)
			if acc != nil {
				acc.words++
				acc.syllables += syllables(w)
				acc.open = true
				if sentenceEnds(plain[at+len(w):]) && !abbreviation(w) {
					acc.sentences++
					acc.open = false
				}
			}
			if code {
				return
			}
			r, _ := utf8.DecodeRuneInString(w)
			if !initial && unicode.IsLetter(r) && !acronym(w) {
				caps.add(w)
			}
			for q < len(quotes) && quotes[q+1] <= at {
				q += 2
			}
			if q < len(quotes) && quotes[q] <= at {
				return // inside quotes
			}
			if len(w) > maxStyleWord {
				return
			}
			lw := w
			if initial || w != "I" {
				lw = asciiLower(w)
				if w != lw && !(initial && strings.ToUpper(w[:1])+lw[1:] == w) {
					lw = "" // capitals inside: US, Our-Company
				}
			}
			if v, ok := spelling[lw]; ok {
				tr.add(checkSpelling, v, "line %d: %q", lineOf(b, plain, at), w)
				if v == "us" {
					us++
				} else {
					uk++
				}
				return
			}
			if w == "I" {
				lw = "I"
			}
			if v := pronounPerson[lw]; v != "" {
				tr.add(checkPerson, v, "line %d: %q", lineOf(b, plain, at), w)
			}
			switch pronounPerson[lw] {
			case "we":
				we++
			case "I":
				i1++
			}
		})
		if acc != nil && b.kind == blockItem && acc.open {
			acc.sentences++
			acc.open = false
		}
	}

	checks := make([]CheckResult, 0, 17)

	// title (MD025, MD041)
	{
		h1, firstIsH1 := 0, len(d.headings) > 0 && d.headings[0].level == 1
		for _, h := range d.headings {
			if h.level == 1 {
				h1++
			}
		}
		var pass float64
		switch {
		case h1 == 1 && firstIsH1:
			pass = 1
		case h1 == 1:
			pass = 0.5
		case h1 == 0 && !tmpl.Title:
			pass = 1
		case h1 == 0:
			pass = 0
		default:
			pass = 1 / float64(h1)
		}
		checks = append(checks, CheckResult{Name: checkTitle, Pass: pass, N: 1,
			Detail: fmt.Sprintf("%d H1 heading(s), first heading is H1: %v", h1, firstIsH1)})
	}

	// sections: presence, uniqueness and order
	n := len(tmpl.Sections)
	first := make([]int, n) // heading index of each section's first occurrence
	for i := range first {
		first[i] = -1
	}
	var seq []int
	for hi, h := range d.headings {
		if k := h.section; k >= 0 {
			seq = append(seq, k)
			if first[k] < 0 {
				first[k] = hi
			}
		}
	}
	{
		lis := longestIncreasing(seq)
		den := max(n, len(seq))
		pass := 1.0
		if den > 0 {
			pass = float64(lis) / float64(den)
		}
		var missing []string
		for k, f := range first {
			if f < 0 {
				missing = append(missing, tmpl.Sections[k])
			}
		}
		detail := fmt.Sprintf("%d of %d sections, %d section headings, %d in template order", n-len(missing), n, len(seq), lis)
		if len(missing) > 0 {
			detail += "; missing: " + strings.Join(missing, ", ")
		}
		checks = append(checks, CheckResult{Name: checkSections, Pass: pass, N: den, Detail: detail})
	}

	// nonempty_sections
	filled, present := 0, 0
	{
		var empty []string
		for k, hi := range first {
			if hi < 0 {
				continue
			}
			present++
			lines := d.headings[hi].content
			for j := hi + 1; j < len(d.headings) && d.headings[j].level > d.headings[hi].level; j++ {
				lines += d.headings[j].content
			}
			if lines > 0 {
				filled++
			} else {
				empty = append(empty, tmpl.Sections[k])
			}
		}
		pass := 1.0
		if present > 0 {
			pass = float64(filled) / float64(present)
		}
		detail := fmt.Sprintf("%d of %d present sections have content", filled, present)
		if len(empty) > 0 {
			detail += "; empty: " + strings.Join(empty, ", ")
		}
		checks = append(checks, CheckResult{Name: checkNonemptySections, Pass: pass, N: present, Detail: detail})
	}

	// heading_levels (MD001)
	{
		bad := 0
		var at []string
		for i := 1; i < len(d.headings); i++ {
			if d.headings[i].level > d.headings[i-1].level+1 {
				bad++
				tr.add(checkHeadingLevels, "bad", "line %d: H%d %q after H%d", d.headings[i].line, d.headings[i].level, d.headings[i].text, d.headings[i-1].level)
				if len(at) < 3 {
					at = append(at, fmt.Sprintf("line %d", d.headings[i].line))
				}
			}
		}
		pass := 1.0
		if len(d.headings) > 1 {
			pass = 1 - float64(bad)/float64(len(d.headings)-1)
		}
		detail := fmt.Sprintf("%d skipped level(s) in %d headings", bad, len(d.headings))
		if bad > 0 {
			detail += " (" + strings.Join(at, ", ") + ")"
		}
		checks = append(checks, CheckResult{Name: checkHeadingLevels, Pass: pass, N: max(0, len(d.headings)-1), Detail: detail})
	}

	// heading_style (MD003), judged on levels 1 and 2
	{
		var c counter
		for _, h := range d.headings {
			if h.level <= 2 {
				c.add(h.style)
				tr.add(checkHeadingStyle, h.style, "line %d: %q", h.line, h.text)
			}
		}
		checks = append(checks, c.result(checkHeadingStyle, "H1/H2 headings"))
	}

	// heading_case
	{
		var c counter
		for hi := range d.headings {
			if hc, ok := headingCase(heads[hi], caps); ok {
				c.add(hc)
				tr.add(checkHeadingCase, hc, "line %d: H%d %q", d.headings[hi].line, d.headings[hi].level, d.headings[hi].text)
			}
		}
		checks = append(checks, c.result(checkHeadingCase, "headings of 2+ words"))
	}

	// bullet_style (MD004)
	{
		var c counter
		for i, m := range d.bullets {
			c.add(string(rune(m)))
			tr.add(checkBulletStyle, string(rune(m)), "line %d", d.bulletLines[i])
		}
		checks = append(checks, c.result(checkBulletStyle, "bullets"))
	}

	// emphasis_style (MD049), strong_style (MD050)
	{
		var c counter
		c.addN("*", info.emStar)
		c.addN("_", info.emUnderscore)
		for i, e := range info.emphasized {
			kind := info.emKinds[i]
			check := checkEmphasisStyle
			if len(kind) == 2 {
				check = checkStrongStyle
			}
			tr.add(check, kind, "%q", e)
		}
		checks = append(checks, c.result(checkEmphasisStyle, "emphasis"))
		var s counter
		s.addN("**", info.strongStar)
		s.addN("__", info.strongUnderscore)
		checks = append(checks, s.result(checkStrongStyle, "strong"))
	}

	// code_style (MD046, MD048)
	{
		var c counter
		for i, style := range d.code {
			c.add(style)
			tr.add(checkCodeStyle, style, "line %d", d.codeLines[i])
		}
		checks = append(checks, c.result(checkCodeStyle, "code blocks"))
	}

	// spelling
	{
		var c counter
		c.addN("us", us)
		c.addN("uk", uk)
		checks = append(checks, c.result(checkSpelling, "US/UK words"))
	}

	// person
	{
		var c counter
		c.addN("we", we)
		c.addN("I", i1)
		checks = append(checks, c.result(checkPerson, "first-person pronouns"))
	}

	// readability
	{
		type graded struct {
			name  string
			grade float64
		}
		var gs []graded
		for k, hi := range first {
			if hi < 0 {
				continue
			}
			acc := sections[k]
			if acc == nil || acc.words < minWords {
				continue
			}
			if acc.open {
				acc.sentences++
				acc.open = false
			}
			gs = append(gs, graded{tmpl.Sections[k], acc.grade()})
			tr.add(checkReadability, tmpl.Sections[k], "%s: grade %.1f (%d words, %d sentences)", tmpl.Sections[k], acc.grade(), acc.words, acc.sentences)
		}
		pass, detail, judged := 1.0, fmt.Sprintf("%d section(s) of %d+ words", len(gs), minWords), 0
		if len(gs) >= 2 {
			lo, hi := gs[0], gs[0]
			for _, g := range gs[1:] {
				if g.grade < lo.grade {
					lo = g
				}
				if g.grade > hi.grade {
					hi = g
				}
			}
			judged = len(gs)
			spread := hi.grade - lo.grade
			if spread > bound {
				pass = math.Max(0, 1-(spread-bound)/bound)
			}
			detail = fmt.Sprintf("Flesch-Kincaid grade spread %.1f (bound %.1f): %s %.1f … %s %.1f over %d sections",
				spread, bound, lo.name, lo.grade, hi.name, hi.grade, len(gs))
		}
		checks = append(checks, CheckResult{Name: checkReadability, Pass: pass, N: judged, Detail: detail})
	}

	text.spans, text.emphasized, text.links = info.codeSpans, info.emphasized, info.links
	checks = append(checks,
		text.terminology(tr),
		crossReferences(d, info.links, text, tmpl.Sections, tr),
		text.duplication(tr),
		text.fluency(tr))

	sum, judged := 0.0, 0
	for _, c := range checks {
		if c.N > 0 {
			sum += c.Pass
			judged++
		}
	}
	coverage := 1.0
	if n > 0 {
		coverage = float64(filled) / float64(n)
	}
	return Report{Score: coverage * sum / float64(judged), Coverage: coverage, Checks: checks}
}

// lineOf is the line of the word at byte offset at of a block's plain text.
func lineOf(b *block, plain string, at int) int {
	return b.line + strings.Count(plain[:at], "\n")
}

// counter counts the variants of one "one style" check.
type counter struct {
	names  []string
	counts []int
}

func (c *counter) add(v string) { c.addN(v, 1) }

func (c *counter) addN(v string, k int) {
	if k == 0 {
		return
	}
	for i, n := range c.names {
		if n == v {
			c.counts[i] += k
			return
		}
	}
	c.names = append(c.names, v)
	c.counts = append(c.counts, k)
}

// result scores the counts: with p the majority variant's share of all
// occurrences, Pass = max(0, 2p − 1), so one style scores 1, an even
// two-way split scores 0 and one stray among 40 costs 0.05. No
// occurrences pass.
func (c *counter) result(name, what string) CheckResult {
	total, best := 0, -1
	for i, k := range c.counts {
		total += k
		if best < 0 || k > c.counts[best] || (k == c.counts[best] && c.names[i] < c.names[best]) {
			best = i
		}
	}
	if total == 0 {
		return CheckResult{Name: name, Pass: 1, Detail: "no " + what}
	}
	p := float64(c.counts[best]) / float64(total)
	idx := make([]int, len(c.names))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return c.counts[idx[a]] > c.counts[idx[b]] })
	parts := make([]string, len(idx))
	for j, i := range idx {
		parts[j] = fmt.Sprintf("%s %d", c.names[i], c.counts[i])
	}
	return CheckResult{Name: name, Pass: math.Max(0, 2*p-1), N: total, Majority: c.names[best],
		Detail: what + ": " + strings.Join(parts, ", ")}
}

// longestIncreasing returns the length of the longest strictly increasing
// subsequence of seq.
func longestIncreasing(seq []int) int {
	var tails []int
	for _, v := range seq {
		i := sort.SearchInts(tails, v)
		if i == len(tails) {
			tails = append(tails, v)
		} else {
			tails[i] = v
		}
	}
	return len(tails)
}

// sentenceEnds reports whether the text right after a word ends a sentence:
// optional closing quotes, brackets or emphasis, then . ! or ?, then the
// end or a space.
func sentenceEnds(rest string) bool {
	i := 0
	for i < len(rest) && (rest[i] == ')' || rest[i] == '"' || rest[i] == '\'' || rest[i] == '*' || rest[i] == '_' || rest[i] == ']') {
		i++
	}
	if i >= len(rest) || (rest[i] != '.' && rest[i] != '!' && rest[i] != '?') {
		return false
	}
	for i < len(rest) && (rest[i] == '.' || rest[i] == '!' || rest[i] == '?' || rest[i] == ')' || rest[i] == '"' || rest[i] == '\'') {
		i++
	}
	return i >= len(rest) || rest[i] == ' ' || rest[i] == '\t' || rest[i] == '\n'
}

// maxStyleWord is the longest word the spelling and person checks look up
// ("organisational", "standardisation" and "ourselves" fit).
const maxStyleWord = 16
