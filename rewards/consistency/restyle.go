package consistency

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Style is one set of writing habits: a variant for every "one style"
// check. An empty field leaves that aspect of the text as it is.
type Style struct {
	Heading  HeadingStyle   // HeadingATX, HeadingATXClosed or HeadingSetext
	Case     HeadingCase    // CaseSentence or CaseTitle
	Bullet   BulletMarker   // BulletDash, BulletStar or BulletPlus
	Emphasis EmphasisMarker // EmphasisStar or EmphasisUnderscore
	Strong   EmphasisMarker // StrongStar or StrongUnderscore
	Code     CodeStyle      // CodeBacktick, CodeTilde or CodeIndented
	Spelling Spelling       // SpellingUS or SpellingUK
	Person   Person         // PersonPlural or PersonSingular
}

// Restyle rewrites the Markdown text md in style s, with the definitions
// the checks use: headings (syntax and capitalization), bullet markers,
// emphasis and strong delimiters, code blocks (fence character, fenced or
// indented), US/UK spelling of the words of SpellingPairs and the
// authors' person (we ↔ I, us ↔ me, our ↔ my, ours ↔ mine, ourselves ↔
// myself, with "we are"/"I am" and "we were"/"I was"). Code is never
// changed; block quotes and double-quoted text keep their words. A
// document restyled with one Style scores 1 on every "one style" check
// whose variant the Style sets, up to the rare constructs the parser
// reads differently from CommonMark (emphasis spanning lines, say).
func Restyle(md string, s Style) string {
	d := parse(md, noSections)
	lines := splitLines(md)
	var out []string
	var p stripper
	sentenceStart := true
	pendingBlank := 0 // blank lines held back inside an indented code block
	inIndentGroup := false
	indentPrefix := ""
	indentFence := ""
	needBlank := false // a converted code block must be followed by a blank line
	fenceIndented := false
	fenceTarget := ""
	emit := func(l string) {
		if needBlank && !isBlank(l) {
			out = append(out, "")
		}
		needBlank = false
		out = append(out, l)
	}
	closeIndentGroup := func() {
		if inIndentGroup {
			out = append(out, indentPrefix+indentFence)
			inIndentGroup = false
		}
		for ; pendingBlank > 0; pendingBlank-- {
			out = append(out, "")
		}
	}
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		li := lineInfo{}
		if i < len(d.lines) {
			li = d.lines[i]
		}
		if inIndentGroup || pendingBlank > 0 {
			if li.kind == lkBlank {
				pendingBlank++
				continue
			}
			if li.kind == lkIndented && inIndentGroup {
				for ; pendingBlank > 0; pendingBlank-- {
					out = append(out, "")
				}
			} else {
				closeIndentGroup()
			}
		}
		switch li.kind {
		case lkBlank:
			emit(ln)
			sentenceStart = true
		case lkFenceOpen:
			t := ln[li.off:]
			ch := t[0]
			n := runLen(t, 0, ch)
			switch s.Code {
			case CodeBacktick, CodeTilde:
				target := byte('`')
				if s.Code == CodeTilde {
					target = '~'
				}
				m := max(n, longestFenceRun(lines, d.lines, i+1, target)+1)
				fenceTarget = strings.Repeat(string(target), m)
				emit(ln[:li.off] + fenceTarget + t[n:])
			case CodeIndented:
				fenceIndented = true
				indentPrefix = ln[:li.off]
				if len(out) > 0 && !isBlank(out[len(out)-1]) {
					out = append(out, "")
				}
			default:
				fenceTarget = ""
				emit(ln)
			}
		case lkFenceBody:
			if fenceIndented {
				if isBlank(ln) {
					out = append(out, "")
				} else {
					out = append(out, indentPrefix+"    "+strings.TrimPrefix(ln, indentPrefix))
				}
			} else {
				out = append(out, ln)
			}
		case lkFenceClose:
			switch {
			case fenceIndented:
				fenceIndented = false
				needBlank = true
			case fenceTarget != "":
				_, off := indentOf(ln)
				out = append(out, ln[:off]+fenceTarget)
			default:
				out = append(out, ln)
			}
			fenceTarget = ""
		case lkIndented:
			if s.Code != CodeBacktick && s.Code != CodeTilde {
				emit(ln)
				continue
			}
			if !inIndentGroup {
				cols, _ := indentOf(ln)
				indentPrefix = strings.Repeat(" ", max(0, cols-4))
				if len(out) > 0 && !isBlank(out[len(out)-1]) {
					out = append(out, "")
				}
				indentFence = fenceString(s.Code, max(3, longestFenceRun(lines, d.lines, i, fenceByte(s.Code))+1))
				out = append(out, indentPrefix+indentFence)
				inIndentGroup = true
			}
			out = append(out, strings.TrimPrefix(expandTabs(ln), indentPrefix+"    "))
		case lkATX:
			level, text, closed, _ := atxHeading(ln[li.off:])
			text = restyleHeadingText(&p, text, s)
			style := s.Heading
			if style == "" {
				style = HeadingATX
				if closed {
					style = HeadingATXClosed
				}
			}
			emitHeading(emit, level, text, style, '=')
			sentenceStart = true
		case lkSetextText:
			var parts []string
			j := i
			for ; j < len(lines) && j < len(d.lines) && d.lines[j].kind == lkSetextText; j++ {
				parts = append(parts, strings.TrimSpace(lines[j]))
			}
			under := byte('=')
			if j < len(lines) {
				if t := strings.TrimSpace(lines[j]); t != "" {
					under = t[0]
				}
			}
			text := restyleHeadingText(&p, strings.Join(parts, " "), s)
			style := s.Heading
			if style == "" {
				style = HeadingSetext
			}
			emitHeading(emit, li.level, text, style, under)
			i = j // skip the underline
			sentenceStart = true
		case lkList:
			marker := ln[li.off]
			if s.Bullet != 0 && (marker == '-' || marker == '*' || marker == '+') {
				marker = byte(s.Bullet)
			}
			end := min(len(ln), li.off+li.width)
			if li.off+1 > end {
				end = li.off + 1
			}
			body := ln[end:]
			emit(ln[:li.off] + string(marker) + ln[li.off+1:end] + restyleInline(&p, body, s, true, true))
			sentenceStart = endsSentence(body)
		case lkProse, lkTable:
			emit(ln[:li.off] + restyleInline(&p, ln[li.off:], s, sentenceStart, true))
			sentenceStart = endsSentence(ln)
		case lkQuote:
			emit(ln[:li.off] + restyleInline(&p, ln[li.off:], s, sentenceStart, false))
		default:
			emit(ln)
		}
	}
	closeIndentGroup()
	res := strings.Join(out, "\n")
	if strings.HasSuffix(md, "\n") && !strings.HasSuffix(res, "\n") {
		res += "\n"
	}
	return res
}

func splitLines(md string) []string {
	md = strings.TrimSuffix(md, "\n")
	if md == "" {
		return nil
	}
	ls := strings.Split(md, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimRight(l, "\r")
	}
	return ls
}

func expandTabs(ln string) string {
	if !strings.Contains(ln, "\t") {
		return ln
	}
	cols, off := indentOf(ln)
	return strings.Repeat(" ", cols) + ln[off:]
}

func fenceByte(c CodeStyle) byte {
	if c == CodeTilde {
		return '~'
	}
	return '`'
}

func fenceString(c CodeStyle, n int) string {
	return strings.Repeat(string(fenceByte(c)), n)
}

// longestFenceRun returns the longest run of ch starting a code line from
// line i to the end of that code block.
func longestFenceRun(lines []string, info []lineInfo, i int, ch byte) int {
	best := 0
	for ; i < len(lines) && i < len(info); i++ {
		k := info[i].kind
		if k != lkFenceBody && k != lkIndented && k != lkBlank {
			break
		}
		_, off := indentOf(lines[i])
		best = max(best, runLen(lines[i], off, ch))
	}
	return best
}

func emitHeading(emit func(string), level int, text string, style HeadingStyle, under byte) {
	hashes := strings.Repeat("#", level)
	switch {
	case style == HeadingSetext && level <= 2:
		if under != '=' && under != '-' || level == 1 {
			under = '='
		}
		if level == 2 {
			under = '-'
		}
		emit(text)
		emit(strings.Repeat(string(under), max(3, utf8.RuneCountInString(text))))
	case style == HeadingATXClosed:
		emit(hashes + " " + text + " " + hashes)
	default:
		emit(hashes + " " + text)
	}
}

func restyleHeadingText(p *stripper, text string, s Style) string {
	switch s.Case {
	case CaseTitle:
		text = ToTitleCase(text)
	case CaseSentence:
		text = ToSentenceCase(text)
	}
	return restyleInline(p, text, s, true, true)
}

// endsSentence reports whether a prose line ends a sentence (so the next
// line starts one).
func endsSentence(ln string) bool {
	t := strings.TrimRight(ln, " \t*_)\"'")
	return t == "" || strings.HasSuffix(t, ".") || strings.HasSuffix(t, "!") || strings.HasSuffix(t, "?") || strings.HasSuffix(t, ":")
}

type edit struct {
	at, n int
	repl  string
}

// restyleInline rewrites one line of inline Markdown: emphasis and strong
// delimiters, and (when words is true) spelling and person.
func restyleInline(p *stripper, s string, st Style, sentenceStart, words bool) string {
	if s == "" {
		return s
	}
	m := mask(s)
	out := []byte(s)
	if st.Emphasis != "" || st.Strong != "" {
		p.buf = append(p.buf[:0], m...)
		p.record, p.matches = true, p.matches[:0]
		p.emphasis(nil)
		p.record = false
		for _, e := range p.matches {
			var target byte
			if e.n == 1 && st.Emphasis != "" {
				target = st.Emphasis[0]
			} else if e.n == 2 && st.Strong != "" {
				target = st.Strong[0]
			}
			if target == 0 || target == e.ch {
				continue
			}
			for k := 0; k < e.n; k++ {
				out[e.open+k] = target
				out[e.close+k] = target
			}
		}
	}
	if !words || (st.Spelling == "" && st.Person == "") {
		return string(out)
	}
	ms := blankQuoted(string(m))
	var edits []edit
	type wordAt struct {
		w     string
		start int
	}
	var prevWord wordAt
	eachWord(ms, func(w string, start int, prev, next byte) {
		pw := prevWord
		prevWord = wordAt{w, start}
		if identifierLike(prev, next, ms[start+len(w):]) {
			return
		}
		if st.Spelling != "" {
			if e, ok := spellIndex[lowerASCII(w)]; ok && e.variant != st.Spelling {
				repl := e.other
				if w[0] >= 'A' && w[0] <= 'Z' {
					repl = upperFirst(repl)
				}
				edits = append(edits, edit{start, len(w), repl})
				return
			}
		}
		if st.Person == "" {
			return
		}
		if next == '-' {
			return // my-crate
		}
		if p, ok := personOf(w); ok && p != st.Person {
			atStart := (start == 0 && sentenceStart) || sentenceBefore(ms[:start])
			edits = append(edits, edit{start, len(w), swapPerson(w, st.Person, atStart)})
			return
		}
		// Verb agreement right after a swapped pronoun.
		if pw.w != "" && pw.start+len(pw.w)+1 == start && ms[start-1] == ' ' {
			if p, ok := personOf(pw.w); ok && p != st.Person && (pw.w == "we" || pw.w == "We" || pw.w == "I") {
				if r, ok := verbAgreement[st.Person][w]; ok {
					edits = append(edits, edit{start, len(w), r})
				}
			}
		}
	})
	if len(edits) == 0 {
		return string(out)
	}
	sort.Slice(edits, func(a, b int) bool { return edits[a].at < edits[b].at })
	var sb strings.Builder
	last := 0
	for _, e := range edits {
		sb.Write(out[last:e.at])
		sb.WriteString(e.repl)
		last = e.at + e.n
	}
	sb.Write(out[last:])
	return sb.String()
}

var verbAgreement = map[Person]map[string]string{
	PersonSingular: {"are": "am", "were": "was"},
	PersonPlural:   {"am": "are", "was": "were"},
}

var toSingular = map[string]string{
	"we": "I", "us": "me", "our": "my", "ours": "mine", "ourselves": "myself",
	"we're": "I'm", "we've": "I've", "we'll": "I'll", "we'd": "I'd",
	"we’re": "I’m", "we’ve": "I’ve", "we’ll": "I’ll", "we’d": "I’d",
}

var toPlural = map[string]string{
	"i": "we", "me": "us", "my": "our", "mine": "ours", "myself": "ourselves",
	"i'm": "we're", "i've": "we've", "i'll": "we'll", "i'd": "we'd",
	"i’m": "we’re", "i’ve": "we’ve", "i’ll": "we’ll", "i’d": "we’d",
}

// swapPerson returns the pronoun w in person to; atStart says whether it
// begins a sentence.
func swapPerson(w string, to Person, atStart bool) string {
	l := strings.ToLower(w)
	var r string
	if to == PersonSingular {
		r = toSingular[l]
	} else {
		r = toPlural[l]
	}
	if r == "" {
		return w
	}
	capital := w[0] >= 'A' && w[0] <= 'Z'
	if w[0] == 'I' && (len(w) == 1 || w[1] == '\'' || w[1] == 0xe2) {
		capital = atStart // "I" is always capitalized; only a sentence start carries over
	}
	if capital {
		r = upperFirst(r)
	}
	return r
}

// sentenceBefore reports whether the text before a word ends a sentence
// (or is empty of words), so the word starts one.
func sentenceBefore(s string) bool {
	t := strings.TrimRight(s, " \t\"'(*_“‘")
	if t == "" {
		return false
	}
	c := t[len(t)-1]
	return c == '.' || c == '!' || c == '?'
}
