package markdown

import (
	"strings"
)

// UnitKind says what kind of prose a Unit is.
type UnitKind uint8

// Kinds of prose.
const (
	UnitParagraph UnitKind = iota
	UnitListItem
	UnitTable
	UnitQuote
	UnitHeading
)

// Unit is one piece of prose: a paragraph line, a list item's text, a table
// row, a block-quote line or a heading's text. Units of the same paragraph
// share a Para number, so sentences may continue across lines.
type Unit struct {
	Kind    UnitKind
	Text    string // raw inline Markdown, code spans and all
	Line    int    // 1-based
	Para    int    // paragraph number; consecutive lines of one paragraph share it
	Section int    // index into Doc.Headings of the enclosing section heading, -1 if none
}

// Heading is one heading of the document.
type Heading struct {
	Level int
	Text  string // raw inline Markdown
	Style HeadingStyle
	Line  int // 1-based
	// Section is what Parse's sectionOf returned for the heading's text
	// (a template section index), or -1.
	Section int
	// ContentLines counts non-heading content lines (prose, list, table,
	// quote, code) directly below this heading up to the next heading.
	ContentLines int
}

// CodeBlock is one fenced or indented code block.
type CodeBlock struct {
	Style CodeStyle
	Line  int // 1-based, of the opening fence or first line
}

// Bullet is one unordered list item.
type Bullet struct {
	Marker BulletMarker
	Line   int // 1-based
}

// LineKind classifies a source line.
type LineKind uint8

// Kinds of lines.
const (
	LineOther       LineKind = iota // front matter, HTML, link reference definitions, thematic breaks
	LineBlank                       // blank line
	LineFenceOpen                   // opening code fence
	LineFenceBody                   // line inside a fenced code block
	LineFenceClose                  // closing code fence
	LineIndented                    // line of an indented code block
	LineATX                         // ATX heading
	LineSetextText                  // text line of a setext heading
	LineSetextUnder                 // setext underline
	LineList                        // list item line; Off is the marker's offset
	LineProse                       // paragraph line; Off is the text's offset
	LineQuote                       // block quote line
	LineTable                       // table row
)

// Line is what the parser found on one source line.
type Line struct {
	Kind LineKind
	// Off is the byte offset of the line's first non-blank character on
	// fence openings, ATX headings, list items, quotes, tables and prose
	// lines, and 0 on the others.
	Off   int
	Width int // list items: the marker plus the spaces after it, in bytes
	Level int // headings (ATX, setext text and underline): the level
}

// Doc is the block structure of a Markdown document.
type Doc struct {
	Lines    []Line // one per source line
	Headings []Heading
	Code     []CodeBlock
	Bullets  []Bullet
	Units    []Unit
}

// IndentOf returns the visual indent of s (tabs to the next multiple of 4)
// and the byte offset of the first non-blank character.
func IndentOf(s string) (cols, off int) {
	for off < len(s) {
		switch s[off] {
		case ' ':
			cols++
		case '\t':
			cols += 4 - cols%4
		default:
			return cols, off
		}
		off++
	}
	return cols, off
}

// IsBlank reports whether s holds only spaces, tabs and carriage returns.
func IsBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' && s[i] != '\r' {
			return false
		}
	}
	return true
}

// FenceOpen reports whether t (already stripped of indentation) opens a
// fenced code block (three or more backticks or tildes), returning the
// fence character and run length.
func FenceOpen(t string) (ch byte, n int, ok bool) {
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, false
	}
	ch = t[0]
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, false
	}
	if ch == '`' && strings.IndexByte(t[n:], '`') >= 0 {
		return 0, 0, false // backtick info strings may not contain backticks
	}
	return ch, n, true
}

// Fence follows fenced code blocks line by line, as CommonMark opens them
// (``` or ~~~ with at most 3 spaces of indentation) and closes them (the
// same character, at least as many). The zero value is outside any block.
type Fence struct {
	in bool
	ch byte
	n  int
}

// Line reports whether ln belongs to a fenced code block: it opens one, is
// inside one or closes one.
func (f *Fence) Line(ln string) bool {
	t := strings.TrimLeft(ln, " ")
	if f.in {
		f.in = !fenceClose(t, f.ch, f.n)
		return true
	}
	if ch, n, ok := FenceOpen(t); ok && len(ln)-len(t) <= 3 {
		f.in, f.ch, f.n = true, ch, n
		return true
	}
	return false
}

// Open reports whether the lines so far left a block open.
func (f *Fence) Open() bool { return f.in }

// fenceClose reports whether t closes a fence of ch with at least n chars.
func fenceClose(t string, ch byte, n int) bool {
	k := 0
	for k < len(t) && t[k] == ch {
		k++
	}
	return k >= n && IsBlank(t[k:])
}

// ATXHeading parses an ATX heading line (indentation already removed): its
// level, its text without the optional closing sequence, and whether it
// has one ("## Title ##").
func ATXHeading(t string) (level int, text string, closed, ok bool) {
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 || level > 6 {
		return 0, "", false, false
	}
	if level < len(t) && t[level] != ' ' && t[level] != '\t' {
		return 0, "", false, false
	}
	text = strings.TrimSpace(t[level:])
	// Optional closing sequence: spaces then #s at the end.
	j := len(text)
	for j > 0 && text[j-1] == '#' {
		j--
	}
	if j < len(text) && (j == 0 || text[j-1] == ' ' || text[j-1] == '\t') {
		closed = true
		text = strings.TrimSpace(text[:j])
	}
	return level, text, closed, true
}

// setextUnderline reports the level of a setext underline (1 for =, 2 for -).
func setextUnderline(t string) int {
	t = strings.TrimRight(t, " \t\r")
	if t == "" {
		return 0
	}
	ch := t[0]
	if ch != '=' && ch != '-' {
		return 0
	}
	for i := 0; i < len(t); i++ {
		if t[i] != ch {
			return 0
		}
	}
	if ch == '=' {
		return 1
	}
	return 2
}

// thematicBreak reports whether t is ***, ---, ___ (3+, spaces allowed).
func thematicBreak(t string) bool {
	var ch byte
	n := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch c {
		case ' ', '\t', '\r':
			continue
		case '*', '-', '_':
			if ch == 0 {
				ch = c
			} else if c != ch {
				return false
			}
			n++
		default:
			return false
		}
	}
	return n >= 3
}

// listMarker parses a list item marker at the start of t. It returns the
// bullet char (0 for ordered items), the width of marker plus following
// spaces (the content offset), and the item's text.
func listMarker(t string) (b byte, width int, text string, ok bool) {
	if t == "" {
		return 0, 0, "", false
	}
	i := 0
	switch t[0] {
	case '-', '*', '+':
		b = t[0]
		i = 1
	default:
		for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		if i == 0 || i >= len(t) || (t[i] != '.' && t[i] != ')') {
			return 0, 0, "", false
		}
		i++
	}
	if i < len(t) && t[i] != ' ' && t[i] != '\t' {
		return 0, 0, "", false
	}
	sp := 0
	for i+sp < len(t) && (t[i+sp] == ' ' || t[i+sp] == '\t') && sp < 5 {
		sp++
	}
	if sp == 0 || sp > 4 { // empty item or indented code inside the item
		sp = 1
	}
	return b, i + sp, strings.TrimSpace(t[i:]), true
}

// linkRefDef reports whether t is a link reference definition such as
// "[summary]: #summary".
func linkRefDef(t string) bool {
	if len(t) < 4 || t[0] != '[' {
		return false
	}
	j := strings.Index(t, "]:")
	if j <= 1 {
		return false
	}
	if strings.IndexByte(t[1:j], ']') >= 0 {
		return false
	}
	return strings.TrimSpace(t[j+2:]) != ""
}

// htmlBlockStart reports whether t starts an HTML block we skip.
func htmlBlockStart(t string) bool {
	if len(t) < 2 || t[0] != '<' {
		return false
	}
	c := t[1]
	return c == '/' || c == '!' || c == '?' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// Parse reads the block structure of src: a line-based approximation of
// CommonMark, enough to find headings (ATX and setext), list items, fenced
// and indented code blocks, block quotes, tables, HTML blocks and link
// reference definitions, and to attribute prose to sections. YAML front
// matter, HTML blocks, comments and link reference definitions are
// skipped. sectionOf maps a heading's text to a section index, or -1 (see
// NoSections); a heading with an index opens a section that the prose
// below it, down to the next heading of its level or above, belongs to.
// Parse never fails: any input is some document.
func Parse(src string, sectionOf func(text string) int) *Doc {
	d := &Doc{}
	var (
		inFence       bool
		fenceCh       byte
		fenceN        int
		inComment     bool
		inIndented    bool
		prevBlank     = true
		paraOpen      bool // the previous line is a paragraph line (setext candidate / lazy continuation)
		paraPlain     bool // that paragraph started outside a list item
		paraStart     int  // index into d.Units of the open paragraph's first line
		para          int
		inList        bool
		listIndent    int // content column of the innermost list item
		curSection    = -1
		curSecLevel   = 0
		lastHeading   = -1
		inFrontmatter bool
	)
	addContent := func() {
		if lastHeading >= 0 {
			d.Headings[lastHeading].ContentLines++
		}
	}
	addHeading := func(level int, text string, style HeadingStyle, line int) {
		sec := sectionOf(text)
		d.Headings = append(d.Headings, Heading{Level: level, Text: text, Style: style, Line: line, Section: sec})
		idx := len(d.Headings) - 1
		lastHeading = idx
		if sec >= 0 {
			curSection, curSecLevel = idx, level
		} else if curSection >= 0 && level <= curSecLevel {
			curSection = -1
		}
		para++
		d.Units = append(d.Units, Unit{Kind: UnitHeading, Text: text, Line: line, Para: para, Section: curSection})
		para++
	}

	lineNo := 0
	for len(src) > 0 {
		var ln string
		if i := strings.IndexByte(src, '\n'); i >= 0 {
			ln, src = src[:i], src[i+1:]
		} else {
			ln, src = src, ""
		}
		lineNo++
		ln = strings.TrimRight(ln, "\r")
		d.Lines = append(d.Lines, Line{})
		li := &d.Lines[len(d.Lines)-1]

		if lineNo == 1 && strings.TrimSpace(ln) == "---" {
			inFrontmatter = true // YAML front matter: skipped
			continue
		}
		if inFrontmatter {
			if t := strings.TrimSpace(ln); t == "---" || t == "..." {
				inFrontmatter = false
			}
			continue
		}
		if inFence {
			_, off := IndentOf(ln)
			li.Kind = LineFenceBody
			if fenceClose(ln[off:], fenceCh, fenceN) {
				li.Kind = LineFenceClose
				inFence = false
				prevBlank, paraOpen = true, false
			} else if !IsBlank(ln) {
				addContent()
			}
			continue
		}
		if inComment {
			if strings.Contains(ln, "-->") {
				inComment = false
			}
			continue
		}
		if IsBlank(ln) {
			li.Kind = LineBlank
			prevBlank, paraOpen = true, false
			para++
			continue
		}
		cols, off := IndentOf(ln)
		t := ln[off:]
		base := 0
		if inList {
			base = listIndent
		}
		// Continuation of an indented code block.
		if inIndented {
			if cols >= base+4 {
				li.Kind = LineIndented
				addContent()
				continue
			}
			inIndented = false
		}
		// A list ends at a non-indented line after a blank line.
		if inList && prevBlank && cols < listIndent {
			if _, _, _, ok := listMarker(t); !ok {
				inList = false
				base = 0
			}
		}
		// Indented code block: needs a blank line (or block boundary) before it.
		if cols >= base+4 && !paraOpen {
			d.Code = append(d.Code, CodeBlock{Style: CodeIndented, Line: lineNo})
			li.Kind = LineIndented
			inIndented = true
			addContent()
			prevBlank = false
			continue
		}
		rel := cols - base
		if rel <= 3 {
			if ch, n, ok := FenceOpen(t); ok {
				inFence, fenceCh, fenceN = true, ch, n
				style := CodeBacktick
				if ch == '~' {
					style = CodeTilde
				}
				d.Code = append(d.Code, CodeBlock{Style: style, Line: lineNo})
				li.Kind, li.Off = LineFenceOpen, off
				addContent()
				prevBlank, paraOpen = false, false
				para++
				continue
			}
		}
		if cols <= 3 {
			if level, text, closed, ok := ATXHeading(t); ok {
				style := HeadingATX
				if closed {
					style = HeadingATXClosed
				}
				addHeading(level, text, style, lineNo)
				li.Kind, li.Off, li.Level = LineATX, off, level
				prevBlank, paraOpen, inList = false, false, false
				continue
			}
			if lv := setextUnderline(t); lv > 0 && paraOpen && paraPlain {
				// The open paragraph becomes the heading.
				var parts []string
				for _, u := range d.Units[paraStart:] {
					parts = append(parts, strings.TrimSpace(u.Text))
				}
				headLine := d.Units[paraStart].Line
				for _, u := range d.Units[paraStart:] {
					d.Lines[u.Line-1].Kind = LineSetextText
					d.Lines[u.Line-1].Level = lv
				}
				li.Kind, li.Level = LineSetextUnder, lv
				d.Units = d.Units[:paraStart]
				if lastHeading >= 0 {
					d.Headings[lastHeading].ContentLines -= len(parts)
				}
				addHeading(lv, strings.Join(parts, " "), HeadingSetext, headLine)
				prevBlank, paraOpen = false, false
				continue
			}
		}
		if rel <= 3 && thematicBreak(t) {
			prevBlank, paraOpen = false, false
			para++
			continue
		}
		if rel <= 3 {
			// An ordered list interrupts a paragraph only when it starts at 1.
			if b, w, text, ok := listMarker(t); ok && !(paraOpen && !inList && b == 0 && !strings.HasPrefix(t, "1")) {
				if b != 0 {
					d.Bullets = append(d.Bullets, Bullet{Marker: BulletMarker(b), Line: lineNo})
				}
				inList = true
				li.Kind, li.Off, li.Width = LineList, off, w
				listIndent = cols + w
				para++
				if text != "" {
					d.Units = append(d.Units, Unit{Kind: UnitListItem, Text: text, Line: lineNo, Para: para, Section: curSection})
					addContent()
				}
				prevBlank = false
				paraOpen, paraPlain, paraStart = true, false, len(d.Units)-1
				if text == "" {
					paraOpen = false
				}
				continue
			}
		}
		if t[0] == '>' {
			if !paraOpen || prevBlank {
				para++
			}
			li.Kind, li.Off = LineQuote, off
			q := strings.TrimLeft(t, "> \t")
			if q != "" {
				d.Units = append(d.Units, Unit{Kind: UnitQuote, Text: q, Line: lineNo, Para: para, Section: curSection})
				addContent()
			}
			prevBlank, paraOpen = false, false
			continue
		}
		if !paraOpen {
			if strings.HasPrefix(t, "<!--") {
				if !strings.Contains(t, "-->") {
					inComment = true
				}
				prevBlank = false
				continue
			}
			if htmlBlockStart(t) {
				prevBlank = false
				para++
				continue
			}
			if linkRefDef(t) {
				prevBlank = false
				continue
			}
		}
		if t[0] == '|' {
			li.Kind, li.Off = LineTable, off
			para++
			d.Units = append(d.Units, Unit{Kind: UnitTable, Text: t, Line: lineNo, Para: para, Section: curSection})
			addContent()
			prevBlank, paraOpen = false, false
			para++
			continue
		}
		// Paragraph line (or a lazy continuation of a list item).
		if !paraOpen {
			para++
			paraStart = len(d.Units)
			paraPlain = !inList || (prevBlank && cols < listIndent)
		}
		li.Kind, li.Off = LineProse, off
		d.Units = append(d.Units, Unit{Kind: UnitParagraph, Text: t, Line: lineNo, Para: para, Section: curSection})
		addContent()
		prevBlank, paraOpen = false, true
	}
	return d
}

// NoSections is a sectionOf for parsing without a template.
func NoSections(string) int { return -1 }
