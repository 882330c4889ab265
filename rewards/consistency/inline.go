package consistency

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is the checker's own reading of inline Markdown: it reduces a
// block's text to plain prose and records what the checks need on the
// way (emphasis delimiters, code spans, links).

// inlineInfo collects what plainText saw in the inline Markdown of one or
// more blocks.
type inlineInfo struct {
	emStar, emUnderscore         int      // *x* and _x_
	strongStar, strongUnderscore int      // **x** and __x__
	codeSpans                    []string // contents of inline code spans
	links                        []link   // links, with their text and destination
	emphasized                   []string // plain text of emphasis spans
	emKinds                      []string // their delimiters: "*", "_", "**" or "__"
}

// link is an inline, reference or shortcut link.
type link struct {
	text, dest string
}

// codeWord stands for an inline code span in plain text: a one-letter
// word, so the sentence around the span keeps its shape.
const codeWord = "x"

// codeMark stands for an inline code span in a heading's text for the
// heading_case check: not a letter, so the span is no word (code says
// nothing about a heading's case; "Variations of `set`" has no
// lower-case word), while the words glued to it stay code ("`struct`s").
const codeMark = '\x03'

// anchorMark goes before the text of a link labelled with the anchor it
// points to, a slug with a hyphen ("[future-possibilities][]" to
// #future-possibilities), in
// the plain text of prose (when plainText records info): that text names
// the anchor, as an identifier does, and is no term of the prose. It is
// not a letter, so words are unchanged.
const anchorMark = '\x04'

// codeMode says what stripSpans writes for an inline code span.
type codeMode uint8

const (
	codeAsWord codeMode = iota // codeWord
	codeKeep                   // the span's content
	codeAsMark                 // codeMark
)

// escStar and escUnderscore stand for escaped delimiters, which must not
// be read as emphasis, until markEmphasis restores them.
const (
	escStar       = '\x01'
	escUnderscore = '\x02'
)

// plainText returns the plain text of inline Markdown s: code spans become
// codeWord, links their text, images, HTML tags, autolinks and bare URLs
// disappear, and emphasis delimiters are removed. When info is not nil,
// it records emphasis, code spans and links. defs resolves reference
// links.
func plainText(s string, defs map[string]string, info *inlineInfo) string {
	var b strings.Builder
	b.Grow(len(s))
	stripSpans(s, defs, info, &b, codeAsWord)
	return markEmphasis(b.String(), info)
}

// headingText is plainText for the heading_case check: code spans become
// codeMark.
func headingText(s string, defs map[string]string) string {
	var b strings.Builder
	b.Grow(len(s))
	stripSpans(s, defs, nil, &b, codeAsMark)
	return markEmphasis(b.String(), nil)
}

// renderedText is the text a reader sees: plainText, but code spans keep
// their content. Heading anchors are made from it.
func renderedText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	stripSpans(s, nil, nil, &b, codeKeep)
	return markEmphasis(b.String(), nil)
}

// stripSpans is the first pass: code spans, links, images, HTML and URLs.
func stripSpans(s string, defs map[string]string, info *inlineInfo, b *strings.Builder, code codeMode) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] < utf8.RuneSelf && isPunctuation(rune(s[i+1])):
			switch s[i+1] {
			case '*':
				b.WriteByte(escStar)
			case '_':
				b.WriteByte(escUnderscore)
			default:
				b.WriteByte(s[i+1])
			}
			i += 2
		case c == '`':
			n := 1
			for i+n < len(s) && s[i+n] == '`' {
				n++
			}
			end := closingTicks(s, i+n, n)
			if end < 0 {
				b.WriteString(s[i : i+n])
				i += n
				continue
			}
			if info != nil {
				info.codeSpans = append(info.codeSpans, strings.TrimSpace(s[i+n:end]))
			}
			switch code {
			case codeKeep:
				b.WriteString(strings.TrimSpace(s[i+n : end]))
			case codeAsMark:
				b.WriteByte(codeMark)
			default:
				b.WriteString(codeWord)
			}
			i = end + n
		case c == '<':
			if j := strings.IndexByte(s[i:], '>'); j > 1 && tagLike(s[i+1:i+j]) {
				i += j + 1
				continue
			}
			b.WriteByte(c)
			i++
		case c == '!' && i+1 < len(s) && s[i+1] == '[':
			if _, _, next, ok := readLink(s, i+1, defs); ok {
				i = next // images are not prose
				continue
			}
			b.WriteByte(c)
			i++
		case c == '[':
			text, dest, next, ok := readLink(s, i, defs)
			if !ok {
				b.WriteByte(c)
				i++
				continue
			}
			if info != nil {
				info.links = append(info.links, link{text: plainText(text, nil, nil), dest: dest})
				if t := strings.TrimSpace(text); len(dest) > 1 && dest[0] == '#' && strings.EqualFold(dest[1:], t) &&
					strings.IndexByte(t, '-') > 0 && !strings.ContainsAny(t, " \t\n") {
					b.WriteByte(anchorMark)
				}
			}
			stripSpans(text, defs, info, b, code)
			i = next
		case (c == 'h' || c == 'w') && urlAt(s, i):
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' && s[j] != ')' && s[j] != '>' {
				j++
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
}

// citation reports inline Markdown that is one link to another site and
// nothing else ("[IRLO: Propose additions to std::prelude](https://…)"):
// as a list item, an entry of a reference list.
func citation(s string, defs map[string]string) bool {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") {
		return false
	}
	text, dest, next, ok := readLink(s, 0, defs)
	return ok && next == len(s) && strings.TrimSpace(text) != "" &&
		(strings.HasPrefix(dest, "https://") || strings.HasPrefix(dest, "http://"))
}

// closingTicks finds a run of exactly n backticks at or after i.
func closingTicks(s string, i, n int) int {
	for i < len(s) {
		j := strings.IndexByte(s[i:], '`')
		if j < 0 {
			return -1
		}
		j += i
		k := j
		for k < len(s) && s[k] == '`' {
			k++
		}
		if k-j == n {
			return j
		}
		i = k
	}
	return -1
}

// tagLike reports whether the text between < and > is an HTML tag, a
// comment or an autolink.
func tagLike(t string) bool {
	if t == "" || strings.ContainsAny(t, "\n<") {
		return false
	}
	if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") || (strings.Contains(t, "@") && !strings.Contains(t, " ")) {
		return true
	}
	c := t[0]
	if c == '/' || c == '!' {
		return true
	}
	return c|0x20 >= 'a' && c|0x20 <= 'z' && (len(t) == 1 || t[1] == ' ' || t[1] == '/' || unicode.IsLetter(rune(t[1])) || unicode.IsDigit(rune(t[1])))
}

// urlAt reports a bare URL at s[i].
func urlAt(s string, i int) bool {
	if i > 0 && (unicode.IsLetter(rune(s[i-1])) || unicode.IsDigit(rune(s[i-1]))) {
		return false
	}
	r := s[i:]
	return strings.HasPrefix(r, "http://") || strings.HasPrefix(r, "https://") || strings.HasPrefix(r, "www.")
}

// readLink reads a link starting at the "[" at s[i]: "[text](dest)",
// "[text][label]", "[text][]" or "[label]" with a definition. next is the
// offset after it.
func readLink(s string, i int, defs map[string]string) (text, dest string, next int, ok bool) {
	depth := 0
	j := i
	for ; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '`':
			n := 1
			for j+n < len(s) && s[j+n] == '`' {
				n++
			}
			if e := closingTicks(s, j+n, n); e >= 0 {
				j = e + n - 1
			} else {
				j += n - 1
			}
		case '[':
			depth++
		case ']':
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if j >= len(s) {
		return "", "", 0, false
	}
	text = s[i+1 : j]
	rest := s[j+1:]
	switch {
	case strings.HasPrefix(rest, "("):
		k := matchingParen(s, j+1)
		if k < 0 {
			return "", "", 0, false
		}
		d := strings.TrimSpace(s[j+2 : k])
		if f := strings.Fields(d); len(f) > 0 {
			d = strings.Trim(f[0], "<>")
		}
		return text, d, k + 1, true
	case strings.HasPrefix(rest, "["):
		e := strings.IndexByte(rest, ']')
		if e < 0 {
			return "", "", 0, false
		}
		label := rest[1:e]
		if label == "" {
			label = text
		}
		d, found := defs[normLabel(label)]
		if !found {
			return "", "", 0, false
		}
		return text, d, j + 1 + e + 1, true
	default:
		d, found := defs[normLabel(text)]
		if !found {
			return "", "", 0, false
		}
		return text, d, j + 1, true
	}
}

// matchingParen returns the index of the ")" closing the "(" at s[i].
func matchingParen(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		case '\n':
			if j+1 < len(s) && s[j+1] == '\n' {
				return -1
			}
		}
	}
	return -1
}

// delim is a run of * or _ that may open or close emphasis.
type delim struct {
	at, n     int // position and remaining length
	ch        byte
	canOpen   bool
	canClose  bool
	origStart int
}

// markEmphasis is the second pass: it finds emphasis with CommonMark's
// flanking rules (without the "multiple of 3" rule), counts it, and
// removes the matched delimiters.
func markEmphasis(s string, info *inlineInfo) string {
	if !strings.ContainsAny(s, "*_") {
		return restorePlaceholders(s)
	}
	var runs []delim
	for i := 0; i < len(s); {
		c := s[i]
		if c != '*' && c != '_' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == c {
			j++
		}
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		if i == 0 {
			before = ' '
		}
		after, _ := utf8.DecodeRuneInString(s[j:])
		if j == len(s) {
			after = ' '
		}
		spaceAfter, spaceBefore := unicode.IsSpace(after), unicode.IsSpace(before)
		punctAfter, punctBefore := isPunctuation(after), isPunctuation(before)
		left := !spaceAfter && (!punctAfter || spaceBefore || punctBefore)
		right := !spaceBefore && (!punctBefore || spaceAfter || punctAfter)
		d := delim{at: i, n: j - i, ch: c, origStart: i}
		if c == '*' {
			d.canOpen, d.canClose = left, right
		} else {
			d.canOpen = left && (!right || punctBefore)
			d.canClose = right && (!left || punctAfter)
		}
		runs = append(runs, d)
		i = j
	}
	remove := make([]bool, len(s))
	for ci := range runs {
		closer := &runs[ci]
		if !closer.canClose {
			continue
		}
		for oi := ci - 1; oi >= 0 && closer.n > 0; oi-- {
			opener := &runs[oi]
			if opener.ch != closer.ch || !opener.canOpen || opener.n == 0 {
				continue
			}
			k := 1
			if opener.n >= 2 && closer.n >= 2 {
				k = 2
			}
			if info != nil {
				switch {
				case k == 2 && closer.ch == '*':
					info.strongStar++
				case k == 2:
					info.strongUnderscore++
				case closer.ch == '*':
					info.emStar++
				default:
					info.emUnderscore++
				}
				info.emphasized = append(info.emphasized, s[opener.at+opener.n:closer.at])
				info.emKinds = append(info.emKinds, strings.Repeat(string(closer.ch), k))
			}
			for x := 0; x < k; x++ {
				remove[opener.at+opener.n-1-x] = true
				remove[closer.at+x] = true
			}
			opener.n -= k
			closer.n -= k
			closer.at += k
			// Delimiters between opener and closer can no longer match.
			for m := oi + 1; m < ci; m++ {
				runs[m].n = 0
			}
			if opener.n > 0 {
				oi++ // the same opener may match again
			}
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if !remove[i] {
			b.WriteByte(s[i])
		}
	}
	return restorePlaceholders(b.String())
}

func restorePlaceholders(s string) string {
	if strings.IndexByte(s, escStar) < 0 && strings.IndexByte(s, escUnderscore) < 0 {
		return s
	}
	return strings.NewReplacer("\x01", "*", "\x02", "_").Replace(s)
}

// isPunctuation is CommonMark's punctuation character.
func isPunctuation(r rune) bool {
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}
