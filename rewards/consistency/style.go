package consistency

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// HeadingStyle is a heading syntax (markdownlint MD003).
type HeadingStyle string

// Heading syntaxes. Setext headings exist only for levels 1 and 2, so a
// setext document writes its deeper headings in ATX; the heading_style
// check therefore judges only headings of levels 1 and 2.
const (
	HeadingATX       HeadingStyle = "atx"        // "## Title"
	HeadingATXClosed HeadingStyle = "atx_closed" // "## Title ##"
	HeadingSetext    HeadingStyle = "setext"     // "Title" underlined with === or ---
)

// HeadingCase is a heading capitalization convention.
type HeadingCase string

// Heading capitalization conventions; see ClassifyHeadingCase.
const (
	CaseSentence HeadingCase = "sentence" // "Rationale and alternatives"
	CaseTitle    HeadingCase = "title"    // "Rationale and Alternatives"
)

// BulletMarker is the character that starts an unordered list item
// (markdownlint MD004).
type BulletMarker byte

// Bullet markers.
const (
	BulletDash BulletMarker = '-'
	BulletStar BulletMarker = '*'
	BulletPlus BulletMarker = '+'
)

// String returns the marker character.
func (b BulletMarker) String() string { return string(rune(b)) }

// EmphasisMarker is the delimiter of emphasis (MD049) or strong emphasis
// (MD050).
type EmphasisMarker string

// Emphasis and strong delimiters.
const (
	EmphasisStar       EmphasisMarker = "*"  // *text*
	EmphasisUnderscore EmphasisMarker = "_"  // _text_
	StrongStar         EmphasisMarker = "**" // **text**
	StrongUnderscore   EmphasisMarker = "__" // __text__
)

// CodeStyle is the way a code block is written (MD046 and MD048).
type CodeStyle string

// Code block styles.
const (
	CodeBacktick CodeStyle = "backtick" // ``` fence
	CodeTilde    CodeStyle = "tilde"    // ~~~ fence
	CodeIndented CodeStyle = "indented" // four-space indentation
)

// Spelling is an English spelling variant.
type Spelling string

// Spelling variants; see SpellingPairs.
const (
	SpellingUS Spelling = "us"
	SpellingUK Spelling = "uk"
)

// Person is the grammatical person the authors use for themselves.
type Person string

// Authorial persons; see PersonWords.
const (
	PersonPlural   Person = "we" // we, us, our, ours, ourselves
	PersonSingular Person = "I"  // I, me, my, mine, myself
)

// spellingPairs are unambiguous US/UK pairs: every word is spelt only one
// way on its side of the Atlantic, and none is also a common different word
// (so no license/licence, program/programme, practice/practise,
// dialog/dialogue, judgment/judgement or artifact/artefact, which
// technical UK English often writes the US way).
var spellingPairs = [][2]string{
	{"color", "colour"}, {"colors", "colours"}, {"colored", "coloured"}, {"coloring", "colouring"},
	{"behavior", "behaviour"}, {"behaviors", "behaviours"}, {"behavioral", "behavioural"},
	{"favor", "favour"}, {"favors", "favours"}, {"favored", "favoured"}, {"favorite", "favourite"}, {"favorable", "favourable"},
	{"honor", "honour"}, {"honors", "honours"}, {"honored", "honoured"},
	{"labor", "labour"}, {"neighbor", "neighbour"}, {"neighbors", "neighbours"}, {"neighboring", "neighbouring"},
	{"flavor", "flavour"}, {"flavors", "flavours"}, {"humor", "humour"}, {"rumor", "rumour"},
	{"organize", "organise"}, {"organized", "organised"}, {"organizes", "organises"}, {"organizing", "organising"},
	{"organization", "organisation"}, {"organizations", "organisations"}, {"organizational", "organisational"},
	{"optimize", "optimise"}, {"optimized", "optimised"}, {"optimizes", "optimises"}, {"optimizing", "optimising"},
	{"optimization", "optimisation"}, {"optimizations", "optimisations"},
	{"recognize", "recognise"}, {"recognized", "recognised"}, {"recognizes", "recognises"}, {"recognizing", "recognising"},
	{"realize", "realise"}, {"realized", "realised"}, {"realizes", "realises"}, {"realizing", "realising"},
	{"specialize", "specialise"}, {"specialized", "specialised"}, {"specialization", "specialisation"},
	{"standardize", "standardise"}, {"standardized", "standardised"}, {"standardization", "standardisation"},
	{"normalize", "normalise"}, {"normalized", "normalised"}, {"normalization", "normalisation"},
	{"minimize", "minimise"}, {"minimized", "minimised"}, {"minimizes", "minimises"}, {"minimizing", "minimising"},
	{"maximize", "maximise"}, {"maximized", "maximised"}, {"maximizing", "maximising"},
	{"prioritize", "prioritise"}, {"prioritized", "prioritised"}, {"prioritizing", "prioritising"},
	{"summarize", "summarise"}, {"summarized", "summarised"}, {"summarizes", "summarises"},
	{"utilize", "utilise"}, {"utilized", "utilised"}, {"utilization", "utilisation"},
	{"categorize", "categorise"}, {"categorized", "categorised"},
	{"customize", "customise"}, {"customized", "customised"}, {"customization", "customisation"},
	{"emphasize", "emphasise"}, {"emphasized", "emphasised"}, {"emphasizes", "emphasises"},
	{"finalize", "finalise"}, {"finalized", "finalised"}, {"generalize", "generalise"}, {"generalized", "generalised"},
	{"generalization", "generalisation"}, {"stabilize", "stabilise"}, {"stabilized", "stabilised"},
	{"stabilizing", "stabilising"}, {"stabilization", "stabilisation"},
	{"initialize", "initialise"}, {"initialized", "initialised"}, {"initializes", "initialises"},
	{"initializing", "initialising"}, {"initialization", "initialisation"},
	{"serialize", "serialise"}, {"serialized", "serialised"}, {"serializing", "serialising"}, {"serialization", "serialisation"},
	{"analyze", "analyse"}, {"analyzed", "analysed"}, {"analyzes", "analyses"}, {"analyzing", "analysing"},
	{"paralyze", "paralyse"},
	{"center", "centre"}, {"centers", "centres"}, {"centered", "centred"},
	{"fiber", "fibre"}, {"fibers", "fibres"}, {"liter", "litre"},
	{"defense", "defence"}, {"offense", "offence"},
	{"catalog", "catalogue"}, {"catalogs", "catalogues"},
	{"gray", "grey"},
	{"modeling", "modelling"}, {"modeled", "modelled"}, {"labeled", "labelled"}, {"labeling", "labelling"},
	{"traveled", "travelled"}, {"traveling", "travelling"}, {"canceled", "cancelled"}, {"canceling", "cancelling"},
	{"signaling", "signalling"}, {"signaled", "signalled"}, {"tunneling", "tunnelling"},
	{"fulfill", "fulfil"}, {"fulfills", "fulfils"}, {"enrollment", "enrolment"},
}

// SpellingPairs returns the US/UK word pairs the spelling check knows, as
// {US, UK}, lower case. The slice is a copy.
func SpellingPairs() [][2]string {
	out := make([][2]string, len(spellingPairs))
	copy(out, spellingPairs)
	return out
}

type spellEntry struct {
	variant Spelling
	other   string
}

var spellIndex = func() map[string]spellEntry {
	m := make(map[string]spellEntry, 2*len(spellingPairs))
	for _, p := range spellingPairs {
		m[p[0]] = spellEntry{SpellingUS, p[1]}
		m[p[1]] = spellEntry{SpellingUK, p[0]}
	}
	return m
}()

// spellMaybe[c] has bit n set when some spelling word starts with the
// lower-case letter c and has n letters: a cheap filter before the map.
var spellMaybe = func() (m [26]uint32) {
	for _, p := range spellingPairs {
		for _, w := range p {
			m[w[0]-'a'] |= 1 << len(w)
		}
	}
	return m
}()

// maybeSpellingWord reports whether w could be a spelling word.
func maybeSpellingWord(w string) bool {
	c := w[0] | 0x20
	return len(w) < 32 && c >= 'a' && c <= 'z' && spellMaybe[c-'a']&(1<<len(w)) != 0
}

// SpellingOf reports the variant of word (any case) if it is in
// SpellingPairs.
func SpellingOf(word string) (Spelling, bool) {
	e, ok := spellIndex[strings.ToLower(word)]
	return e.variant, ok
}

// Respell rewrites every word of SpellingPairs in text to the given
// variant, keeping the capitalization of the first letter. Words glued to
// identifiers (color_space, self.color) stay; code spans and blocks do
// not, so pass prose only (Restyle knows Markdown).
func Respell(text string, to Spelling) string {
	var sb strings.Builder
	last := 0
	eachWord(text, func(w string, start int, prev, next byte) {
		e, ok := spellIndex[strings.ToLower(w)]
		if !ok || e.variant == to || identifierLike(prev, next, text[start+len(w):]) {
			return
		}
		repl := e.other
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

// PersonWords returns the pronouns that mark each authorial person. "I" is
// recognized only in upper case (lower-case "i" is usually a variable),
// and "US" in upper case is a country, not a pronoun.
func PersonWords() map[Person][]string {
	return map[Person][]string{
		PersonPlural:   {"we", "us", "our", "ours", "ourselves", "we're", "we've", "we'll", "we'd"},
		PersonSingular: {"I", "me", "my", "mine", "myself", "I'm", "I've", "I'll", "I'd"},
	}
}

// personOf classifies one word as a first-person pronoun.
func personOf(w string) (Person, bool) {
	if len(w) > 10 {
		return "", false
	}
	switch w[0] | 0x20 {
	case 'w', 'u', 'o', 'i', 'm':
	default:
		return "", false
	}
	switch w {
	case "I", "I'm", "I've", "I'll", "I'd", "I’m", "I’ve", "I’ll", "I’d":
		return PersonSingular, true
	case "US":
		return "", false
	}
	var buf [10]byte
	n := 0
	for i := 0; i < len(w) && n < len(buf); i++ {
		c := w[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	switch string(buf[:n]) {
	case "we", "us", "our", "ours", "ourselves", "we're", "we've", "we'll", "we'd":
		return PersonPlural, true
	case "me", "my", "mine", "myself":
		return PersonSingular, true
	}
	if strings.HasPrefix(strings.ToLower(w), "we’") {
		return PersonPlural, true
	}
	return "", false
}

// eachWord calls fn for every word of s: a run of letters, possibly with
// inner apostrophes (' or ’). prev and next are the bytes around the word
// (0 at the ends), so callers can skip identifiers such as my_crate or
// foo.color.
func eachWord(s string, fn func(w string, start int, prev, next byte)) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if !isASCIILetter(c) {
				i++
				continue
			}
		} else if r, sz := utf8.DecodeRuneInString(s[i:]); !unicode.IsLetter(r) {
			i += sz
			continue
		}
		start := i
		for i < len(s) {
			c := s[i]
			if c < utf8.RuneSelf {
				if isASCIILetter(c) {
					i++
					continue
				}
				if c == '\'' && i+1 < len(s) && isASCIILetter(s[i+1]) {
					i++
					continue
				}
				break
			}
			r, sz := utf8.DecodeRuneInString(s[i:])
			if unicode.IsLetter(r) {
				i += sz
				continue
			}
			if r == '’' {
				if r2, _ := utf8.DecodeRuneInString(s[i+sz:]); unicode.IsLetter(r2) {
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
		fn(s[start:i], start, prev, next)
	}
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// identifierLike reports whether the word with these neighbours is part of
// an identifier or path (snake_case, foo::bar, a.b, x2) rather than prose.
func identifierLike(prev, next byte, rest string) bool {
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
	if next == '.' && len(rest) > 1 && (isWordByte(rest[1])) {
		return true
	}
	return false
}

// minorWords stay lower case in Title Case (articles, conjunctions and
// short prepositions, as in the Chicago Manual of Style).
var minorWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "but": true, "or": true, "nor": true,
	"for": true, "so": true, "yet": true, "as": true, "at": true, "by": true, "in": true,
	"of": true, "off": true, "on": true, "per": true, "to": true, "up": true, "via": true,
	"vs": true, "with": true, "from": true, "into": true, "onto": true, "than": true,
}

// properNouns are capitalized in either convention, so they are no
// evidence of Title Case.
var properNouns = map[string]bool{
	"rust": true, "cargo": true, "clippy": true, "rustdoc": true, "rustup": true, "rustfmt": true,
	"rustc": true, "miri": true, "linux": true, "windows": true, "unix": true, "apple": true,
	"android": true, "github": true, "python": true, "java": true, "javascript": true,
	"swift": true, "haskell": true, "scala": true, "kotlin": true, "ruby": true, "zig": true,
	"unicode": true, "english": true, "wasm": true, "webassembly": true, "arm": true,
	"intel": true, "microsoft": true, "google": true, "mozilla": true, "debian": true,
	"fedora": true, "ubuntu": true, "ocaml": true, "perl": true, "lisp": true, "erlang": true,
	"elixir": true, "nix": true, "msvc": true, "gnu": true,
}

// headingWords calls fn for every word of a heading's plain text, with
// whether it is the first word or follows a colon (capitalized in both
// conventions).
func headingWords(plain string, fn func(w string, lead bool)) {
	first := true
	afterColon := false
	for _, tok := range strings.Fields(plain) {
		w := strings.TrimFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if w == "" {
			if strings.HasSuffix(tok, ":") {
				afterColon = true
			}
			continue
		}
		r, _ := utf8.DecodeRuneInString(w)
		if !unicode.IsLetter(r) {
			first = false
			afterColon = strings.HasSuffix(tok, ":")
			continue
		}
		fn(w, first || afterColon)
		first = false
		afterColon = strings.HasSuffix(tok, ":") || strings.HasSuffix(tok, ".")
	}
}

// caseEvidence returns whether word w (not leading) is evidence of
// sentence case (lower) or Title Case (upper), or neither.
func caseEvidence(w string) (lower, upper bool) {
	if i := strings.IndexByte(w, '-'); i > 0 {
		w = w[:i]
	}
	if utf8.RuneCountInString(w) < 2 || minorWords[strings.ToLower(w)] || properNouns[strings.ToLower(w)] {
		return false, false
	}
	r, sz := utf8.DecodeRuneInString(w)
	for _, r2 := range w[sz:] {
		if unicode.IsUpper(r2) || unicode.IsDigit(r2) {
			return false, false // acronym, CamelCase or identifier
		}
	}
	if unicode.IsUpper(r) {
		return false, true
	}
	if unicode.IsLower(r) {
		return true, false
	}
	return false, false
}

// ClassifyHeadingCase classifies heading text (inline Markdown allowed;
// code spans, links and URLs are ignored) as sentence case or Title Case.
// Only words after the first that are not minor words (a, and, of, with …),
// proper nouns (Rust, Cargo …), acronyms or identifiers count: the heading
// is Title Case when most of them are capitalized and sentence case when
// most are lower case. ok is false when the heading has fewer than two
// words or no deciding majority.
func ClassifyHeadingCase(text string) (c HeadingCase, ok bool) {
	var p stripper
	return classifyPlainHeading(p.plain(text, nil))
}

func classifyPlainHeading(plain string) (HeadingCase, bool) {
	words, lower, upper := 0, 0, 0
	headingWords(plain, func(w string, lead bool) {
		words++
		if lead {
			return
		}
		l, u := caseEvidence(w)
		if l {
			lower++
		}
		if u {
			upper++
		}
	})
	switch {
	case words < 2 || lower == upper:
		return "", false
	case lower > upper:
		return CaseSentence, true
	default:
		return CaseTitle, true
	}
}

// ToTitleCase capitalizes the first letter of every word of a heading's
// text except minor words after the first; code spans, link destinations,
// acronyms and identifiers are left alone. ClassifyHeadingCase of the
// result is CaseTitle whenever the heading has deciding words.
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
			n := runLen(text, i, '`')
			if inCode == 0 {
				if findBacktickRun(text, i+n, n) >= 0 {
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
			if j := matchParen(text, i+1); j > 0 {
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
		low, up := caseEvidence(w)
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

// syllables estimates the syllables of an English word: groups of vowels
// (y counts), minus a silent final e, at least one.
func syllables(w string) int {
	n := 0
	prevVowel := false
	last := byte(0)
	count := 0
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c < 'a' || c > 'z' {
			continue
		}
		count++
		v := c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y'
		if v && !prevVowel {
			n++
		}
		prevVowel = v
		last = c
	}
	if last == 'e' && n > 1 && count > 2 {
		// "make", "explore": silent e; but "table", "simple" keep it.
		l := strings.ToLower(w)
		if !(strings.HasSuffix(l, "le") && len(l) > 2 && !isVowel(l[len(l)-3])) {
			n--
		}
	}
	if n < 1 {
		n = 1
	}
	return n
}

func isVowel(c byte) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y'
}
