package suite

import (
	"regexp"
	"slices"
	"strings"
)

// ExtractStatus says what extraction found in a reply.
type ExtractStatus string

// The extraction outcomes.
const (
	// Extracted: the method's code, with a body that does something.
	Extracted ExtractStatus = "extracted"
	// ExtractedTruncated: the method's code stops inside a string or
	// brackets (the reply was cut off, usually at the model's token
	// limit). Its Source is kept but does not compile, so a class that
	// includes it fails as a whole.
	ExtractedTruncated ExtractStatus = "truncated"
	// ExtractedStub: a def of the method whose body is only a docstring,
	// pass, ... or comments (the model restated the skeleton). Its Source
	// is kept: it is what the model wrote.
	ExtractedStub ExtractStatus = "stub"
	// NotExtracted: no code of the method could be found; Source is "".
	NotExtracted ExtractStatus = "missing"
)

// An Extraction is the code of one method taken from one reply.
type Extraction struct {
	// Source is the method's code normalized to class-member indentation:
	// its decorators and def line indented four spaces, its body eight
	// (relative indentation kept, lines inside multi-line strings
	// untouched), no trailing blank lines. "" when NotExtracted.
	Source string
	// Imports are the module-level import statements of the reply's code
	// block that bind a name Source or Helpers use.
	Imports []string
	// Helpers are methods the reply defines beside the target (at the same
	// indentation, not methods of the dataset, not __init__) that Source
	// calls, directly or through another helper; normalized like Source.
	Helpers []string
	// Status says what was found; Reason explains a status other than
	// Extracted (e.g. "no def of get in the reply", "body only").
	Status ExtractStatus
	Reason string
}

var (
	fenceRe      = regexp.MustCompile("^\\s*```")
	importRe     = regexp.MustCompile(`^(?:import\s+[A-Za-z_]|from\s+[A-Za-z_.][A-Za-z0-9_.]*\s+import\s)`)
	anyDefRe     = regexp.MustCompile(`^([ ]*)(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
	endMarkers   = []string{"<|endoftext|>", "</s>", "<|end|>", "<|EOT|>"}
	responseMark = "### Response:"
)

// cleanReply removes what is not the model's answer: an echoed instruction
// prompt (everything up to the last "### Response:"), and everything from
// an end-of-text marker on. Newlines and tabs are normalized, and Markdown's
// escaped underscore `\_` (some chat models escape identifiers such as
// play\_text; Python rejects it) is read as `_`.
func cleanReply(raw string) string {
	s := strings.ReplaceAll(normalizeText(raw), `\_`, "_")
	if i := strings.LastIndex(s, responseMark); i >= 0 {
		s = s[i+len(responseMark):]
	}
	for _, m := range endMarkers {
		if i := strings.Index(s, m); i >= 0 {
			s = s[:i]
		}
	}
	return s
}

// codeCandidates returns the places code may be in a cleaned reply, best
// first: every fenced block (an unterminated last fence runs to the end),
// then the whole reply with the fence lines blanked.
func codeCandidates(s string) [][]string {
	lines := strings.Split(s, "\n")
	var cands [][]string
	var cur []string
	in := false
	whole := make([]string, len(lines))
	for i, l := range lines {
		if fenceRe.MatchString(l) {
			if in {
				cands = append(cands, cur)
				cur = nil
			}
			in = !in
			continue
		}
		whole[i] = l
		if in {
			cur = append(cur, l)
		}
	}
	if in && len(cur) > 0 {
		cands = append(cands, cur)
	}
	return append(cands, whole)
}

// lineState says how each line of a code block begins: inside a string
// literal that spans lines, or inside open brackets.
type lineState struct {
	inString  []bool
	inBracket []bool
}

// scanner tokenizes Python just enough to know, for each line, whether it
// starts inside a multi-line string or inside brackets. A single-quoted
// string left open at the end of a line ends there (as in prose).
type scanner struct {
	quote string // "" or the open string's delimiter
	depth int
}

// next returns how line l starts, then advances past it.
func (sc *scanner) next(l string) (inString, inBracket bool) {
	inString, inBracket = sc.quote != "", sc.depth > 0
	for k := 0; k < len(l); k++ {
		ch := l[k]
		if sc.quote != "" {
			switch {
			case ch == '\\':
				k++
			case ch == sc.quote[0] && strings.HasPrefix(l[k:], sc.quote):
				k += len(sc.quote) - 1
				sc.quote = ""
			}
			continue
		}
		switch ch {
		case '#':
			k = len(l)
		case '"', '\'':
			q := l[k : k+1]
			if strings.HasPrefix(l[k:], q+q+q) {
				q = l[k : k+3]
			}
			sc.quote = q
			k += len(q) - 1
		case '(', '[', '{':
			sc.depth++
		case ')', ']', '}':
			if sc.depth > 0 {
				sc.depth--
			}
		}
	}
	if len(sc.quote) == 1 {
		sc.quote = "" // unterminated single-line string
	}
	return inString, inBracket
}

// openAtEnd reports whether lines end inside a string or brackets.
func openAtEnd(lines []string) bool {
	var sc scanner
	for _, l := range lines {
		sc.next(l)
	}
	return sc.quote != "" || sc.depth > 0
}

// scan returns the state of every line of lines.
func scan(lines []string) lineState {
	st := lineState{inString: make([]bool, len(lines)), inBracket: make([]bool, len(lines))}
	var sc scanner
	for i, l := range lines {
		st.inString[i], st.inBracket[i] = sc.next(l)
	}
	return st
}

// A block is one def found in a code candidate.
type block struct {
	name   string
	indent int
	lines  []string // decorators, header, body, trailing blanks trimmed
	state  lineState
	header int // number of decorator and header lines
	// cut reports that the block ends inside a string or brackets: the
	// reply stopped mid-statement.
	cut bool
}

// defLine matches a def line, with a cheap test first.
func defLine(l string) (indent int, name string, ok bool) {
	if !strings.Contains(l, "def ") {
		return 0, "", false
	}
	m := anyDefRe.FindStringSubmatch(l)
	if m == nil {
		return 0, "", false
	}
	return len(m[1]), m[2], true
}

// findDef returns the index of the first line defining name.
func findDef(lines []string, name string) (int, bool) {
	for i, l := range lines {
		if _, n, ok := defLine(l); ok && n == name {
			return i, true
		}
	}
	return -1, false
}

// A defRef locates a def line in a code candidate.
type defRef struct {
	line, indent int
	name         string
}

// defsIn returns every def line of lines, in order.
func defsIn(lines []string) []defRef {
	var out []defRef
	for i, l := range lines {
		if d, n, ok := defLine(l); ok {
			out = append(out, defRef{i, d, n})
		}
	}
	return out
}

// cutBlock cuts the def at line i (indentation d) out of lines: the
// decorators right above it, its header, and its body up to the first
// non-blank line at indentation <= d that does not continue a string or a
// bracket.
func cutBlock(lines []string, i, d int, name string) block {
	start := i
	for start > 0 {
		t := strings.TrimSpace(lines[start-1])
		if !strings.HasPrefix(t, "@") || indentOf(lines[start-1]) != d {
			break
		}
		start--
	}
	b := block{name: name, indent: d}
	for k := start; k < i; k++ {
		b.lines = append(b.lines, lines[k])
		b.state.inString = append(b.state.inString, false)
		b.state.inBracket = append(b.state.inBracket, false)
	}
	var sc scanner
	header := true
	for k := i; k < len(lines); k++ {
		l := lines[k]
		prev := sc
		inS, inB := sc.next(l)
		if k > i && header && !inB {
			header = false
			b.header = len(b.lines)
		}
		if !header && strings.TrimSpace(l) != "" && !inS && !inB && indentOf(l) <= d {
			sc = prev
			break
		}
		b.lines = append(b.lines, l)
		b.state.inString = append(b.state.inString, inS)
		b.state.inBracket = append(b.state.inBracket, inB)
	}
	if header {
		b.header = len(b.lines)
	}
	b.cut = sc.quote != "" || sc.depth > 0
	// No trailing blank lines, even when the reply stops inside the def's
	// header (the decorators and the def line itself stay).
	n := len(b.lines)
	for n > i-start+1 && strings.TrimSpace(b.lines[n-1]) == "" {
		n--
	}
	b.lines, b.state.inString, b.state.inBracket = b.lines[:n], b.state.inString[:n], b.state.inBracket[:n]
	b.header = min(b.header, n)
	return b
}

// shift re-indents l by delta spaces (removing at most its indentation).
func shift(l string, delta int) string {
	if strings.TrimSpace(l) == "" {
		return ""
	}
	if delta >= 0 {
		return strings.Repeat(" ", delta) + l
	}
	return l[min(-delta, indentOf(l)):]
}

// member renders b at class-member indentation (see Extraction.Source).
// It reports whether the body does anything (see ExtractedStub).
func (b block) member() (string, bool) {
	out := make([]string, 0, len(b.lines))
	bodyIndent := -1
	for k := b.header; k < len(b.lines); k++ {
		if strings.TrimSpace(b.lines[k]) != "" && !b.state.inString[k] && !b.state.inBracket[k] {
			bodyIndent = indentOf(b.lines[k])
			break
		}
	}
	for k, l := range b.lines {
		switch {
		case k < b.header:
			out = append(out, shift(l, 4-b.indent))
		case b.state.inString[k]:
			out = append(out, l)
		default:
			out = append(out, shift(l, 8-bodyIndent))
		}
	}
	return strings.Join(out, "\n"), bodyIndent >= 0 && b.doesSomething()
}

// doesSomething reports whether the body holds a statement other than a
// leading docstring, pass, ... and comments.
func (b block) doesSomething() bool {
	first := true
	for k := b.header; k < len(b.lines); k++ {
		t := strings.TrimSpace(b.lines[k])
		if t == "" || b.state.inString[k] || strings.HasPrefix(t, "#") {
			continue
		}
		if first && isStringStart(t) {
			first = false
			continue
		}
		first = false
		if t == "pass" || t == "..." {
			continue
		}
		return true
	}
	return false
}

func isStringStart(t string) bool {
	t = strings.TrimLeft(t, "rRuUbB")
	return strings.HasPrefix(t, `"`) || strings.HasPrefix(t, `'`)
}

// Extract takes the code of method m of class c from reply, a model's raw
// reply (or a whole-class prediction). The rules, in order:
//
//  1. Drop an echoed instruction prompt (up to the last "### Response:")
//     and everything from an end-of-text marker (<|endoftext|>, </s>);
//     read Markdown's escaped underscore `\_` as `_`.
//  2. Look for `def NAME(` in each fenced block, then in the whole reply;
//     take the first def whose body does something, else the first def
//     (ExtractedStub). The def's block ends at the first line indented no
//     deeper than the def that does not continue a string or bracket.
//  3. Without any def of the method: if the code starts indented, it is a
//     continuation of the prompt (the method's body, as completion models
//     reply); the method is the dataset's signature followed by it.
//  4. Otherwise NotExtracted.
//
// Extract is for a method-level reply; a whole-class prediction is
// extracted by rule 2 alone.
//
// Skeleton decorators are added to a def that has none, helpers the
// method calls and the imports it uses are kept (see [Extraction]).
func Extract(reply string, c *Class, m *Method) Extraction {
	return parseReply(reply).extract(c, m, true)
}

// A parsedReply is a reply cut into code candidates, with their def
// lines, so that the methods of one whole-class reply are extracted
// without parsing it again.
type parsedReply struct {
	empty bool
	cands [][]string
	defs  [][]defRef
}

func parseReply(reply string) *parsedReply {
	s := cleanReply(reply)
	p := &parsedReply{empty: strings.TrimSpace(s) == ""}
	if p.empty {
		return p
	}
	p.cands = codeCandidates(s)
	for _, cand := range p.cands {
		p.defs = append(p.defs, defsIn(cand))
	}
	return p
}

// extract extracts m; bareBody allows rule 3 (method-level replies only:
// a whole class without the method's def has no code of it).
func (p *parsedReply) extract(c *Class, m *Method, bareBody bool) Extraction {
	if p.empty {
		return Extraction{Status: NotExtracted, Reason: "empty reply"}
	}
	cands := p.cands
	var stub *Extraction
	for ci, cand := range cands {
		for _, ref := range p.defs[ci] {
			if ref.name != m.Name {
				continue
			}
			b := cutBlock(cand, ref.line, ref.indent, ref.name)
			src, does := b.member()
			src = withDecorators(src, m.Decorators)
			x := Extraction{Source: src, Status: Extracted}
			x.Helpers = helpersOf(cand, p.defs[ci], ref, c, src)
			x.Imports = importsUsed(cand, src, x.Helpers)
			switch {
			case b.cut:
				x.Status, x.Reason = ExtractedTruncated, "the reply stops inside a string or brackets"
			case !does:
				x.Status, x.Reason = ExtractedStub, "the def of "+m.Name+" has no statement beyond a docstring or pass"
			default:
				return x
			}
			if stub == nil {
				stub = &x
			}
		}
	}
	if stub != nil {
		return *stub // the first def found, truncated or a stub
	}
	if !bareBody {
		return Extraction{Status: NotExtracted, Reason: "no def of " + m.Name + " in the class"}
	}
	// A bare body: the first candidate whose first code line is indented.
	for _, cand := range cands {
		first := -1
		for k, l := range cand {
			if strings.TrimSpace(l) != "" {
				first = k
				break
			}
		}
		if first < 0 || indentOf(cand[first]) == 0 {
			continue
		}
		body := cand[first:]
		st := scan(body)
		level := indentOf(body[0])
		end := 0
		for end < len(body) {
			l := body[end]
			// The body ends where the code dedents below it (the
			// continuation went on to the class's next method, or to
			// module-level code).
			if strings.TrimSpace(l) != "" && !st.inString[end] && !st.inBracket[end] && indentOf(l) < level {
				break
			}
			end++
		}
		for end > 0 && strings.TrimSpace(body[end-1]) == "" {
			end--
		}
		hdr := strings.Split(signature(m), "\n")
		b := block{name: m.Name, indent: 4, header: len(hdr), lines: append(hdr, body[:end]...)}
		b.state = lineState{
			inString:  append(make([]bool, len(hdr)), st.inString[:end]...),
			inBracket: append(make([]bool, len(hdr)), st.inBracket[:end]...),
		}
		src, does := b.member()
		if !does {
			return Extraction{Status: NotExtracted, Reason: "body only, and it does nothing"}
		}
		src = withDecorators(src, m.Decorators)
		x := Extraction{Source: src, Status: Extracted, Reason: "body only", Imports: importsUsed(cand, src, nil)}
		if openAtEnd(body[:end]) {
			x.Status, x.Reason = ExtractedTruncated, "body only, and it stops inside a string or brackets"
		}
		return x
	}
	return Extraction{Status: NotExtracted, Reason: "no def of " + m.Name + " and no indented body in the reply"}
}

// signature returns the decorators-free def header of m from its
// description, at class-member indentation (def at 4 spaces).
func signature(m *Method) string {
	lines := strings.Split(normalizeText(m.Description), "\n")
	i, _ := findDef(lines, m.Name)
	d := indentOf(lines[i])
	rest := lines[i:]
	st := scan(rest)
	h := 1
	for h < len(rest) && st.inBracket[h] {
		h++
	}
	out := make([]string, h)
	for k := range h {
		if k == 0 {
			out[k] = "    " + strings.TrimLeft(rest[k], " ")
		} else {
			out[k] = shift(rest[k], 4-d)
		}
	}
	return strings.Join(out, "\n")
}

// stub returns m's stub: its decorators, its signature, and `pass`.
func stub(m *Method) string {
	return withDecorators(signature(m)+"\n        pass", m.Decorators)
}

// withDecorators puts decs above src when src has no decorator.
func withDecorators(src string, decs []string) string {
	if len(decs) == 0 || strings.HasPrefix(strings.TrimSpace(src), "@") {
		return src
	}
	var b strings.Builder
	for _, d := range decs {
		b.WriteString("    " + d + "\n")
	}
	return b.String() + src
}

// helpersOf returns the helper methods target calls (transitively) among
// the defs of cand at target's indentation that are not methods of c.
func helpersOf(cand []string, defs []defRef, target defRef, c *Class, src string) []string {
	avail := map[string]defRef{}
	var order []string
	for _, ref := range defs {
		if ref.indent != target.indent || ref.name == "__init__" || ref.name == target.name || c.MethodIndex(ref.name) >= 0 {
			continue
		}
		if _, dup := avail[ref.name]; !dup {
			avail[ref.name] = ref
			order = append(order, ref.name)
		}
	}
	if len(avail) == 0 {
		return nil
	}
	used := map[string]string{}
	queue := []string{src}
	for len(queue) > 0 {
		text := queue[0]
		queue = queue[1:]
		for _, name := range order {
			if _, done := used[name]; done || !strings.Contains(text, name+"(") {
				continue
			}
			ref := avail[name]
			hs, _ := cutBlock(cand, ref.line, ref.indent, ref.name).member()
			used[name] = hs
			queue = append(queue, hs)
		}
	}
	var out []string
	for _, name := range order {
		if hs, ok := used[name]; ok {
			out = append(out, hs)
		}
	}
	return out
}

// importsUsed returns the top-level import statements of cand that bind a
// name used in src or helpers.
func importsUsed(cand []string, src string, helpers []string) []string {
	var stmts []string
	for _, l := range cand {
		if !(strings.HasPrefix(l, "import ") || strings.HasPrefix(l, "from ")) || !importRe.MatchString(l) || strings.Contains(l, "(") {
			continue
		}
		stmt := strings.TrimSpace(l)
		if i := strings.Index(stmt, "#"); i >= 0 {
			stmt = strings.TrimSpace(stmt[:i])
		}
		if !slices.Contains(stmts, stmt) {
			stmts = append(stmts, stmt)
		}
	}
	if len(stmts) == 0 {
		return nil
	}
	words := map[string]bool{}
	for _, t := range append([]string{src}, helpers...) {
		for i := 0; i < len(t); {
			if !isNameChar(t[i]) {
				i++
				continue
			}
			j := i
			for j < len(t) && isNameChar(t[j]) {
				j++
			}
			words[t[i:j]] = true
			i = j
		}
	}
	var out []string
	for _, stmt := range stmts {
		for _, n := range boundNames(stmt) {
			if words[n] {
				out = append(out, stmt)
				break
			}
		}
	}
	return out
}

// boundNames returns the names an import statement binds.
func boundNames(stmt string) []string {
	var parts []string
	if rest, ok := strings.CutPrefix(stmt, "import "); ok {
		for _, p := range strings.Split(rest, ",") {
			f := strings.Fields(p)
			switch {
			case len(f) == 3 && f[1] == "as":
				parts = append(parts, f[2])
			case len(f) >= 1:
				parts = append(parts, strings.Split(f[0], ".")[0])
			}
		}
		return parts
	}
	_, rest, ok := strings.Cut(stmt, " import ")
	if !ok {
		return nil
	}
	for _, p := range strings.Split(rest, ",") {
		f := strings.Fields(p)
		switch {
		case len(f) == 3 && f[1] == "as":
			parts = append(parts, f[2])
		case len(f) >= 1 && f[0] != "*":
			parts = append(parts, f[0])
		}
	}
	return parts
}
