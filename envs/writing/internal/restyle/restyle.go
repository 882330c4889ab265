package restyle

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/envs/writing/internal/markdown"
)

// Style is one set of writing habits: a variant for every habit a writer
// has. An empty field leaves that aspect of the text as it is.
type Style struct {
	Heading  markdown.HeadingStyle   // HeadingATX, HeadingATXClosed or HeadingSetext
	Case     markdown.HeadingCase    // CaseSentence or CaseTitle
	Bullet   markdown.BulletMarker   // BulletDash, BulletStar or BulletPlus
	Emphasis markdown.EmphasisMarker // EmphasisStar or EmphasisUnderscore
	Strong   markdown.EmphasisMarker // StrongStar or StrongUnderscore
	Code     markdown.CodeStyle      // CodeBacktick, CodeTilde or CodeIndented
	Spelling markdown.Spelling       // SpellingUS or SpellingUK
	Person   markdown.Person         // PersonPlural or PersonSingular
}

// Markdown rewrites the Markdown text md in style s: headings (syntax and
// capitalization), bullet markers, emphasis and strong delimiters, code
// blocks (fence character, fenced or indented), US/UK spelling of the
// words of the spelling pairs (markdown.LookupSpelling) and the authors'
// person (we ↔ I, us ↔ me, our ↔ my, ours ↔ mine, ourselves ↔ myself,
// with "we are"/"I am" and "we were"/"I was"). Code is never changed;
// block quotes and double-quoted text keep their words. Text rendered in
// one Style is written in one variant of every habit the Style sets, up
// to the rare constructs the parser reads differently from CommonMark
// (emphasis spanning lines, say).
func Markdown(md string, s Style) string {
	d := markdown.Parse(md, markdown.NoSections)
	lines := splitLines(md)
	var out []string
	var p markdown.Stripper
	sentenceStart := true
	pendingBlank := 0 // blank lines held back inside an indented code block
	inIndentGroup := false
	indentPrefix := ""
	indentFence := ""
	needBlank := false // a converted code block must be followed by a blank line
	fenceIndented := false
	fenceTarget := ""
	emit := func(l string) {
		if needBlank && !markdown.IsBlank(l) {
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
		li := markdown.Line{}
		if i < len(d.Lines) {
			li = d.Lines[i]
		}
		if inIndentGroup || pendingBlank > 0 {
			if li.Kind == markdown.LineBlank {
				pendingBlank++
				continue
			}
			if li.Kind == markdown.LineIndented && inIndentGroup {
				for ; pendingBlank > 0; pendingBlank-- {
					out = append(out, "")
				}
			} else {
				closeIndentGroup()
			}
		}
		switch li.Kind {
		case markdown.LineBlank:
			emit(ln)
			sentenceStart = true
		case markdown.LineFenceOpen:
			t := ln[li.Off:]
			ch := t[0]
			n := markdown.RunLen(t, 0, ch)
			switch s.Code {
			case markdown.CodeBacktick, markdown.CodeTilde:
				target := byte('`')
				if s.Code == markdown.CodeTilde {
					target = '~'
				}
				m := max(n, longestFenceRun(lines, d.Lines, i+1, target)+1)
				fenceTarget = strings.Repeat(string(target), m)
				emit(ln[:li.Off] + fenceTarget + t[n:])
			case markdown.CodeIndented:
				fenceIndented = true
				indentPrefix = ln[:li.Off]
				if len(out) > 0 && !markdown.IsBlank(out[len(out)-1]) {
					out = append(out, "")
				}
			default:
				fenceTarget = ""
				emit(ln)
			}
		case markdown.LineFenceBody:
			if fenceIndented {
				if markdown.IsBlank(ln) {
					out = append(out, "")
				} else {
					out = append(out, indentPrefix+"    "+strings.TrimPrefix(ln, indentPrefix))
				}
			} else {
				out = append(out, ln)
			}
		case markdown.LineFenceClose:
			switch {
			case fenceIndented:
				fenceIndented = false
				needBlank = true
			case fenceTarget != "":
				_, off := markdown.IndentOf(ln)
				out = append(out, ln[:off]+fenceTarget)
			default:
				out = append(out, ln)
			}
			fenceTarget = ""
		case markdown.LineIndented:
			if s.Code != markdown.CodeBacktick && s.Code != markdown.CodeTilde {
				emit(ln)
				continue
			}
			if !inIndentGroup {
				cols, _ := markdown.IndentOf(ln)
				indentPrefix = strings.Repeat(" ", max(0, cols-4))
				if len(out) > 0 && !markdown.IsBlank(out[len(out)-1]) {
					out = append(out, "")
				}
				indentFence = fenceString(s.Code, max(3, longestFenceRun(lines, d.Lines, i, fenceByte(s.Code))+1))
				out = append(out, indentPrefix+indentFence)
				inIndentGroup = true
			}
			out = append(out, strings.TrimPrefix(expandTabs(ln), indentPrefix+"    "))
		case markdown.LineATX:
			level, text, closed, _ := markdown.ATXHeading(ln[li.Off:])
			text = restyleHeadingText(&p, text, s)
			style := s.Heading
			if style == "" {
				style = markdown.HeadingATX
				if closed {
					style = markdown.HeadingATXClosed
				}
			}
			emitHeading(emit, level, text, style, '=')
			sentenceStart = true
		case markdown.LineSetextText:
			var parts []string
			j := i
			for ; j < len(lines) && j < len(d.Lines) && d.Lines[j].Kind == markdown.LineSetextText; j++ {
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
				style = markdown.HeadingSetext
			}
			emitHeading(emit, li.Level, text, style, under)
			i = j // skip the underline
			sentenceStart = true
		case markdown.LineList:
			marker := ln[li.Off]
			if s.Bullet != 0 && (marker == '-' || marker == '*' || marker == '+') {
				marker = byte(s.Bullet)
			}
			end := min(len(ln), li.Off+li.Width)
			if li.Off+1 > end {
				end = li.Off + 1
			}
			body := ln[end:]
			emit(ln[:li.Off] + string(marker) + ln[li.Off+1:end] + restyleInline(&p, body, s, true, true))
			sentenceStart = endsSentence(body)
		case markdown.LineProse, markdown.LineTable:
			emit(ln[:li.Off] + restyleInline(&p, ln[li.Off:], s, sentenceStart, true))
			sentenceStart = endsSentence(ln)
		case markdown.LineQuote:
			emit(ln[:li.Off] + restyleInline(&p, ln[li.Off:], s, sentenceStart, false))
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
	cols, off := markdown.IndentOf(ln)
	return strings.Repeat(" ", cols) + ln[off:]
}

func fenceByte(c markdown.CodeStyle) byte {
	if c == markdown.CodeTilde {
		return '~'
	}
	return '`'
}

func fenceString(c markdown.CodeStyle, n int) string {
	return strings.Repeat(string(fenceByte(c)), n)
}

// longestFenceRun returns the longest run of ch starting a code line from
// line i to the end of that code block.
func longestFenceRun(lines []string, info []markdown.Line, i int, ch byte) int {
	best := 0
	for ; i < len(lines) && i < len(info); i++ {
		k := info[i].Kind
		if k != markdown.LineFenceBody && k != markdown.LineIndented && k != markdown.LineBlank {
			break
		}
		_, off := markdown.IndentOf(lines[i])
		best = max(best, markdown.RunLen(lines[i], off, ch))
	}
	return best
}

func emitHeading(emit func(string), level int, text string, style markdown.HeadingStyle, under byte) {
	hashes := strings.Repeat("#", level)
	switch {
	case style == markdown.HeadingSetext && level <= 2:
		if under != '=' && under != '-' || level == 1 {
			under = '='
		}
		if level == 2 {
			under = '-'
		}
		emit(text)
		emit(strings.Repeat(string(under), max(3, utf8.RuneCountInString(text))))
	case style == markdown.HeadingATXClosed:
		emit(hashes + " " + text + " " + hashes)
	default:
		emit(hashes + " " + text)
	}
}

func restyleHeadingText(p *markdown.Stripper, text string, s Style) string {
	switch s.Case {
	case markdown.CaseTitle:
		text = ToTitleCase(text)
	case markdown.CaseSentence:
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
func restyleInline(p *markdown.Stripper, s string, st Style, sentenceStart, words bool) string {
	if s == "" {
		return s
	}
	if st.Emphasis == "" && st.Strong == "" && (!words || (st.Spelling == "" && st.Person == "")) {
		return s // nothing inline to restyle
	}
	m := markdown.Mask(s)
	out := []byte(s)
	if st.Emphasis != "" || st.Strong != "" {
		for _, e := range p.EmphasisSpans(m) {
			var target byte
			if e.N == 1 && st.Emphasis != "" {
				target = st.Emphasis[0]
			} else if e.N == 2 && st.Strong != "" {
				target = st.Strong[0]
			}
			if target == 0 || target == e.Ch {
				continue
			}
			for k := 0; k < e.N; k++ {
				out[e.Open+k] = target
				out[e.Close+k] = target
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
	markdown.EachWord(ms, func(w string, start int, prev, next byte) {
		pw := prevWord
		prevWord = wordAt{w, start}
		if markdown.IdentifierLike(prev, next, ms[start+len(w):]) {
			return
		}
		if st.Spelling != "" {
			if v, other, ok := markdown.LookupSpelling(markdown.LowerASCII(w)); ok && v != st.Spelling {
				repl := other
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
		if p, ok := markdown.PersonOf(w); ok && p != st.Person {
			atStart := (start == 0 && sentenceStart) || sentenceBefore(ms[:start])
			edits = append(edits, edit{start, len(w), swapPerson(w, st.Person, atStart)})
			return
		}
		// Verb agreement right after a swapped pronoun.
		if pw.w != "" && pw.start+len(pw.w)+1 == start && ms[start-1] == ' ' {
			if p, ok := markdown.PersonOf(pw.w); ok && p != st.Person && (pw.w == "we" || pw.w == "We" || pw.w == "I") {
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

var verbAgreement = map[markdown.Person]map[string]string{
	markdown.PersonSingular: {"are": "am", "were": "was"},
	markdown.PersonPlural:   {"am": "are", "was": "were"},
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
func swapPerson(w string, to markdown.Person, atStart bool) string {
	l := strings.ToLower(w)
	var r string
	if to == markdown.PersonSingular {
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

// Respell rewrites every word of the US/UK spelling pairs in text to the
// given variant, keeping the capitalization of the first letter. Words
// glued to identifiers (color_space, self.color) stay; code spans and
// blocks do not, so pass prose only (Markdown knows Markdown).
func Respell(text string, to markdown.Spelling) string {
	var sb strings.Builder
	last := 0
	markdown.EachWord(text, func(w string, start int, prev, next byte) {
		v, repl, ok := markdown.LookupSpelling(strings.ToLower(w))
		if !ok || v == to || markdown.IdentifierLike(prev, next, text[start+len(w):]) {
			return
		}
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
			repl = strings.ToUpper(repl[:1]) + repl[1:]
		}
		sb.WriteString(text[last:start])
		sb.WriteString(repl)
		last = start + len(w)
	})
	if last == 0 {
		return text
	}
	sb.WriteString(text[last:])
	return sb.String()
}

// ToTitleCase capitalizes the first letter of every word of a heading's
// text except minor words after the first; code spans, link destinations,
// acronyms and identifiers are left alone. Every word that is evidence of
// a case (markdown.CaseEvidence) then reads as Title Case.
func ToTitleCase(text string) string {
	return recase(text, true)
}

// ToSentenceCase lower-cases the first letter of every word after the
// first, except proper nouns, acronyms, identifiers and words after a
// colon.
func ToSentenceCase(text string) string {
	return recase(text, false)
}

func recase(text string, title bool) string {
	b := []byte(text)
	first, afterColon := true, false
	inCode := 0
	i := 0
	for i < len(b) {
		c := b[i]
		if c == '`' {
			n := markdown.RunLen(text, i, '`')
			if inCode == 0 {
				if markdown.FindBacktickRun(text, i+n, n) >= 0 {
					inCode = n
				}
			} else if n == inCode {
				inCode = 0
			}
			i += n
			first = false
			continue
		}
		if inCode > 0 {
			i++
			continue
		}
		if c == ']' && i+1 < len(b) && b[i+1] == '(' {
			if j := markdown.MatchParen(text, i+1); j > 0 {
				i = j + 1
				continue
			}
		}
		r, sz := utf8.DecodeRune(b[i:])
		if !unicode.IsLetter(r) {
			if c == ':' {
				afterColon = true
			}
			i += sz
			continue
		}
		start := i
		for i < len(b) {
			r2, sz2 := utf8.DecodeRune(b[i:])
			if !(unicode.IsLetter(r2) || unicode.IsDigit(r2) || r2 == '\'' || r2 == '’' || r2 == '_') {
				break
			}
			i += sz2
		}
		w := text[start:i]
		var prev byte
		if start > 0 {
			prev = b[start-1]
		}
		lead, isFirst := first || afterColon, first
		first, afterColon = false, false
		if prev == '-' || prev == '_' || prev == '.' || prev == '/' || prev == ':' {
			continue // second half of a hyphenated word, or a path
		}
		low, up := markdown.CaseEvidence(w)
		switch {
		case isFirst && unicode.IsLower(r):
			copy(b[start:], upperFirst(w))
		case lead:
		case title && low:
			copy(b[start:], upperFirst(w))
		case !title && up:
			copy(b[start:], lowerFirst(w))
		}
	}
	return string(b)
}

func upperFirst(w string) string {
	r, sz := utf8.DecodeRuneInString(w)
	u := unicode.ToUpper(r)
	if utf8.RuneLen(u) != sz {
		return w
	}
	return string(u) + w[sz:]
}

func lowerFirst(w string) string {
	r, sz := utf8.DecodeRuneInString(w)
	l := unicode.ToLower(r)
	if utf8.RuneLen(l) != sz {
		return w
	}
	return string(l) + w[sz:]
}

// blankQuoted replaces text inside double quotes ("…" or “…”) with spaces;
// an unclosed quote is left alone.
func blankQuoted(s string) string {
	rs := markdown.QuotedRanges(s, nil)
	if len(rs) == 0 {
		return s
	}
	b := []byte(s)
	for k := 0; k < len(rs); k += 2 {
		for j := rs[k]; j < rs[k+1]; j++ {
			b[j] = ' '
		}
	}
	return string(b)
}
