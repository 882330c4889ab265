package consistency

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// capitalStats counts, per lower-case word, how often the document's
// prose writes it capitalized and in lower case away from the start of a
// sentence. A word the prose mostly capitalizes there is a proper noun
// (Rust, Cargo, Linux) in this document, so a capital in a heading says
// nothing about the heading's case convention.
type capitalStats map[string][2]int // [lower, capitalized]

func (c capitalStats) add(w string) {
	r, _ := utf8.DecodeRuneInString(w)
	k := strings.ToLower(w)
	v := c[k]
	if unicode.IsUpper(r) {
		v[1]++
	} else {
		v[0]++
	}
	c[k] = v
}

func (c capitalStats) proper(lower string) bool {
	v := c[lower]
	return v[1] > v[0]
}

// headingCase classifies a heading's text (headingText: inline code is
// codeMark) as "sentence" case or "title" case. The first word, and words
// after a colon, are capitalized in both conventions, unless inline code
// comes first ("`offset_of!` on other types"); minor words (a, and, of,
// with …), acronyms, code and the document's proper nouns say nothing. Of
// the rest, the majority of lower-case versus capitalized words decides.
// ok is false for headings of fewer than two words or without a majority.
func headingCase(plain string, proper capitalStats) (string, bool) {
	words, lower, upper := 0, 0, 0
	lead := true
	prevEnd := 0
	eachWord(plain, func(w string, at int) {
		gap := plain[prevEnd:at]
		prevEnd = at + len(w)
		if i := strings.LastIndexAny(gap, ":.!?"); i >= 0 {
			lead, gap = true, gap[i+1:] // a new clause
		}
		if strings.IndexByte(gap, codeMark) >= 0 {
			words++
			lead = false // code opened the clause
		}
		words++
		if lead {
			lead = false
			return
		}
		end := at + len(w)
		r, _ := utf8.DecodeRuneInString(w)
		if !unicode.IsLetter(r) || codeLike(plain, w, at) || acronym(w) ||
			at > 0 && plain[at-1] == codeMark || end < len(plain) && plain[end] == codeMark {
			return
		}
		l := strings.ToLower(w)
		if minorWords[l] || proper.proper(l) {
			return
		}
		if unicode.IsUpper(r) {
			upper++
		} else {
			lower++
		}
	})
	switch {
	case words < 2 || lower == upper:
		return "", false
	case lower > upper:
		return "sentence", true
	default:
		return "title", true
	}
}

// acronym reports a word written in capitals (LLVM, API, I/O's "O").
func acronym(w string) bool {
	caps := 0
	for _, r := range w {
		if unicode.IsUpper(r) {
			caps++
		}
	}
	return caps >= 2 || (caps == 1 && utf8.RuneCountInString(w) == 1)
}

// syllables estimates the syllables of an English word: the number of
// vowel groups (y is a vowel), less a silent final "e" (make) but not the
// "e" of a final consonant + "le" (table), and at least one.
func syllables(w string) int {
	w = asciiLower(w)
	groups, letters := 0, 0
	inVowel := false
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c < 'a' || c > 'z' {
			continue
		}
		letters++
		v := strings.IndexByte("aeiouy", c) >= 0
		if v && !inVowel {
			groups++
		}
		inVowel = v
	}
	if groups > 1 && letters > 2 && strings.HasSuffix(w, "e") {
		consonantLE := strings.HasSuffix(w, "le") && len(w) > 2 && strings.IndexByte("aeiouy", w[len(w)-3]) < 0
		if !consonantLE {
			groups--
		}
	}
	return max(groups, 1)
}
