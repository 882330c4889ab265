package consistency

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/internal/markdown"
)

// The style vocabulary: the variants the "one style" checks count. They
// are defined in internal/markdown, which reads Markdown for this package
// and for the writing env's simulated writers alike.
type (
	// HeadingStyle is a heading syntax (markdownlint MD003).
	HeadingStyle = markdown.HeadingStyle
	// HeadingCase is a heading capitalization convention.
	HeadingCase = markdown.HeadingCase
	// BulletMarker is the character that starts an unordered list item
	// (markdownlint MD004).
	BulletMarker = markdown.BulletMarker
	// EmphasisMarker is the delimiter of emphasis (MD049) or strong
	// emphasis (MD050).
	EmphasisMarker = markdown.EmphasisMarker
	// CodeStyle is the way a code block is written (MD046 and MD048).
	CodeStyle = markdown.CodeStyle
	// Spelling is an English spelling variant; see SpellingPairs.
	Spelling = markdown.Spelling
	// Person is the grammatical person the authors use for themselves;
	// see PersonWords.
	Person = markdown.Person
)

// The variants. Setext headings exist only for levels 1 and 2, so a setext
// document writes its deeper headings in ATX; the heading_style check
// therefore judges only headings of levels 1 and 2.
const (
	HeadingATX       = markdown.HeadingATX       // "## Title"
	HeadingATXClosed = markdown.HeadingATXClosed // "## Title ##"
	HeadingSetext    = markdown.HeadingSetext    // "Title" underlined with === or ---

	CaseSentence = markdown.CaseSentence // "Rationale and alternatives"; see ClassifyHeadingCase
	CaseTitle    = markdown.CaseTitle    // "Rationale and Alternatives"

	BulletDash = markdown.BulletDash // -
	BulletStar = markdown.BulletStar // *
	BulletPlus = markdown.BulletPlus // +

	EmphasisStar       = markdown.EmphasisStar       // *text*
	EmphasisUnderscore = markdown.EmphasisUnderscore // _text_
	StrongStar         = markdown.StrongStar         // **text**
	StrongUnderscore   = markdown.StrongUnderscore   // __text__

	CodeBacktick = markdown.CodeBacktick // ``` fence
	CodeTilde    = markdown.CodeTilde    // ~~~ fence
	CodeIndented = markdown.CodeIndented // four-space indentation

	SpellingUS = markdown.SpellingUS
	SpellingUK = markdown.SpellingUK

	PersonPlural   = markdown.PersonPlural   // we, us, our, ours, ourselves
	PersonSingular = markdown.PersonSingular // I, me, my, mine, myself
)

// SpellingPairs returns the US/UK word pairs the spelling check knows, as
// {US, UK}, lower case. The slice is a copy.
func SpellingPairs() [][2]string { return markdown.SpellingPairs() }

// SpellingOf reports the variant of word (any case) if it is in
// SpellingPairs.
func SpellingOf(word string) (Spelling, bool) { return markdown.SpellingOf(word) }

// PersonWords returns the pronouns that mark each authorial person for the
// person check. "I" is recognized only in upper case (lower-case "i" is
// usually a variable), and "US" in upper case is a country, not a pronoun.
func PersonWords() map[Person][]string { return markdown.PersonWords() }

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

// ClassifyHeadingCase classifies heading text (inline Markdown allowed;
// code spans, links and URLs are ignored) as sentence case or Title Case.
// Only words after the first that are not minor words (a, and, of, with …),
// proper nouns (Rust, Cargo …), acronyms or identifiers count: the heading
// is Title Case when most of them are capitalized and sentence case when
// most are lower case. ok is false when the heading has fewer than two
// words or no deciding majority.
func ClassifyHeadingCase(text string) (c HeadingCase, ok bool) {
	var p markdown.Stripper
	return classifyPlainHeading(p.Plain(text, nil))
}

func classifyPlainHeading(plain string) (HeadingCase, bool) {
	words, lower, upper := 0, 0, 0
	headingWords(plain, func(w string, lead bool) {
		words++
		if lead {
			return
		}
		l, u := markdown.CaseEvidence(w)
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
