package writing

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/troupe-dev/troupe/envs/writing/internal/markdown"
)

// shipped holds the RFCs the project ships (see corpus/README.md or the
// licence files there for provenance: rust-lang/rfcs, MIT OR Apache-2.0).
//
//go:embed corpus/*.md
var shipped embed.FS

// templateSections are the H2 sections of the Rust RFC template, in order.
var templateSections = []string{
	"Summary",
	"Motivation",
	"Guide-level explanation",
	"Reference-level explanation",
	"Drawbacks",
	"Rationale and alternatives",
	"Prior art",
	"Unresolved questions",
	"Future possibilities",
}

// RFC is one template document split into work units.
type RFC struct {
	// Name is the file's base name without ".md".
	Name string
	// Title is the document's H1 title, derived from Name
	// ("2645-transparent-unions" → "Transparent unions (RFC 2645)").
	Title string
	// Units are the work units in template order. Unit 0 carries the
	// title and the metadata preamble in front of the Summary section.
	Units []Unit
	// Tokens is the sum of the units' tokens.
	Tokens int
	// Terms are the RFC's own terms used in more than one unit (see
	// [Term]), most frequent first.
	Terms []Term
}

// Unit is one work unit: an H2 section's lead text (before its first H3),
// or one H3 subsection with everything below it. An H2 section whose lead
// is empty is merged with its first H3 subsection, so that no unit is a
// bare heading.
type Unit struct {
	// Section indexes the template's sections (0 for Summary … 8 for
	// Future possibilities), or is -1 for an extra H2 section the RFC adds
	// (an appendix, say).
	Section int
	// Level is the level of the unit's first heading (2 or 3).
	Level int
	// Heading is the unit's first heading text; Path is "Section" or
	// "Section / Subsection" for display.
	Heading, Path string
	// Headings lists every heading of the unit that the outline fixes
	// (its H2 and/or H3), in order.
	Headings []OutlineHeading
	// Source is the unit's canonical Markdown: ATX headings, fenced code,
	// the RFC's own text otherwise. Writers render it in their habits.
	Source string
	// Words and Tokens measure Source (tokens = ⌈1.3 × words⌉).
	Words, Tokens int
	// Introduces and Uses index RFC.Terms: the terms this unit is the
	// first to use, and those it uses that an earlier unit introduced.
	Introduces, Uses []int
	// Refs are the unit's mentions of other units' headings.
	Refs []Ref
	// BuildsOn are the units whose content this one builds on: for a
	// reference-level unit every guide-level unit, and the units (other
	// than the first) that introduce the terms it uses. A writer who has
	// not read them may restate their content.
	BuildsOn []int
	// DependsOn are every unit this one depends on (term introducers,
	// mentioned units and BuildsOn), sorted.
	DependsOn []int
}

// OutlineHeading is one heading the outline prescribes.
type OutlineHeading struct {
	Level int    // 2 (a template section) or 3 (a subsection)
	Text  string // the heading's text
}

// tokensOf estimates the tokens of a text: 1.3 per whitespace-separated word.
func tokensOf(s string) int { return tokensForWords(wordCount(s)) }

// wordCount counts whitespace-separated words without allocating.
func wordCount(s string) int {
	n := 0
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		space := c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

func tokensForWords(w int) int { return int(math.Ceil(1.3 * float64(w))) }

// LoadShipped returns the RFCs embedded in the package; names, if given,
// selects files by name (with or without ".md"). The whole shipped corpus
// is parsed once and shared: callers must not modify the RFCs.
func LoadShipped(names ...string) ([]RFC, error) {
	sub, err := fs.Sub(shipped, "corpus")
	if err != nil {
		return nil, err
	}
	if len(names) > 0 {
		return loadFS(sub, "corpus (shipped)", names)
	}
	shippedOnce.Do(func() { shippedRFCs, shippedErr = loadFS(sub, "corpus (shipped)", nil) })
	return shippedRFCs, shippedErr
}

var (
	shippedOnce sync.Once
	shippedRFCs []RFC
	shippedErr  error
)

// LoadDir parses the *.md files of dir as RFC-style documents: the files
// named in names (with or without ".md"), or, with no names, every file
// except those named like the template, a licence or a readme
// ("0000-template.md", "LICENSE*", "README*"). It is an error if dir is
// missing, holds no Markdown, lacks a named file, or a file lacks the
// template's sections.
func LoadDir(dir string, names ...string) ([]RFC, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("corpus_dir %q: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("corpus_dir %q: not a directory", dir)
	}
	return loadFS(os.DirFS(dir), fmt.Sprintf("corpus_dir %q", dir), names)
}

func loadFS(fsys fs.FS, where string, names []string) ([]RFC, error) {
	var files []string
	if len(names) > 0 {
		for _, n := range names {
			if !strings.HasSuffix(n, ".md") {
				n += ".md"
			}
			files = append(files, n)
		}
	} else {
		all, err := fs.Glob(fsys, "*.md")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		sort.Strings(all)
		for _, n := range all {
			if !skipFile(n) {
				files = append(files, n)
			}
		}
	}
	var out []RFC
	for _, n := range files {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		r, err := parseRFC(strings.TrimSuffix(n, ".md"), string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: file %s: %w", where, n, err)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no RFC Markdown files (*.md) found", where)
	}
	return out, nil
}

func skipFile(name string) bool {
	u := strings.ToUpper(name)
	return strings.HasPrefix(u, "LICENSE") || strings.HasPrefix(u, "README") ||
		strings.HasPrefix(u, "NOTICE") || strings.Contains(u, "TEMPLATE")
}

// srcHeading is a heading found in a source file.
type srcHeading struct {
	level int
	text  string
	line  int // index into lines
}

// parseRFC splits an RFC-style Markdown document into work units. name is
// the file's base name, used for the title and in errors. The document
// must contain the nine template sections (case-insensitive), each once
// and in order, as headings of one level; H3 subsections become units of
// their own.
func parseRFC(name, src string) (RFC, error) {
	lines := canonicalLines(src)
	// Find headings outside code.
	var hs []srcHeading
	var code markdown.Fence
	for i, ln := range lines {
		if code.Line(ln) {
			continue
		}
		if lv, text, ok := atx(ln); ok {
			hs = append(hs, srcHeading{level: lv, text: text, line: i})
		}
	}
	// Locate the template sections.
	secLevel := 0
	secAt := make([]int, len(templateSections)) // index into hs
	for k := range secAt {
		secAt[k] = -1
	}
	next := 0
	for i, h := range hs {
		k := sectionIndex(h.text)
		if k < 0 {
			continue
		}
		if secLevel == 0 {
			secLevel = h.level
		}
		if h.level != secLevel {
			continue
		}
		if secAt[k] >= 0 {
			return RFC{}, fmt.Errorf("line %d: section %q appears twice (first on line %d)", h.line+1, templateSections[k], hs[secAt[k]].line+1)
		}
		if k < next {
			return RFC{}, fmt.Errorf("line %d: section %q is out of template order (after %q)", h.line+1, templateSections[k], templateSections[next-1])
		}
		secAt[k] = i
		next = k + 1
	}
	var missing []string
	for k, at := range secAt {
		if at < 0 {
			missing = append(missing, fmt.Sprintf("%q", templateSections[k]))
		}
	}
	if len(missing) > 0 {
		return RFC{}, fmt.Errorf("not an RFC with the template: missing section(s) %s (want the headings %s, in order)",
			strings.Join(missing, ", "), strings.Join(templateSections, ", "))
	}
	shift := 2 - secLevel // normalise sections to H2
	first := hs[secAt[0]]

	// Preamble: content before Summary, without headings or blank edges.
	var pre []string
	for i := 0; i < first.line; i++ {
		if isHeadingLine(hs, i) {
			continue
		}
		pre = append(pre, lines[i])
	}
	preamble := strings.TrimSpace(strings.Join(pre, "\n"))

	// Walk the sections (template and extra) from Summary on.
	type block struct {
		h    srcHeading
		body []string
	}
	r := RFC{Name: name, Title: titleFromName(name)}
	var blocks []block // H2 and H3 headings with their bodies (H4+ stay in bodies)
	for i := secAt[0]; i < len(hs); i++ {
		h := hs[i]
		lv := h.level + shift
		if lv < 2 {
			lv = 2
		}
		if lv > 3 {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(hs); j++ {
			if hs[j].level+shift <= 3 {
				end = hs[j].line
				break
			}
		}
		var body []string
		for k := h.line + 1; k < end; k++ {
			body = append(body, relevel(lines[k], hs, k, shift))
		}
		blocks = append(blocks, block{h: srcHeading{level: lv, text: h.text, line: h.line}, body: body})
	}
	section := -1
	for bi := 0; bi < len(blocks); bi++ {
		b := blocks[bi]
		body := strings.TrimSpace(strings.Join(b.body, "\n"))
		u := Unit{Level: b.h.level}
		if b.h.level == 2 {
			section = sectionIndex(b.h.text)
			text := b.h.text
			if section >= 0 {
				text = templateSections[section]
			}
			u.Heading, u.Path = text, text
			u.Headings = []OutlineHeading{{2, text}}
			src := "## " + text + "\n\n"
			if body == "" && bi+1 < len(blocks) && blocks[bi+1].h.level == 3 {
				// Merge a bare H2 with its first subsection.
				bi++
				nb := blocks[bi]
				body = strings.TrimSpace(strings.Join(nb.body, "\n"))
				u.Headings = append(u.Headings, OutlineHeading{3, nb.h.text})
				u.Path = text + " / " + nb.h.text
				src += "### " + nb.h.text + "\n\n"
			}
			if body == "" {
				body = "(This section is intentionally left brief.)"
			}
			u.Source = src + body + "\n"
		} else {
			parent := "?"
			if section >= 0 {
				parent = templateSections[section]
			} else if n := len(r.Units); n > 0 {
				parent = r.Units[n-1].Headings[0].Text
			}
			if body == "" {
				body = "(See the surrounding subsections.)"
			}
			u.Heading, u.Path = b.h.text, parent+" / "+b.h.text
			u.Headings = []OutlineHeading{{3, b.h.text}}
			u.Source = "### " + b.h.text + "\n\n" + body + "\n"
		}
		u.Section = section
		if len(r.Units) == 0 {
			head := "# " + r.Title + "\n\n"
			if preamble != "" {
				head += preamble + "\n\n"
			}
			u.Source = head + u.Source
			u.Headings = append([]OutlineHeading{{1, r.Title}}, u.Headings...)
		}
		u.Source = clampLevels(u.Source)
		u.Words = wordCount(u.Source)
		u.Tokens = tokensForWords(u.Words)
		r.Tokens += u.Tokens
		r.Units = append(r.Units, u)
	}
	if len(r.Units) == 0 {
		return RFC{}, errors.New("no sections after Summary")
	}
	linkDeps(&r)
	return r, nil
}

// clampLevels lowers headings that skip a level (an H5 right below an H3,
// say) to one level below the previous heading, as the real RFCs
// occasionally do; the check's heading_levels would count them.
func clampLevels(src string) string {
	lines := strings.Split(src, "\n")
	var code markdown.Fence
	prev := 0
	for i, ln := range lines {
		if code.Line(ln) {
			continue
		}
		lv, text, ok := atx(ln)
		if !ok {
			continue
		}
		if prev > 0 && lv > prev+1 {
			lv = prev + 1
			lines[i] = strings.Repeat("#", lv) + " " + text
		}
		prev = lv
	}
	return strings.Join(lines, "\n")
}

func isHeadingLine(hs []srcHeading, i int) bool {
	for _, h := range hs {
		if h.line == i {
			return true
		}
	}
	return false
}

// relevel shifts an H4+ heading line by shift levels (so an RFC whose
// sections are H1 keeps its relative structure).
func relevel(ln string, hs []srcHeading, i, shift int) string {
	if shift == 0 || !isHeadingLine(hs, i) {
		return ln
	}
	lv, text, _ := atx(ln)
	lv += shift
	if lv > 6 {
		lv = 6
	}
	return strings.Repeat("#", lv) + " " + text
}

// sectionIndex returns the template section a heading names, or -1.
// Names are folded by markdown.NormalizeHeading and match ignoring case, punctuation, inline
// Markdown, hyphens versus spaces and a plural "s".
func sectionIndex(text string) int {
	t := markdown.NormalizeHeading(text)
	for k, s := range templateSections {
		n := markdown.NormalizeHeading(s)
		if t == n || t == n+"s" || t+"s" == n {
			return k
		}
	}
	return -1
}

// titleFromName turns "2645-transparent-unions" into
// "Transparent unions (RFC 2645)".
func titleFromName(name string) string {
	num, rest, ok := strings.Cut(name, "-")
	isNum := ok && num != "" && strings.IndexFunc(num, func(r rune) bool { return !unicode.IsDigit(r) }) < 0
	if !isNum {
		rest = name
	}
	words := strings.FieldsFunc(rest, func(r rune) bool { return r == '-' || r == '_' || r == ' ' })
	if len(words) == 0 {
		words = []string{"Untitled"}
	}
	w0 := []rune(words[0])
	w0[0] = unicode.ToUpper(w0[0])
	words[0] = string(w0)
	t := strings.Join(words, " ")
	if isNum {
		return t + " (RFC " + num + ")"
	}
	return t
}

// canonicalLines splits src into lines, drops a YAML front-matter block
// at the top and anchor-only link reference definitions ("[summary]:
// #summary"), expands tabs at line starts, and turns setext headings into
// ATX ones, so that sections are found whatever heading syntax a file uses.
// Code blocks are left as they are (restyle.Markdown fences indented code).
func canonicalLines(src string) []string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	raw := strings.Split(src, "\n")
	// YAML front matter: a first non-blank line "---" up to the next
	// "---" or "...".
	for i, ln := range raw {
		if strings.TrimSpace(ln) == "" {
			continue
		}
		if strings.TrimSpace(ln) == "---" {
			for j := i + 1; j < len(raw); j++ {
				if t := strings.TrimSpace(raw[j]); t == "---" || t == "..." {
					raw = raw[j+1:]
					break
				}
			}
		}
		break
	}
	var out []string
	var code markdown.Fence
	prevPara := false
	paraLen := 0
	for i := 0; i < len(raw); i++ {
		ln := expandLeadingTabs(raw[i])
		t := strings.TrimLeft(ln, " ")
		ind := len(ln) - len(t)
		if code.Line(ln) {
			out = append(out, ln)
			prevPara, paraLen = false, 0
			continue
		}
		if strings.TrimSpace(ln) == "" {
			out = append(out, "")
			prevPara, paraLen = false, 0
			continue
		}
		if ind == 0 && anchorRef(t) {
			continue
		}
		if _, _, ok := atx(ln); ok {
			out = append(out, ln)
			prevPara, paraLen = false, 0
			continue
		}
		if prevPara && ind <= 3 {
			if lv := setextLevel(t); lv > 0 {
				out[len(out)-1] = strings.Repeat("#", lv) + " " + strings.TrimSpace(out[len(out)-1])
				prevPara, paraLen = false, 0
				continue
			}
		}
		_, isList := bulletOrOrdered(t)
		para := ind <= 3 && !isList && t[0] != '|' && t[0] != '>' && t[0] != '<'
		if para {
			paraLen++
		} else {
			paraLen = 0
		}
		prevPara = para && paraLen == 1 // only one-line setext headings are converted
		out = append(out, ln)
	}
	return out
}

func expandLeadingTabs(ln string) string {
	if !strings.HasPrefix(ln, "\t") && !strings.Contains(leadingWS(ln), "\t") {
		return ln
	}
	ws := leadingWS(ln)
	col := 0
	for _, c := range ws {
		if c == '\t' {
			col += 4 - col%4
		} else {
			col++
		}
	}
	return strings.Repeat(" ", col) + ln[len(ws):]
}

func leadingWS(ln string) string {
	i := 0
	for i < len(ln) && (ln[i] == ' ' || ln[i] == '\t') {
		i++
	}
	return ln[:i]
}

// anchorRef reports a link reference definition whose target is an
// in-page anchor, like the template's "[summary]: #summary".
func anchorRef(t string) bool {
	if !strings.HasPrefix(t, "[") {
		return false
	}
	j := strings.Index(t, "]:")
	if j < 1 {
		return false
	}
	return strings.HasPrefix(strings.TrimSpace(t[j+2:]), "#")
}

// atx parses an ATX heading line with at most 3 spaces of indentation.
func atx(ln string) (level int, text string, ok bool) {
	t := strings.TrimLeft(ln, " ")
	if len(ln)-len(t) > 3 {
		return 0, "", false
	}
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(t) && t[level] != ' ' && t[level] != '\t') {
		return 0, "", false
	}
	text = strings.TrimSpace(t[level:])
	j := len(text)
	for j > 0 && text[j-1] == '#' {
		j--
	}
	if j < len(text) && (j == 0 || text[j-1] == ' ') {
		text = strings.TrimSpace(text[:j])
	}
	return level, text, true
}

// bulletOrOrdered reports whether t starts with a list marker and returns
// the marker's byte (0 for ordered lists).
func bulletOrOrdered(t string) (byte, bool) {
	if len(t) >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && (t[1] == ' ' || t[1] == '\t') {
		return t[0], true
	}
	i := 0
	for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && t[i+1] == ' ' {
		return 0, true
	}
	return 0, false
}
