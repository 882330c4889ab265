package markdown

import (
	"strings"
	"unicode"
	"unicode/utf8"
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

// spellEntry is a spelling word's variant and its spelling in the other.
type spellEntry struct {
	variant Spelling
	other   string
}

// spellIndex maps every word of spellingPairs to its entry.
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

// SpellingOfWord reports the variant of a word as EachWord finds it if it
// is one of the US/UK spelling pairs (color/colour, behavior/behaviour,
// organize/organise …), without allocating: it folds only ASCII letters
// to lower case, and words of 32 bytes or more are never spelling words.
func SpellingOfWord(w string) (Spelling, bool) {
	if w == "" || !maybeSpellingWord(w) {
		return "", false
	}
	var buf [32]byte
	e, ok := spellIndex[string(lowerInto(buf[:0], w))]
	return e.variant, ok
}

// LookupSpelling returns the variant of lower, a lower-case word of the
// US/UK spelling pairs, and its spelling in the other variant.
func LookupSpelling(lower string) (variant Spelling, other string, ok bool) {
	e, ok := spellIndex[lower]
	return e.variant, e.other, ok
}

// lowerInto appends w lower-cased (ASCII only) to dst.
func lowerInto(dst []byte, w string) []byte {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// PersonOf classifies one word as a first-person pronoun: we, us, our,
// ours, ourselves, we're, we've, we'll, we'd (PersonPlural) or I, me, my,
// mine, myself, I'm, I've, I'll, I'd (PersonSingular), in any case, except
// that "I" is recognized only in upper case (lower-case "i" is usually a
// variable) and "US" in upper case is a country, not a pronoun.
func PersonOf(w string) (Person, bool) {
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

// EachWord calls fn for every word of s: a run of letters, possibly with
// inner apostrophes (' or ’). prev and next are the bytes around the word
// (0 at the ends), so callers can skip identifiers such as my_crate or
// foo.color.
func EachWord(s string, fn func(w string, start int, prev, next byte)) {
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

// IdentifierLike reports whether the word with these neighbours is part of
// an identifier or path (snake_case, foo::bar, a.b, x2) rather than prose.
func IdentifierLike(prev, next byte, rest string) bool {
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

// CaseEvidence returns whether word w (not leading) is evidence of
// sentence case (lower) or Title Case (upper), or neither.
func CaseEvidence(w string) (lower, upper bool) {
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

// QuotedRanges appends to dst the [start, end) byte ranges of s inside
// double quotes ("…" or “…”); an unclosed quote is ignored.
func QuotedRanges(s string, dst []int) []int {
	if strings.IndexByte(s, '"') < 0 && !strings.Contains(s, "“") {
		return dst
	}
	open := -1
	for i := 0; i < len(s); {
		r, sz := utf8.DecodeRuneInString(s[i:])
		switch {
		case open < 0 && (r == '"' || r == '“'):
			open = i
		case open >= 0 && (r == '"' || r == '”'):
			dst = append(dst, open, i+sz)
			open = -1
		}
		i += sz
	}
	return dst
}

// LowerASCII returns s in lower case (strings.ToLower) if it has an ASCII
// upper-case letter, else s itself.
func LowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// NormalizeHeading folds a heading or section name for matching: lower
// case, letters only, runs of spaces, hyphens and underscores as one space.
func NormalizeHeading(plain string) string {
	var sb strings.Builder
	space := true
	for _, r := range strings.ToLower(plain) {
		switch {
		case unicode.IsLetter(r):
			sb.WriteRune(r)
			space = false
		case r == '-' || r == '_' || unicode.IsSpace(r):
			if !space {
				sb.WriteByte(' ')
				space = true
			}
		}
	}
	return strings.TrimSpace(sb.String())
}
