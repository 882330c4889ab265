package consistency

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file splits plain text into words and holds the checker's small
// English vocabulary: function words, US/UK spelling pairs and authorial
// pronouns. The vocabulary is the checker's own, written for it; what
// counts as a document's style is decided by majorities within the
// document (see check.go).

// eachWord calls fn for every word of plain text: a maximal run of
// letters and digits, with apostrophes and hyphens allowed between
// letters ("don't", "type-checker"). at is the byte offset of the word.
func eachWord(s string, fn func(w string, at int)) {
	start := -1
	for i := 0; i <= len(s); {
		var r rune
		size := 1
		if i < len(s) {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		inWord := i < len(s) && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if !inWord && start >= 0 && i < len(s) && (r == '\'' || r == '’' || r == '-') {
			// Joins two letters: keep going.
			next, _ := utf8.DecodeRuneInString(s[i+size:])
			prev, _ := utf8.DecodeLastRuneInString(s[:i])
			if unicode.IsLetter(next) && unicode.IsLetter(prev) {
				inWord = true
			}
		}
		if inWord {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			fn(s[start:i], start)
			start = -1
		}
		if i == len(s) {
			break
		}
		i += size
	}
}

// codeLike reports whether the word w at s[at:] is part of code written
// without backticks (my_crate, foo::Bar, a.color, x2, camelCase, I/O)
// rather than a word of prose.
func codeLike(s string, w string, at int) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= '0' && w[i] <= '9' {
			return true
		}
	}
	for i := 1; i < len(w); i++ {
		if w[i] >= 'A' && w[i] <= 'Z' && w[i-1] >= 'a' && w[i-1] <= 'z' {
			return true // camelCase
		}
	}
	if at > 0 {
		switch s[at-1] {
		case '_', ':', '.', '/', '\\', '@', '#', '$', '&', '=', '<', escUnderscore:
			return true
		}
	}
	end := at + len(w)
	if end < len(s) {
		switch c := s[end]; c {
		case '_', '(', '/', '=', '<', '\\', escUnderscore:
			return true
		case ':':
			return end+1 < len(s) && s[end+1] == ':'
		case '.':
			return end+1 < len(s) && (unicode.IsLetter(rune(s[end+1])) || unicode.IsDigit(rune(s[end+1])))
		}
	}
	return false
}

// asciiLower lower-cases ASCII letters only.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// wordSet builds a set from space-separated words.
func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// functionWords are English closed-class words: articles, pronouns,
// prepositions, conjunctions, auxiliaries and common adverbs. They carry
// grammar, not content, so they are never terms.
var functionWords = wordSet(`a an the this that these those there here it its it's they them their
theirs he him his she her hers we us our ours you your yours i me my mine one ones
of in on at to from by with without for about into onto over under above below between
among through during before after since until within across along around behind beyond
upon via per than as like unlike against toward towards out off up down
and or but nor so yet if then else because although though while whereas whether either
neither both not no yes also only just even still already again ever never always
is are was were be been being am do does did done doing have has had having
can could may might must shall should will would cannot can't don't doesn't isn't aren't
won't wouldn't shouldn't couldn't didn't wasn't weren't hasn't haven't
what which who whom whose when where why how all any some each every many much more most
few less least other others another such same own very too quite rather
i.e e.g etc vs`)

// minorWords are words a Title Case heading leaves in lower case:
// articles, short prepositions and conjunctions.
var minorWords = wordSet(`a an the and or but nor for so yet of in on at to by as from into onto
with via per vs over than up off out`)

// spellingPairs are US/UK spelling pairs, US first; their inflections
// (-s, -ed, -ing …) follow from the ending (see addSpelling). Words that
// are also other common words, or that technical UK English writes the US
// way (license, program, disk), are left out.
var spellingPairs = [][2]string{
	{"color", "colour"}, {"behavior", "behaviour"}, {"favor", "favour"}, {"honor", "honour"},
	{"flavor", "flavour"}, {"labor", "labour"}, {"neighbor", "neighbour"}, {"humor", "humour"},
	{"rumor", "rumour"}, {"harbor", "harbour"}, {"endeavor", "endeavour"}, {"armor", "armour"},
	{"center", "centre"}, {"fiber", "fibre"}, {"liter", "litre"}, {"theater", "theatre"},
	{"catalog", "catalogue"}, {"analog", "analogue"}, {"dialog", "dialogue"},
	{"defense", "defence"}, {"offense", "offence"}, {"pretense", "pretence"},
	{"gray", "grey"}, {"judgment", "judgement"}, {"acknowledgment", "acknowledgement"},
	{"modeled", "modelled"}, {"modeling", "modelling"}, {"labeled", "labelled"}, {"labeling", "labelling"},
	{"canceled", "cancelled"}, {"canceling", "cancelling"}, {"traveled", "travelled"},
	{"signaled", "signalled"}, {"signaling", "signalling"}, {"leveled", "levelled"},
	{"marshaled", "marshalled"}, {"marshaling", "marshalling"}, {"tunneling", "tunnelling"},
	{"analyze", "analyse"}, {"paralyze", "paralyse"}, {"catalyze", "catalyse"},
	{"organize", "organise"}, {"recognize", "recognise"}, {"realize", "realise"},
	{"optimize", "optimise"}, {"minimize", "minimise"}, {"maximize", "maximise"},
	{"prioritize", "prioritise"}, {"normalize", "normalise"}, {"serialize", "serialise"},
	{"deserialize", "deserialise"}, {"initialize", "initialise"}, {"finalize", "finalise"},
	{"specialize", "specialise"}, {"generalize", "generalise"}, {"standardize", "standardise"},
	{"summarize", "summarise"}, {"emphasize", "emphasise"}, {"utilize", "utilise"},
	{"categorize", "categorise"}, {"customize", "customise"}, {"synchronize", "synchronise"},
	{"stabilize", "stabilise"}, {"canonicalize", "canonicalise"}, {"monomorphize", "monomorphise"},
	{"parameterize", "parameterise"}, {"characterize", "characterise"}, {"materialize", "materialise"},
	{"visualize", "visualise"}, {"apologize", "apologise"}, {"authorize", "authorise"},
	{"criticize", "criticise"}, {"memorize", "memorise"}, {"localize", "localise"},
	{"modernize", "modernise"}, {"tokenize", "tokenise"}, {"sanitize", "sanitise"},
	{"randomize", "randomise"}, {"centralize", "centralise"}, {"legalize", "legalise"},
}

// spelling maps a lower-case word to "us" or "uk".
var spelling = func() map[string]string {
	m := map[string]string{}
	for _, p := range spellingPairs {
		addSpelling(m, p[0], "us")
		addSpelling(m, p[1], "uk")
	}
	return m
}()

// addSpelling adds w and its regular inflections.
func addSpelling(m map[string]string, w, v string) {
	m[w] = v
	switch {
	case strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "ing") || strings.HasSuffix(w, "ment"):
		if strings.HasSuffix(w, "ment") {
			m[w+"s"] = v
		}
	case strings.HasSuffix(w, "ize") || strings.HasSuffix(w, "ise") || strings.HasSuffix(w, "yze") || strings.HasSuffix(w, "yse"):
		stem := w[:len(w)-1] // organiz
		m[w+"s"], m[w+"d"], m[w+"r"], m[w+"rs"], m[stem+"ing"] = v, v, v, v, v
		if w[len(w)-3] == 'i' {
			m[stem+"ation"], m[stem+"ations"] = v, v
		}
	case strings.HasSuffix(w, "e"): // centre, catalogue, defence
		m[w+"s"], m[w+"d"] = v, v
	default: // color, gray, catalog
		m[w+"s"], m[w+"ed"], m[w+"ing"], m[w+"ful"] = v, v, v, v
	}
}

// pronounPerson maps a first-person pronoun, as written, to "we" or "I".
// Lower case only, except "I" itself and sentence-initial capitals (the
// caller lower-cases a capitalized first letter); the acronym "US" is
// not "us".
var pronounPerson = map[string]string{
	"we": "we", "us": "we", "our": "we", "ours": "we", "ourselves": "we",
	"I": "I", "me": "I", "my": "I", "mine": "I", "myself": "I",
}

// headingKey normalizes a heading or section name for matching: plain
// text, lower case, hyphens as spaces, leading numbering and punctuation
// dropped, a trailing plural "s" removed.
func headingKey(plain string) string {
	var words []string
	eachWord(strings.ReplaceAll(plain, "-", " "), func(w string, _ int) {
		words = append(words, asciiLower(w))
	})
	for len(words) > 0 && isNumbering(words[0]) {
		words = words[1:]
	}
	k := strings.Join(words, " ")
	if len(k) > 3 && strings.HasSuffix(k, "s") && !strings.HasSuffix(k, "ss") {
		k = k[:len(k)-1]
	}
	return k
}

// isNumbering reports a section number such as "3" or a roman "iv".
func isNumbering(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return true
}

func isLetterOrDigit(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// quotedRanges appends the [start, end) byte ranges of double-quoted text
// ("…" or “…”) in s to dst. An unclosed quote runs to the end.
func quotedRanges(s string, dst []int) []int {
	open := -1
	for i, r := range s {
		switch {
		case open < 0 && (r == '"' || r == '“'):
			open = i
		case open >= 0 && (r == '"' || r == '”'):
			dst = append(dst, open, i+1)
			open = -1
		}
	}
	if open >= 0 {
		dst = append(dst, open, len(s))
	}
	return dst
}

// lowerWord lower-cases a word, allocating only when it has capitals.
func lowerWord(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf {
			return strings.ToLower(w)
		}
	}
	return w
}
