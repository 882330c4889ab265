package consistency

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/internal/markdown"
)

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

// classifyPlainHeading classifies a heading's plain text (its inline
// Markdown stripped: code spans, links and URLs ignored) as sentence case
// or Title Case. Only words after the first that are not minor words (a,
// and, of, with …), proper nouns (Rust, Cargo …), acronyms or identifiers
// count: the heading is Title Case when most of them are capitalized and
// sentence case when most are lower case. ok is false when the heading has
// fewer than two words or no deciding majority.
func classifyPlainHeading(plain string) (c markdown.HeadingCase, ok bool) {
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
		return markdown.CaseSentence, true
	default:
		return markdown.CaseTitle, true
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
