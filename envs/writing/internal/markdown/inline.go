package markdown

import (
	"unicode"
	"unicode/utf8"
)

// InlineStats counts emphasis and strong spans by delimiter character.
type InlineStats struct {
	EmStar, EmUnderscore         int
	StrongStar, StrongUnderscore int
}

// Stripper turns inline Markdown into plain text and counts emphasis. Its
// buffers are reused across calls.
type Stripper struct {
	buf  []byte
	runs []delimRun
	// record makes emphasis append every match to matches (see
	// EmphasisSpans).
	record  bool
	matches []EmMatch
}

// EmMatch is one emphasis (N = 1) or strong (N = 2) span: the byte
// offsets of its opening and closing delimiters, and the delimiter
// character ('*' or '_').
type EmMatch struct {
	Open, Close, N int
	Ch             byte
}

type delimRun struct {
	pos, n int // position in buf and remaining length
	ch     byte
	active bool
}

// Plain returns s with code spans, URLs, HTML tags, link destinations and
// references removed, link brackets dropped, and matched emphasis
// delimiters replaced by spaces; emphasis spans are added to st (if not nil).
// The result aliases the Stripper's buffer until the next call.
func (p *Stripper) Plain(s string, st *InlineStats) string {
	b := p.buf[:0]
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			if s[i+1] != '*' && s[i+1] != '_' {
				b = append(b, s[i+1])
			} else {
				b = append(b, ' ')
			}
			i += 2
			continue
		case c == '`':
			n := RunLen(s, i, '`')
			if end := FindBacktickRun(s, i+n, n); end >= 0 {
				// A code span reads as one short word, so sentences and
				// emphasis around it keep their shape.
				b = append(b, 'x')
				i = end + n
				continue
			}
			for k := 0; k < n; k++ {
				b = append(b, '`')
			}
			i += n
			continue
		case c == '<':
			if j := htmlOrAutolinkEnd(s, i); j > i {
				b = append(b, ' ')
				i = j
				continue
			}
		case c == 'h' && hasURLPrefix(s[i:]) && (i == 0 || !isWordByte(s[i-1])):
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != ')' && s[j] != '>' {
				j++
			}
			b = append(b, ' ')
			i = j
			continue
		case c == ']':
			if i+1 < len(s) && s[i+1] == '(' {
				if j := MatchParen(s, i+1); j > 0 {
					i = j + 1
					continue
				}
			}
			if i+1 < len(s) && s[i+1] == '[' {
				if j := indexFrom(s, i+2, ']'); j > 0 {
					i = j + 1
					continue
				}
			}
			i++
			continue
		case c == '[':
			i++
			continue
		case c == '!' && i+1 < len(s) && s[i+1] == '[':
			i++
			continue
		}
		b = append(b, c)
		i++
	}
	p.buf = b
	p.emphasis(st)
	return string(p.buf)
}

// emphasis finds emphasis and strong spans in p.buf with CommonMark's
// flanking rules (simplified: no "rule of 3"), counts them into st and
// blanks the matched delimiters.
func (p *Stripper) emphasis(st *InlineStats) {
	b := p.buf
	p.runs = p.runs[:0]
	for i := 0; i < len(b); {
		c := b[i]
		if c != '*' && c != '_' {
			i++
			continue
		}
		n := 1
		for i+n < len(b) && b[i+n] == c {
			n++
		}
		prev, _ := lastRune(b[:i])
		next, _ := utf8.DecodeRune(b[i+n:])
		if i == 0 {
			prev = ' '
		}
		if i+n >= len(b) {
			next = ' '
		}
		pw, nw := unicode.IsSpace(prev), unicode.IsSpace(next)
		pp, np := isPunct(prev), isPunct(next)
		left := !nw && (!np || pw || pp)
		right := !pw && (!pp || nw || np)
		var canOpen, canClose bool
		if c == '*' {
			canOpen, canClose = left, right
		} else {
			canOpen = left && (!right || pp)
			canClose = right && (!left || np)
		}
		if canClose {
			rem := n
			pos := i
			for rem > 0 {
				k := len(p.runs) - 1
				for ; k >= 0; k-- {
					r := &p.runs[k]
					if r.active && r.ch == c && r.n > 0 {
						break
					}
				}
				if k < 0 {
					break
				}
				o := &p.runs[k]
				use := 1
				if o.n >= 2 && rem >= 2 {
					use = 2
				}
				if st != nil {
					switch {
					case use == 2 && c == '*':
						st.StrongStar++
					case use == 2:
						st.StrongUnderscore++
					case c == '*':
						st.EmStar++
					default:
						st.EmUnderscore++
					}
				}
				if p.record {
					p.matches = append(p.matches, EmMatch{Open: o.pos + o.n - use, Close: pos, N: use, Ch: c})
				}
				for j := 0; j < use; j++ {
					b[o.pos+o.n-1-j] = ' '
					b[pos+j] = ' '
				}
				o.n -= use
				rem -= use
				pos += use
				// Openers between the match and the closer can no longer match.
				for j := k + 1; j < len(p.runs); j++ {
					p.runs[j].active = false
				}
				if o.n == 0 {
					o.active = false
				}
			}
			if rem > 0 && canOpen {
				p.runs = append(p.runs, delimRun{pos: pos, n: rem, ch: c, active: true})
			}
		} else if canOpen {
			p.runs = append(p.runs, delimRun{pos: i, n: n, ch: c, active: true})
		}
		i += n
	}
}

// EmphasisSpans returns the emphasis and strong spans of masked, a line of
// inline Markdown in which code, URLs and the like are masked (see Mask),
// found as Plain finds them. The result is valid until the next call.
func (p *Stripper) EmphasisSpans(masked []byte) []EmMatch {
	p.buf = append(p.buf[:0], masked...)
	p.record, p.matches = true, p.matches[:0]
	p.emphasis(nil)
	p.record = false
	return p.matches
}

// RunLen returns the length of the run of c starting at s[i].
func RunLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// FindBacktickRun returns the start of the next run of exactly n backticks
// at or after i, or -1.
func FindBacktickRun(s string, i, n int) int {
	for i < len(s) {
		if s[i] != '`' {
			i++
			continue
		}
		m := RunLen(s, i, '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

func hasURLPrefix(s string) bool {
	return len(s) > 8 && (s[:7] == "http://" || s[:8] == "https://")
}

// htmlOrAutolinkEnd returns the index after an autolink (<scheme:...>) or an
// HTML tag starting at s[i] == '<', or i if there is none.
func htmlOrAutolinkEnd(s string, i int) int {
	if i+1 >= len(s) {
		return i
	}
	c := s[i+1]
	if !(c == '/' || c == '!' || (c|0x20 >= 'a' && c|0x20 <= 'z')) {
		return i
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '>':
			return j + 1
		case '<', '\n':
			return i
		}
	}
	return i
}

// MatchParen returns the index of the ')' matching the '(' at s[i], or -1.
func MatchParen(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		case ' ':
			// Link destinations have no spaces unless followed by a title;
			// keep scanning, titles are rare and short.
		}
	}
	return -1
}

func indexFrom(s string, i int, c byte) int {
	for j := i; j < len(s); j++ {
		if s[j] == c {
			return j
		}
	}
	return -1
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return isASCIIPunct(byte(r))
	}
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func lastRune(b []byte) (rune, int) {
	if len(b) == 0 {
		return ' ', 0
	}
	return utf8.DecodeLastRune(b)
}

// Mask returns a copy of s of the same length in which code spans, URLs,
// HTML tags, link destinations and backslash escapes are overwritten with
// 'x', so that emphasis and words can be found at their original offsets.
func Mask(s string) []byte {
	b := []byte(s)
	fill := func(i, j int) {
		for k := i; k < j && k < len(b); k++ {
			b[k] = 'x'
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			fill(i, i+2)
			i += 2
			continue
		case c == '`':
			n := RunLen(s, i, '`')
			if end := FindBacktickRun(s, i+n, n); end >= 0 {
				fill(i, end+n)
				i = end + n
				continue
			}
			i += n
			continue
		case c == '<':
			if j := htmlOrAutolinkEnd(s, i); j > i {
				fill(i, j)
				i = j
				continue
			}
		case c == 'h' && hasURLPrefix(s[i:]) && (i == 0 || !isWordByte(s[i-1])):
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != ')' && s[j] != '>' {
				j++
			}
			fill(i, j)
			i = j
			continue
		case c == ']' && i+1 < len(s) && s[i+1] == '(':
			if j := MatchParen(s, i+1); j > 0 {
				fill(i+2, j)
				i = j + 1
				continue
			}
		}
		i++
	}
	return b
}
