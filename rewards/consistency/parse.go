package consistency

import "strings"

// This file is the checker's own reading of Markdown's block structure: a
// line-by-line approximation of CommonMark good enough to tell headings,
// code, lists, quotes, tables and paragraphs apart in documents people
// write. It shares nothing with the writing env's simulated writers.

// blockKind is what a block of text is.
type blockKind uint8

const (
	blockPara    blockKind = iota
	blockItem              // a list item's text
	blockQuote             // a block quote's text
	blockTable             // table rows
	blockHeading           // a heading's text
)

// block is a run of text lines of one kind.
type block struct {
	kind    blockKind
	text    string // raw inline Markdown, lines joined by "\n"
	line    int    // 1-based first line
	heading int    // index of the heading above it, −1 before any
	section int    // template section it belongs to, −1 for none
	para    int    // paragraph number: consecutive lines of one block share it
}

// heading is an ATX or setext heading.
type heading struct {
	level   int
	text    string // raw inline Markdown
	style   string // "atx", "atx_closed" or "setext"
	line    int
	section int // template section index it names, −1 for none
	content int // content lines directly below it (before the next heading)
}

// parsed is a document read into blocks.
type parsed struct {
	headings []heading
	blocks   []block
	code     []string // each code block's style: "backtick", "tilde" or "indented"
	bullets  []byte   // each unordered list item's marker
	// codeLines and bulletLines are the lines of code and bullets.
	codeLines, bulletLines []int
	defs                   map[string]string // link reference definitions: normalized label → destination
	defOrder               []string          // their labels in document order
}

// lineIndent returns the indentation width of s in columns (tabs to the
// next multiple of 4) and the byte offset of its first non-blank byte.
func lineIndent(s string) (cols, at int) {
	for at < len(s) {
		switch s[at] {
		case ' ':
			cols++
		case '\t':
			cols += 4 - cols%4
		default:
			return cols, at
		}
		at++
	}
	return cols, at
}

// dropIndent removes up to n columns of leading indentation from s.
func dropIndent(s string, n int) string {
	cols := 0
	i := 0
	for i < len(s) && cols < n {
		if s[i] == ' ' {
			cols++
		} else if s[i] == '\t' {
			cols += 4 - cols%4
		} else {
			break
		}
		i++
	}
	return s[i:]
}

func blankLine(s string) bool { return strings.TrimSpace(s) == "" }

// fenceStart reports a code fence opener (``` or ~~~, three or more; a
// backtick fence's info string holds no backtick).
func fenceStart(t string) (ch byte, n int, ok bool) {
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, false
	}
	ch = t[0]
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 || (ch == '`' && strings.IndexByte(t[n:], '`') >= 0) {
		return 0, 0, false
	}
	return ch, n, true
}

// atxHeading reads "## text" or "## text ##".
func atxHeading(t string) (level int, text string, closed, ok bool) {
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(t) && t[level] != ' ' && t[level] != '\t') {
		return 0, "", false, false
	}
	text = strings.TrimSpace(t[level:])
	if k := strings.TrimRight(text, "#"); len(k) < len(text) {
		if k == "" {
			text, closed = "", true
		} else if k[len(k)-1] == ' ' || k[len(k)-1] == '\t' {
			text, closed = strings.TrimSpace(k), true
		}
	}
	return level, text, closed, true
}

// allOf reports whether t, trimmed of trailing blanks, is one or more c
// (with spaces between them when spaced).
func allOf(t string, c byte, spaced bool) int {
	n := 0
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] == c:
			n++
		case (t[i] == ' ' || t[i] == '\t') && (spaced || strings.TrimSpace(t[i:]) == ""):
		default:
			return 0
		}
	}
	return n
}

// horizontalRule reports a thematic break: three or more of one of - * _.
func horizontalRule(t string) bool {
	if t == "" {
		return false
	}
	c := t[0]
	return (c == '-' || c == '*' || c == '_') && allOf(t, c, true) >= 3
}

// listItem reads a list item marker: "-", "*", "+" or "1." / "1)",
// followed by a blank or the end of the line. width is the marker plus
// the blank after it.
func listItem(t string) (marker byte, width int, ok bool) {
	if t == "" {
		return 0, 0, false
	}
	i := 0
	if t[0] == '-' || t[0] == '*' || t[0] == '+' {
		marker, i = t[0], 1
	} else {
		for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		if i == 0 || i >= len(t) || (t[i] != '.' && t[i] != ')') {
			return 0, 0, false
		}
		marker, i = '1', i+1
	}
	if i < len(t) && t[i] != ' ' && t[i] != '\t' {
		return 0, 0, false
	}
	if i < len(t) {
		i++
	}
	return marker, i, true
}

// tableDelimiter reports a table's delimiter row, such as "|---|:--:|".
func tableDelimiter(t string) bool {
	if !strings.Contains(t, "-") || (!strings.Contains(t, "|") && !strings.Contains(t, ":")) {
		return false
	}
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '|', '-', ':', ' ', '\t':
		default:
			return false
		}
	}
	return strings.Contains(t, "|")
}

// refDefinition reads a link reference definition "[label]: destination".
func refDefinition(t string) (label, dest string, ok bool) {
	if !strings.HasPrefix(t, "[") {
		return "", "", false
	}
	end := strings.Index(t, "]:")
	if end < 2 || strings.ContainsAny(t[1:end], "[]") {
		return "", "", false
	}
	rest := strings.TrimSpace(t[end+2:])
	if f := strings.Fields(rest); len(f) > 0 {
		dest = strings.Trim(f[0], "<>")
	}
	return normLabel(t[1:end]), dest, true
}

// normLabel normalizes a link label: case-folded, blanks collapsed.
func normLabel(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// htmlStart reports a line opening an HTML block: a tag or a comment.
func htmlStart(t string) bool {
	if len(t) < 2 || t[0] != '<' {
		return false
	}
	c := t[1]
	return c == '!' || c == '/' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// parseBlocks reads src. sectionOf maps a heading's raw text to a
// template section index (−1 for none).
func parseBlocks(src string, sectionOf func(string) int) *parsed {
	d := &parsed{defs: map[string]string{}}
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	start := 0
	// YAML front matter.
	if len(lines) > 1 && strings.TrimRight(lines[0], " \t") == "---" {
		for i := 1; i < len(lines); i++ {
			if t := strings.TrimRight(lines[i], " \t"); t == "---" || t == "..." {
				start = i + 1
				break
			}
		}
	}

	var (
		cur        *block // the open paragraph-like block, if any
		para       int
		curHeading = -1
		curSection = -1
		secLevel   = 0
		fenceCh    byte
		fenceLen   int
		fenceInd   int
		inFence    bool
		inHTML     bool
		inComment  bool
		listIndent = -1 // content column of the innermost open list item, −1 outside lists
		prevBlank  = true
	)
	closeBlock := func() {
		if cur != nil {
			d.blocks = append(d.blocks, *cur)
			cur = nil
		}
	}
	open := func(k blockKind, text string, ln int) {
		closeBlock()
		para++
		cur = &block{kind: k, text: text, line: ln, heading: curHeading, section: curSection, para: para}
	}
	countContent := func() {
		if curHeading >= 0 {
			d.headings[curHeading].content++
		}
	}
	addHeading := func(level int, text, style string, ln int) {
		closeBlock()
		sec := -1
		if len(text) <= 200 {
			sec = sectionOf(text)
		}
		switch {
		case sec >= 0:
			curSection, secLevel = sec, level
		case level <= secLevel:
			curSection, secLevel = -1, 0
		}
		d.headings = append(d.headings, heading{level: level, text: text, style: style, line: ln, section: sec})
		curHeading = len(d.headings) - 1
		para++
		d.blocks = append(d.blocks, block{kind: blockHeading, text: text, line: ln, heading: curHeading, section: curSection, para: para})
		listIndent = -1
	}

	for i := start; i < len(lines); i++ {
		raw := lines[i]
		ln := i + 1
		if inFence {
			t := dropIndent(raw, fenceInd)
			if ind, at := lineIndent(t); ind < 4 {
				if n := allOf(t[at:], fenceCh, false); n >= fenceLen {
					inFence = false
					continue
				}
			}
			if !blankLine(raw) {
				countContent()
			}
			continue
		}
		if inComment {
			if strings.Contains(raw, "-->") {
				inComment = false
			}
			continue
		}
		if inHTML {
			if blankLine(raw) {
				inHTML = false
			}
			continue
		}
		if blankLine(raw) {
			closeBlock()
			prevBlank = true
			continue
		}
		line := raw
		ind, at := lineIndent(line)
		// Inside a list item, text indented to its content column belongs to it.
		if listIndent >= 0 {
			if ind >= listIndent {
				line = dropIndent(raw, listIndent)
				ind, at = lineIndent(line)
			} else if prevBlank {
				listIndent = -1
			}
		}
		t := strings.TrimRight(line[at:], " \t")
		if ind >= 4 {
			if cur == nil || prevBlank {
				// An indented code block.
				closeBlock()
				d.code = append(d.code, "indented")
				d.codeLines = append(d.codeLines, ln)
				countContent()
				for i+1 < len(lines) {
					nx := lines[i+1]
					if listIndent >= 0 {
						nx = dropIndent(nx, listIndent)
					}
					if nind, _ := lineIndent(nx); !blankLine(nx) && nind < 4 {
						break
					}
					i++
					if !blankLine(nx) {
						countContent()
					}
				}
				prevBlank = false
				continue
			}
			// A lazy continuation of the open paragraph.
			cur.text += "\n" + t
			countContent()
			prevBlank = false
			continue
		}
		wasBlank := prevBlank
		prevBlank = false
		if ch, n, ok := fenceStart(t); ok {
			closeBlock()
			inFence, fenceCh, fenceLen, fenceInd = true, ch, n, ind
			d.codeLines = append(d.codeLines, ln)
			if ch == '`' {
				d.code = append(d.code, "backtick")
			} else {
				d.code = append(d.code, "tilde")
			}
			countContent()
			continue
		}
		if level, text, closed, ok := atxHeading(t); ok {
			style := "atx"
			if closed {
				style = "atx_closed"
			}
			addHeading(level, text, style, ln)
			continue
		}
		// Setext underline below a one-block paragraph.
		if cur != nil && cur.kind == blockPara && !wasBlank {
			eq, dash := allOf(t, '=', false), allOf(t, '-', false)
			if eq > 0 || (dash > 0 && !strings.Contains(t, " ")) {
				level := 1
				if dash > 0 {
					level = 2
				}
				text := strings.TrimSpace(strings.ReplaceAll(cur.text, "\n", " "))
				hl := cur.line
				para--
				cur = nil
				// The paragraph's lines were counted as content of the heading above.
				if curHeading >= 0 {
					d.headings[curHeading].content -= ln - hl
				}
				addHeading(level, text, "setext", hl)
				continue
			}
		}
		if horizontalRule(t) {
			closeBlock()
			continue
		}
		if t[0] == '>' {
			q := strings.TrimLeft(t, "> \t")
			if cur != nil && cur.kind == blockQuote && !wasBlank {
				cur.text += "\n" + q
			} else {
				open(blockQuote, q, ln)
			}
			countContent()
			continue
		}
		if m, w, ok := listItem(t); ok && (cur == nil || cur.kind != blockPara || wasBlank || t[w-1] == ' ') {
			if m != '1' {
				d.bullets = append(d.bullets, m)
				d.bulletLines = append(d.bulletLines, ln)
			}
			listIndent = ind + w
			open(blockItem, strings.TrimSpace(t[w:]), ln)
			countContent()
			continue
		}
		if label, dest, ok := refDefinition(t); ok && (cur == nil || wasBlank) {
			closeBlock()
			if _, dup := d.defs[label]; !dup {
				d.defs[label] = dest
				d.defOrder = append(d.defOrder, label)
			}
			continue
		}
		if htmlStart(t) && (cur == nil || wasBlank) {
			closeBlock()
			if strings.HasPrefix(t, "<!--") {
				inComment = !strings.Contains(t, "-->")
			} else {
				inHTML = true
			}
			continue
		}
		isRow := strings.HasPrefix(t, "|") ||
			(strings.Contains(t, "|") && i+1 < len(lines) && tableDelimiter(strings.TrimSpace(lines[i+1])))
		if isRow || (cur != nil && cur.kind == blockTable && strings.Contains(t, "|")) {
			if cur != nil && cur.kind == blockTable {
				if !tableDelimiter(t) {
					cur.text += "\n" + t
				}
			} else {
				open(blockTable, t, ln)
			}
			countContent()
			continue
		}
		if cur != nil && !wasBlank && cur.kind != blockTable {
			cur.text += "\n" + t // paragraph continuation (lazy in lists and quotes)
		} else {
			open(blockPara, t, ln)
		}
		countContent()
	}
	closeBlock()
	return d
}
