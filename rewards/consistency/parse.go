package consistency

import (
	"strings"
)

// The parser is a line-based approximation of CommonMark block structure:
// enough to find headings (ATX and setext), list items, fenced and
// indented code blocks, block quotes, tables, HTML blocks and link
// reference definitions, and to attribute prose to sections. It never
// fails: any input is some document.

// unitKind says what kind of prose a unit is.
type unitKind uint8

const (
	unitParagraph unitKind = iota
	unitListItem
	unitTable
	unitQuote
	unitHeading
)

// unit is one piece of prose: a paragraph line, a list item's text, a table
// row, a block-quote line or a heading's text. Units of the same paragraph
// share a para number, so sentences may continue across lines.
type unit struct {
	kind    unitKind
	text    string // raw inline Markdown, code spans and all
	line    int    // 1-based
	para    int    // paragraph number; consecutive lines of one paragraph share it
	section int    // index into doc.headings of the enclosing top section, -1 if none
}

type heading struct {
	level int
	text  string // raw inline Markdown
	style HeadingStyle
	line  int
	// section is the template section the heading names, or -1.
	section int
	// contentLines counts non-heading content lines (prose, list, table,
	// quote, code) directly below this heading up to the next heading.
	contentLines int
}

type codeBlock struct {
	style CodeStyle
	line  int
}

type bullet struct {
	marker BulletMarker
	line   int
}

// lineKind classifies a source line, for Restyle.
type lineKind uint8

const (
	lkOther       lineKind = iota // front matter, HTML, link reference definitions, thematic breaks
	lkBlank                       // blank line
	lkFenceOpen                   // opening code fence
	lkFenceBody                   // line inside a fenced code block
	lkFenceClose                  // closing code fence
	lkIndented                    // line of an indented code block
	lkATX                         // ATX heading
	lkSetextText                  // text line of a setext heading
	lkSetextUnder                 // setext underline
	lkList                        // list item line; off is the marker's offset
	lkProse                       // paragraph line; off is the text's offset
	lkQuote                       // block quote line
	lkTable                       // table row
)

// lineInfo is what the parser found on one line.
type lineInfo struct {
	kind  lineKind
	off   int // byte offset of the marker (lists) or text (prose)
	width int // list marker plus spaces, in bytes
	level int // heading level
}

type doc struct {
	lines    []lineInfo // one per source line
	headings []heading
	code     []codeBlock
	bullets  []bullet
	units    []unit
}

// indentOf returns the visual indent of s (tabs to the next multiple of 4)
// and the byte offset of the first non-blank character.
func indentOf(s string) (cols, off int) {
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

func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' && s[i] != '\r' {
			return false
		}
	}
	return true
}

// FenceOpen reports whether t (already stripped of indentation) opens a
// fenced code block (three or more backticks or tildes), returning the fence character and run length.
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

// fenceClose reports whether t closes a fence of ch with at least n chars.
func fenceClose(t string, ch byte, n int) bool {
	k := 0
	for k < len(t) && t[k] == ch {
		k++
	}
	return k >= n && isBlank(t[k:])
}

// atxHeading parses an ATX heading line (indentation already removed).
func atxHeading(t string) (level int, text string, closed, ok bool) {
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

// parse splits src into the block structure the checks need; sectionOf
// maps a heading's text to its template section index, or -1.
func parse(src string, sectionOf func(text string) int) *doc {
	d := &doc{}
	var (
		inFence       bool
		fenceCh       byte
		fenceN        int
		inComment     bool
		inIndented    bool
		prevBlank     = true
		paraOpen      bool // the previous line is a paragraph line (setext candidate / lazy continuation)
		paraPlain     bool // that paragraph started outside a list item
		paraStart     int  // index into d.units of the open paragraph's first line
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
			d.headings[lastHeading].contentLines++
		}
	}
	addHeading := func(level int, text string, style HeadingStyle, line int) {
		sec := sectionOf(text)
		d.headings = append(d.headings, heading{level: level, text: text, style: style, line: line, section: sec})
		idx := len(d.headings) - 1
		lastHeading = idx
		if sec >= 0 {
			curSection, curSecLevel = idx, level
		} else if curSection >= 0 && level <= curSecLevel {
			curSection = -1
		}
		para++
		d.units = append(d.units, unit{kind: unitHeading, text: text, line: line, para: para, section: curSection})
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
		d.lines = append(d.lines, lineInfo{})
		li := &d.lines[len(d.lines)-1]

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
			_, off := indentOf(ln)
			li.kind = lkFenceBody
			if fenceClose(ln[off:], fenceCh, fenceN) {
				li.kind = lkFenceClose
				inFence = false
				prevBlank, paraOpen = true, false
			} else if !isBlank(ln) {
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
		if isBlank(ln) {
			li.kind = lkBlank
			prevBlank, paraOpen = true, false
			para++
			continue
		}
		cols, off := indentOf(ln)
		t := ln[off:]
		base := 0
		if inList {
			base = listIndent
		}
		// Continuation of an indented code block.
		if inIndented {
			if cols >= base+4 {
				li.kind = lkIndented
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
			d.code = append(d.code, codeBlock{style: CodeIndented, line: lineNo})
			li.kind = lkIndented
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
				d.code = append(d.code, codeBlock{style: style, line: lineNo})
				li.kind, li.off = lkFenceOpen, off
				addContent()
				prevBlank, paraOpen = false, false
				para++
				continue
			}
		}
		if cols <= 3 {
			if level, text, closed, ok := atxHeading(t); ok {
				style := HeadingATX
				if closed {
					style = HeadingATXClosed
				}
				addHeading(level, text, style, lineNo)
				li.kind, li.off, li.level = lkATX, off, level
				prevBlank, paraOpen, inList = false, false, false
				continue
			}
			if lv := setextUnderline(t); lv > 0 && paraOpen && paraPlain {
				// The open paragraph becomes the heading.
				var parts []string
				for _, u := range d.units[paraStart:] {
					parts = append(parts, strings.TrimSpace(u.text))
				}
				headLine := d.units[paraStart].line
				for _, u := range d.units[paraStart:] {
					d.lines[u.line-1].kind = lkSetextText
					d.lines[u.line-1].level = lv
				}
				li.kind, li.level = lkSetextUnder, lv
				d.units = d.units[:paraStart]
				if lastHeading >= 0 {
					d.headings[lastHeading].contentLines -= len(parts)
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
					d.bullets = append(d.bullets, bullet{marker: BulletMarker(b), line: lineNo})
				}
				inList = true
				li.kind, li.off, li.width = lkList, off, w
				listIndent = cols + w
				para++
				if text != "" {
					d.units = append(d.units, unit{kind: unitListItem, text: text, line: lineNo, para: para, section: curSection})
					addContent()
				}
				prevBlank = false
				paraOpen, paraPlain, paraStart = true, false, len(d.units)-1
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
			li.kind, li.off = lkQuote, off
			q := strings.TrimLeft(t, "> \t")
			if q != "" {
				d.units = append(d.units, unit{kind: unitQuote, text: q, line: lineNo, para: para, section: curSection})
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
			li.kind, li.off = lkTable, off
			para++
			d.units = append(d.units, unit{kind: unitTable, text: t, line: lineNo, para: para, section: curSection})
			addContent()
			prevBlank, paraOpen = false, false
			para++
			continue
		}
		// Paragraph line (or a lazy continuation of a list item).
		if !paraOpen {
			para++
			paraStart = len(d.units)
			paraPlain = !inList || (prevBlank && cols < listIndent)
		}
		li.kind, li.off = lkProse, off
		d.units = append(d.units, unit{kind: unitParagraph, text: t, line: lineNo, para: para, section: curSection})
		addContent()
		prevBlank, paraOpen = false, true
	}
	return d
}

// noSections is a sectionOf for parsing without a template.
func noSections(string) int { return -1 }
