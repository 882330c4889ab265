package writing

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/rewards/consistency"
)

// Style is one set of writing habits: the choices the consistency check
// wants made once per document. Writers have their own habits; the house
// style is the one the team is asked to follow.
type Style struct {
	// Setext writes H1 and H2 headings underlined (=== / ---) instead of
	// ATX ("## Heading"); deeper headings are ATX either way.
	Setext bool
	// Case is the heading capitalization.
	Case consistency.HeadingCase
	// Bullet is the unordered-list marker.
	Bullet consistency.BulletMarker
	// Emphasis is "*" or "_"; Strong is "**" or "__".
	Emphasis, Strong consistency.EmphasisMarker
	// Fence is the code fence style (backtick or tilde).
	Fence consistency.CodeStyle
	// Spelling is the US or UK variant.
	Spelling consistency.Spelling
	// Person is the authorial person, "we" or "I".
	Person consistency.Person
}

// NumHabits is the number of independent habit dimensions of a Style.
const NumHabits = 8

// habit names, in the order habitIndex uses.
var habitNames = [NumHabits]string{"heading_style", "heading_case", "bullet", "emphasis", "strong", "fence", "spelling", "person"}

// drawStyle draws each habit uniformly from its options.
func drawStyle(rng *rand.Rand) Style {
	bullets := []consistency.BulletMarker{consistency.BulletDash, consistency.BulletStar, consistency.BulletPlus}
	s := Style{
		Setext:   rng.IntN(2) == 1,
		Case:     pick(rng, consistency.CaseSentence, consistency.CaseTitle),
		Bullet:   bullets[rng.IntN(3)],
		Emphasis: pick(rng, consistency.EmphasisStar, consistency.EmphasisUnderscore),
		Strong:   pick(rng, consistency.StrongStar, consistency.StrongUnderscore),
		Fence:    pick(rng, consistency.CodeBacktick, consistency.CodeTilde),
		Spelling: pick(rng, consistency.SpellingUS, consistency.SpellingUK),
		Person:   pick(rng, consistency.PersonPlural, consistency.PersonSingular),
	}
	return s
}

func pick[T any](rng *rand.Rand, a, b T) T {
	if rng.IntN(2) == 0 {
		return a
	}
	return b
}

// mix returns a style that takes each habit from house with probability
// follow and from own otherwise (a writer who read the house style but
// slips back into its own habits now and then). The draws happen in a
// fixed order, so the same rng state gives the same style.
func mix(house, own Style, follow float64, rng *rand.Rand) Style {
	s := house
	if rng.Float64() >= follow {
		s.Setext = own.Setext
	}
	if rng.Float64() >= follow {
		s.Case = own.Case
	}
	if rng.Float64() >= follow {
		s.Bullet = own.Bullet
	}
	if rng.Float64() >= follow {
		s.Emphasis = own.Emphasis
	}
	if rng.Float64() >= follow {
		s.Strong = own.Strong
	}
	if rng.Float64() >= follow {
		s.Fence = own.Fence
	}
	if rng.Float64() >= follow {
		s.Spelling = own.Spelling
	}
	if rng.Float64() >= follow {
		s.Person = own.Person
	}
	return s
}

// Guide returns the house style guide as an agent reads it: the habits
// and the outline conventions.
func (s Style) Guide() string {
	var b strings.Builder
	b.WriteString("House style (follow it exactly in every unit you write or edit):\n")
	if s.Setext {
		b.WriteString("- Headings: setext for the title and sections (title underlined with ===, sections with ---); ATX (### Heading) for subsections.\n")
	} else {
		b.WriteString("- Headings: ATX only (# Title, ## Section, ### Subsection), no closing hashes.\n")
	}
	if s.Case == consistency.CaseTitle {
		b.WriteString("- Heading capitalization: Title Case (\"Rationale and Alternatives\").\n")
	} else {
		b.WriteString("- Heading capitalization: sentence case (\"Rationale and alternatives\").\n")
	}
	fmt.Fprintf(&b, "- Bulleted lists use %q as the marker.\n", s.Bullet.String())
	fmt.Fprintf(&b, "- Emphasis is written %sword%s; strong emphasis %sword%s.\n", s.Emphasis, s.Emphasis, s.Strong, s.Strong)
	if s.Fence == consistency.CodeTilde {
		b.WriteString("- Code blocks are fenced with ~~~ (never ``` or indentation).\n")
	} else {
		b.WriteString("- Code blocks are fenced with ``` (never ~~~ or indentation).\n")
	}
	if s.Spelling == consistency.SpellingUK {
		b.WriteString("- Spelling: British (behaviour, initialise, optimisation, centre).\n")
	} else {
		b.WriteString("- Spelling: American (behavior, initialize, optimization, center).\n")
	}
	if s.Person == consistency.PersonSingular {
		b.WriteString("- The author writes in the first person singular (I, me, my), never \"we\".\n")
	} else {
		b.WriteString("- The authors write in the first person plural (we, us, our), never \"I\".\n")
	}
	b.WriteString("Outline conventions: exactly one H1, the document title, written only by the author of the Summary unit; ")
	b.WriteString("the template sections are H2 headings with their exact names, in template order (")
	b.WriteString(strings.Join(TemplateSections, ", "))
	b.WriteString("); subsections are H3 under their section; never skip a heading level; never leave a section empty.\n")
	return b.String()
}

// habitValues returns the style's habits as small integers, one per
// dimension, in habitNames order.
func (s Style) habitValues() [NumHabits]int {
	var v [NumHabits]int
	if s.Setext {
		v[0] = 1
	}
	if s.Case == consistency.CaseTitle {
		v[1] = 1
	}
	switch s.Bullet {
	case consistency.BulletStar:
		v[2] = 1
	case consistency.BulletPlus:
		v[2] = 2
	}
	if s.Emphasis == consistency.EmphasisUnderscore {
		v[3] = 1
	}
	if s.Strong == consistency.StrongUnderscore {
		v[4] = 1
	}
	if s.Fence == consistency.CodeTilde {
		v[5] = 1
	}
	if s.Spelling == consistency.SpellingUK {
		v[6] = 1
	}
	if s.Person == consistency.PersonSingular {
		v[7] = 1
	}
	return v
}

// slipKind is a structure slip a writer makes when it has not read the
// outline conventions.
type slipKind uint8

const (
	slipNone    slipKind = iota
	slipRename           // a template section under another name
	slipLevel            // the unit's main heading one level too deep
	numSlipKinds
)

// sectionSynonyms are plausible wrong names for the template sections
// (several come from the older RFC template).
var sectionSynonyms = [][]string{
	{"Abstract", "Overview"},
	{"Background", "Rationale"},
	{"Tutorial", "Explanation"},
	{"Detailed design", "Design"},
	{"Downsides", "Costs"},
	{"Alternatives", "Alternatives considered"},
	{"Related work", "Precedents"},
	{"Open questions", "Questions"},
	{"Future work", "Extensions"},
}

// render writes a unit's canonical source in the given habits. A structure
// slip changes the unit's first outline heading below the title: slipRename
// gives a template section another name (a subsection-led unit gets a
// level slip instead), slipLevel pushes it one level deeper. alt picks
// among synonyms.
func render(src string, st Style, slip slipKind, alt int) string {
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	var out []string
	r := newRewriter(st)
	inFence := false
	var fch, newCh byte
	var fn, newN int
	slipDone := slip == slipNone
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		t := strings.TrimLeft(ln, " ")
		ind := ln[:len(ln)-len(t)]
		if inFence {
			if closesFence(t, fch, fn) {
				out = append(out, ind+strings.Repeat(string(newCh), newN))
				inFence = false
				continue
			}
			out = append(out, ln)
			continue
		}
		if ch, n, ok := opensFence(t); ok {
			inFence, fch, fn = true, ch, n
			newCh = '`'
			if st.Fence == consistency.CodeTilde {
				newCh = '~'
			}
			// The new fence must be longer than any run of its character
			// that starts a line inside the block.
			newN = max(3, n)
			for j := i + 1; j < len(lines); j++ {
				tj := strings.TrimLeft(lines[j], " ")
				if closesFence(tj, fch, fn) {
					break
				}
				k := 0
				for k < len(tj) && tj[k] == newCh {
					k++
				}
				if k >= newN {
					newN = k + 1
				}
			}
			info := strings.TrimSpace(t[n:])
			if newCh == '`' {
				info = strings.ReplaceAll(info, "`", "")
			}
			out = append(out, ind+strings.Repeat(string(newCh), newN)+info)
			continue
		}
		if lv, text, ok := atx(ln); ok {
			if !slipDone && lv >= 2 {
				slipDone = true
				switch {
				case slip == slipRename && lv == 2 && sectionIndex(text) >= 0:
					syn := sectionSynonyms[sectionIndex(text)]
					text = syn[alt%len(syn)]
				default:
					lv++
				}
			}
			text = r.inline(text)
			if st.Case == consistency.CaseTitle {
				text = consistency.ToTitleCase(text)
			} else {
				text = consistency.ToSentenceCase(text)
			}
			if st.Setext && lv <= 2 && text != "" {
				if n := len(out); n > 0 && strings.TrimSpace(out[n-1]) != "" {
					out = append(out, "")
				}
				u := "="
				if lv == 2 {
					u = "-"
				}
				out = append(out, text, strings.Repeat(u, max(3, utf8.RuneCountInString(text))))
				continue
			}
			out = append(out, strings.Repeat("#", lv)+" "+text)
			continue
		}
		if len(ind) < 4 || true {
			if b, ok := bulletOrOrdered(t); ok && b != 0 && !isThematicBreak(t) {
				out = append(out, ind+string(byte(st.Bullet))+r.inline(t[1:]))
				continue
			}
		}
		out = append(out, ind+r.inline(t))
	}
	return strings.Join(out, "\n") + "\n"
}

func isThematicBreak(t string) bool {
	var ch byte
	n := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch c {
		case ' ', '\t':
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

// rewriter rewrites the inline Markdown of one line to a style: emphasis
// delimiters, spelling and authorial person, leaving code spans, links'
// destinations, URLs and HTML alone.
type rewriter struct {
	st    Style
	spell map[string]string // word (lower case) → the other variant, only words to change
}

var spellTo = func() map[consistency.Spelling]map[string]string {
	us, uk := map[string]string{}, map[string]string{}
	for _, p := range consistency.SpellingPairs() {
		uk[p[0]] = p[1] // US word → UK
		us[p[1]] = p[0]
	}
	return map[consistency.Spelling]map[string]string{consistency.SpellingUS: us, consistency.SpellingUK: uk}
}()

func newRewriter(st Style) *rewriter { return &rewriter{st: st, spell: spellTo[st.Spelling]} }

// inline rewrites one line of inline Markdown.
func (r *rewriter) inline(s string) string {
	if s == "" {
		return s
	}
	b := []byte(s)
	// Emphasis: delimiters keep their length, so positions stay valid.
	for _, d := range findEmphasis(s) {
		c := r.st.Emphasis[0]
		if d.strong {
			c = r.st.Strong[0]
		}
		for k := 0; k < d.n; k++ {
			b[d.open+k] = c
			b[d.close+k] = c
		}
	}
	s = string(b)
	// Words: spelling and person, in prose segments only.
	var out strings.Builder
	for _, seg := range segments(s) {
		if seg.code {
			out.WriteString(seg.text)
			continue
		}
		out.WriteString(r.words(seg.text))
	}
	return out.String()
}

// personMap maps a pronoun (lower case, "i" for I) to its counterpart in
// the other person.
var toSingular = map[string]string{
	"we": "I", "us": "me", "our": "my", "ours": "mine", "ourselves": "myself",
	"we're": "I'm", "we've": "I've", "we'll": "I'll", "we'd": "I'd",
}
var toPlural = map[string]string{
	"i": "we", "me": "us", "my": "our", "mine": "ours", "myself": "ourselves",
	"i'm": "we're", "i've": "we've", "i'll": "we'll", "i'd": "we'd",
}

// words rewrites the words of a prose segment.
func (r *rewriter) words(s string) string {
	type word struct {
		start, end int
	}
	var ws []word
	i := 0
	for i < len(s) {
		c, sz := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(c) {
			i += sz
			continue
		}
		start := i
		i += sz
		for i < len(s) {
			c, sz = utf8.DecodeRuneInString(s[i:])
			if unicode.IsLetter(c) {
				i += sz
				continue
			}
			if c == '\'' || c == '’' {
				if c2, _ := utf8.DecodeRuneInString(s[i+sz:]); unicode.IsLetter(c2) {
					i += sz
					continue
				}
			}
			break
		}
		ws = append(ws, word{start, i})
	}
	if len(ws) == 0 {
		return s
	}
	var out strings.Builder
	last := 0
	plural := r.st.Person == consistency.PersonPlural
	changedPronoun := false // the previous word was a pronoun we turned
	for k, w := range ws {
		word := s[w.start:w.end]
		var prev, next byte
		if w.start > 0 {
			prev = s[w.start-1]
		}
		if w.end < len(s) {
			next = s[w.end]
		}
		repl := ""
		wasPronoun := changedPronoun
		changedPronoun = false
		lower := strings.ToLower(strings.ReplaceAll(word, "’", "'"))
		switch {
		case identLike(prev, next, s[w.end:]):
		case r.spell[lower] != "":
			repl = matchCase(word, r.spell[lower])
		case plural && (word == "I" || strings.HasPrefix(word, "I'") || strings.HasPrefix(word, "I’") || (lower != "i" && toPlural[lower] != "" && word != "US")):
			repl = toPlural[lower]
			if sentenceStart(s, w.start) {
				repl = upperFirstASCII(repl)
			} else if word != "I" && !strings.HasPrefix(word, "I'") && !strings.HasPrefix(word, "I’") {
				repl = matchCase(word, repl)
			}
			changedPronoun = lower == "i"
		case !plural && toSingular[lower] != "" && word != "US":
			repl = toSingular[lower]
			if repl[0] != 'I' {
				repl = matchCase(word, repl)
			}
			changedPronoun = lower == "we"
		case wasPronoun && k > 0:
			// Verb agreement right after a turned subject pronoun.
			switch {
			case plural && word == "am":
				repl = "are"
			case plural && word == "was":
				repl = "were"
			case !plural && word == "are":
				repl = "am"
			case !plural && word == "were":
				repl = "was"
			}
		}
		if repl != "" && repl != word {
			out.WriteString(s[last:w.start])
			out.WriteString(repl)
			last = w.end
		}
	}
	if last == 0 {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

// identLike reports whether a word with these neighbours is part of an
// identifier or path rather than prose (mirrors the consistency check).
func identLike(prev, next byte, rest string) bool {
	if prev == '_' || next == '_' || prev == ':' || (next == ':' && len(rest) > 1 && rest[1] == ':') {
		return true
	}
	if prev >= '0' && prev <= '9' || next >= '0' && next <= '9' {
		return true
	}
	if prev == '.' || prev == '/' || prev == '#' || prev == '@' || prev == '$' {
		return true
	}
	if next == '(' || next == '/' {
		return true
	}
	if next == '.' && len(rest) > 1 && isWordByte(rest[1]) {
		return true
	}
	return false
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// sentenceStart reports whether position i of s starts a sentence: only
// blanks or list/quote markers before it, or ". " etc.
func sentenceStart(s string, i int) bool {
	j := i - 1
	for j >= 0 && (s[j] == ' ' || s[j] == '\t' || s[j] == '"' || s[j] == '(' || s[j] == '*' || s[j] == '_') {
		j--
	}
	return j < 0 || s[j] == '.' || s[j] == '!' || s[j] == '?' || s[j] == ':' || s[j] == '>'
}

func matchCase(orig, repl string) string {
	r, _ := utf8.DecodeRuneInString(orig)
	if unicode.IsUpper(r) {
		return upperFirstASCII(repl)
	}
	return repl
}

func upperFirstASCII(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// segment is a piece of a line: prose, or text to leave alone (code
// spans, URLs, HTML tags, link destinations and labels).
type segment struct {
	text string
	code bool
}

// segments splits a line into prose and protected pieces.
func segments(s string) []segment {
	var segs []segment
	start := 0
	emit := func(end int, code bool) {
		if end > start {
			segs = append(segs, segment{s[start:end], code})
		}
		start = end
	}
	for i := 0; i < len(s); {
		if e := protectedEnd(s, i); e > i {
			emit(i, false)
			emit(e, true)
			i = e
			continue
		}
		i++
	}
	emit(len(s), false)
	return segs
}

// protectedEnd returns the end of a protected span starting at s[i], or i.
func protectedEnd(s string, i int) int {
	c := s[i]
	switch {
	case c == '\\' && i+1 < len(s):
		return i + 2
	case c == '`':
		n := runLen(s, i, '`')
		if end := findRun(s, i+n, n, '`'); end >= 0 {
			return end + n
		}
		return i + n
	case c == '<':
		for j := i + 1; j < len(s); j++ {
			if s[j] == '>' {
				if j > i+1 && (s[i+1] == '/' || s[i+1] == '!' || isWordByte(s[i+1])) {
					return j + 1
				}
				return i
			}
			if s[j] == '<' || s[j] == ' ' && !(isWordByte(s[i+1]) || s[i+1] == '/') {
				return i
			}
		}
	case c == 'h' && (strings.HasPrefix(s[i:], "http://") || strings.HasPrefix(s[i:], "https://")) && (i == 0 || !isWordByte(s[i-1])):
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != ')' && s[j] != '>' {
			j++
		}
		return j
	case c == ']' && i+1 < len(s) && s[i+1] == '(':
		if j := matchParen(s, i+1); j > 0 {
			return j + 1
		}
	case c == ']' && i+1 < len(s) && s[i+1] == '[':
		if j := strings.IndexByte(s[i+2:], ']'); j >= 0 {
			return i + 2 + j + 1
		}
	case c == ']' && i+1 < len(s) && s[i+1] == ':':
		return len(s) // a link reference definition's destination
	}
	return i
}

func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// findRun returns the start of the next run of exactly n c's at or after i.
func findRun(s string, i, n int, c byte) int {
	for i < len(s) {
		if s[i] != c {
			i++
			continue
		}
		m := runLen(s, i, c)
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

func matchParen(s string, i int) int {
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
		}
	}
	return -1
}

// delim is one matched emphasis span: n delimiter bytes at open and at
// close (positions in the original line).
type delim struct {
	open, close, n int
	ch             byte
	strong         bool
}

// findEmphasis finds emphasis and strong spans in a line with CommonMark's
// flanking rules (simplified as in the consistency check: protected spans
// count as a blank, link brackets are dropped).
func findEmphasis(s string) []delim {
	if strings.IndexByte(s, '*') < 0 && strings.IndexByte(s, '_') < 0 {
		return nil
	}
	// Build the plain view with a map back to s.
	var plain []byte
	var orig []int
	for i := 0; i < len(s); {
		if s[i] == '[' || (s[i] == ']' && protectedEnd(s, i) == i) {
			i++
			continue
		}
		if e := protectedEnd(s, i); e > i {
			if s[i] == '\\' && e == i+2 && s[i+1] != '*' && s[i+1] != '_' {
				plain = append(plain, s[i+1])
			} else {
				plain = append(plain, ' ')
			}
			orig = append(orig, -1)
			i = e
			continue
		}
		plain = append(plain, s[i])
		orig = append(orig, i)
		i++
	}
	type run struct {
		pos, n int
		ch     byte
		active bool
	}
	var runs []run
	var out []delim
	for i := 0; i < len(plain); {
		c := plain[i]
		if c != '*' && c != '_' {
			i++
			continue
		}
		n := 1
		for i+n < len(plain) && plain[i+n] == c {
			n++
		}
		prev, next := rune(' '), rune(' ')
		if i > 0 {
			prev, _ = utf8.DecodeLastRune(plain[:i])
		}
		if i+n < len(plain) {
			next, _ = utf8.DecodeRune(plain[i+n:])
		}
		pw, nw := unicode.IsSpace(prev), unicode.IsSpace(next)
		pp, np := isPunct(prev), isPunct(next)
		left := !nw && (!np || pw || pp)
		right := !pw && (!pp || nw || np)
		canOpen, canClose := left, right
		if c == '_' {
			canOpen = left && (!right || pp)
			canClose = right && (!left || np)
		}
		if canClose {
			rem, pos := n, i
			for rem > 0 {
				k := len(runs) - 1
				for ; k >= 0; k-- {
					if runs[k].active && runs[k].ch == c && runs[k].n > 0 {
						break
					}
				}
				if k < 0 {
					break
				}
				o := &runs[k]
				use := 1
				if o.n >= 2 && rem >= 2 {
					use = 2
				}
				op, cp := o.pos+o.n-use, pos
				if orig[op] >= 0 && orig[cp] >= 0 && (use == 1 || orig[op+1] == orig[op]+1 && orig[cp+1] == orig[cp]+1) {
					out = append(out, delim{open: orig[op], close: orig[cp], n: use, ch: c, strong: use == 2})
				}
				o.n -= use
				rem -= use
				pos += use
				for j := k + 1; j < len(runs); j++ {
					runs[j].active = false
				}
				if o.n == 0 {
					o.active = false
				}
			}
			if rem > 0 && canOpen {
				runs = append(runs, run{pos: pos, n: rem, ch: c, active: true})
			}
		} else if canOpen {
			runs = append(runs, run{pos: i, n: n, ch: c, active: true})
		}
		i += n
	}
	return out
}

func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		c := byte(r)
		return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
	}
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}

// usage records which variant of each habit a text uses: bit v of
// used[d] is set when variant v of dimension d (habitNames order,
// habitValues encoding) occurs.
type usage struct {
	used [NumHabits]uint8
	// outline holds the headings of levels 1–3 found outside code.
	outline []OutlineHeading
}

// profile reads the habits a Markdown text uses.
func profile(text string) usage {
	var u usage
	lines := strings.Split(text, "\n")
	inFence := false
	var fch byte
	var fn int
	prevPara := false
	for i, ln := range lines {
		t := strings.TrimLeft(ln, " ")
		ind := len(ln) - len(t)
		if inFence {
			if closesFence(t, fch, fn) {
				inFence = false
			}
			continue
		}
		if strings.TrimSpace(t) == "" {
			prevPara = false
			continue
		}
		if ch, n, ok := opensFence(t); ok && ind <= 3 {
			inFence, fch, fn = true, ch, n
			if ch == '~' {
				u.used[5] |= 2
			} else {
				u.used[5] |= 1
			}
			prevPara = false
			continue
		}
		if lv, h, ok := atx(ln); ok {
			if lv <= 2 {
				u.used[0] |= 1
			}
			u.heading(lv, h)
			prevPara = false
			continue
		}
		if prevPara && ind <= 3 && i > 0 {
			if lv := setextLevel(t); lv > 0 {
				u.used[0] |= 2
				u.heading(lv, strings.TrimSpace(lines[i-1]))
				prevPara = false
				continue
			}
		}
		body := t
		if b, ok := bulletOrOrdered(t); ok && b != 0 && !isThematicBreak(t) {
			switch consistency.BulletMarker(b) {
			case consistency.BulletDash:
				u.used[2] |= 1
			case consistency.BulletStar:
				u.used[2] |= 2
			default:
				u.used[2] |= 4
			}
			body = t[2:]
			prevPara = false
		} else {
			prevPara = ind <= 3 && t[0] != '|' && t[0] != '>' && t[0] != '<'
		}
		u.inline(body)
	}
	return u
}

func setextLevel(t string) int {
	t = strings.TrimRight(t, " \t")
	if len(t) == 0 {
		return 0
	}
	c := t[0]
	if c != '=' && c != '-' {
		return 0
	}
	for i := 0; i < len(t); i++ {
		if t[i] != c {
			return 0
		}
	}
	if c == '=' {
		return 1
	}
	return 2
}

func (u *usage) heading(lv int, text string) {
	if c, ok := consistency.ClassifyHeadingCase(text); ok {
		if c == consistency.CaseTitle {
			u.used[1] |= 2
		} else {
			u.used[1] |= 1
		}
	}
	if lv <= 3 {
		u.outline = append(u.outline, OutlineHeading{Level: lv, Text: text})
	}
	u.inline(text)
}

func (u *usage) inline(s string) {
	for _, d := range findEmphasis(s) {
		dim := 3
		if d.strong {
			dim = 4
		}
		if d.ch == '_' {
			u.used[dim] |= 2
		} else {
			u.used[dim] |= 1
		}
	}
	for _, seg := range segments(s) {
		if seg.code {
			continue
		}
		w := seg.text
		eachProseWord(w, func(word string, prev, next byte, rest string) {
			if identLike(prev, next, rest) {
				return
			}
			if sp, ok := consistency.SpellingOf(word); ok {
				if sp == consistency.SpellingUK {
					u.used[6] |= 2
				} else {
					u.used[6] |= 1
				}
				return
			}
			lower := strings.ToLower(strings.ReplaceAll(word, "’", "'"))
			switch {
			case word == "US":
			case word == "I" || strings.HasPrefix(word, "I'") || strings.HasPrefix(word, "I’") || (lower != "i" && toPlural[lower] != ""):
				u.used[7] |= 2
			case toSingular[lower] != "":
				u.used[7] |= 1
			}
		})
	}
}

func eachProseWord(s string, fn func(w string, prev, next byte, rest string)) {
	i := 0
	for i < len(s) {
		c, sz := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(c) {
			i += sz
			continue
		}
		start := i
		i += sz
		for i < len(s) {
			c, sz = utf8.DecodeRuneInString(s[i:])
			if unicode.IsLetter(c) {
				i += sz
				continue
			}
			if c == '\'' || c == '’' {
				if c2, _ := utf8.DecodeRuneInString(s[i+sz:]); unicode.IsLetter(c2) {
					i += sz
					continue
				}
			}
			break
		}
		var prev, next byte
		if start > 0 {
			prev = s[start-1]
		}
		if i < len(s) {
			next = s[i]
		}
		fn(s[start:i], prev, next, s[i:])
	}
}

// deviations returns a bitmask of the habit dimensions in which u uses a
// variant other than the style's.
func (u usage) deviations(st Style) uint16 {
	hv := st.habitValues()
	var m uint16
	for d := 0; d < NumHabits; d++ {
		if u.used[d]&^(1<<hv[d]) != 0 {
			m |= 1 << d
		}
	}
	return m
}

// outlineOK reports whether the unit's headings of levels 1–3 are exactly
// the ones the outline prescribes for it (names compared case- and
// hyphen-insensitively).
func (u usage) outlineOK(want []OutlineHeading) bool {
	if len(u.outline) != len(want) {
		return false
	}
	for i, h := range u.outline {
		if h.Level != want[i].Level {
			return false
		}
		if want[i].Level == 2 && sectionIndex(want[i].Text) >= 0 && normHeading(plainHeading(h.Text)) != normHeading(want[i].Text) {
			return false
		}
	}
	return true
}

// plainHeading drops inline emphasis markers from a heading for comparison.
func plainHeading(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '*' || r == '_' {
			return -1
		}
		return r
	}, s)
}
