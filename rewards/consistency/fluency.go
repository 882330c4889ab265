package consistency

import "fmt"

// Fluency thresholds, from the English of the project's real RFCs (see
// the package doc).
const (
	fluencyMinWords     = 20   // shorter paragraphs are not judged
	fluencyMinFunction  = 0.2  // share of function words below which a paragraph is not English prose
	fluencyMaxBadPairs  = 0.02 // article + grammar word pairs per word above which it is not either
	fluencyArticleWords = "a an the"
)

// cannotFollowArticle are grammar words that never come right after an
// article in English ("the of", "a and").
var cannotFollowArticle = wordSet(`a an the of in on at to by with from for and or but nor is are was
were be been am it we they he she you i that which who whom whose this these those our their its
his her my your not no if than as`)

var articles = wordSet(fluencyArticleWords)

// fluency is the check "the prose reads as English": a paragraph of at
// least fluencyMinWords words (inline code spans, which read as the word
// codeWord, are not words of prose: a sentence listing `u8`, `u16` …
// is English) passes when at least fluencyMinFunction of
// its words are function words (English prose has 40–55 %; random words
// from a vocabulary almost none) and at most fluencyMaxBadPairs of its
// words (and at least two) are an article followed by a word that cannot
// follow one (the
// words of real prose shuffled keep their function-word share but not
// their grammar). Pass = passing / judged paragraphs. It is a floor, not
// a judge of quality: grammatical nonsense passes.
func (p *prose) fluency(tr trace) CheckResult {
	judged, failed := 0, 0
	var where []string
	for _, b := range p.blocks {
		if b.kind != blockPara {
			continue
		}
		ts := p.toks[b.from:b.to]
		words := 0
		for i := range ts {
			if ts[i].w != codeWord {
				words++
			}
		}
		if words < fluencyMinWords {
			continue
		}
		judged++
		fn, bad := 0, 0
		for i := range ts {
			// A capital "A" inside a sentence is a name ("link together
			// CUs A and C"), not the article.
			name := ts[i].w == "A" && !ts[i].initial
			// A number is a quantifier, like "many" or "few" ("contains
			// 5 types, 26 traits").
			if (functionWords[ts[i].lower] || ts[i].lower == "i" || numeral(ts[i].w)) && !name {
				fn++
			}
			if i+1 < len(ts) && articles[ts[i].lower] && !name && !ts[i].ends && cannotFollowArticle[ts[i+1].lower] {
				bad++
			}
		}
		n := float64(words)
		if float64(fn) < fluencyMinFunction*n || (bad >= 2 && float64(bad) > fluencyMaxBadPairs*n) {
			failed++
			tr.add(checkFluency, "bad", "line %d (%.0f%% function words, %d article misfits)", b.line, 100*float64(fn)/n, bad)
			if len(where) < 3 {
				where = append(where, fmt.Sprintf("line %d (%.0f%% function words, %d article misfits)", b.line, 100*float64(fn)/n, bad))
			}
		}
	}
	pass := 1.0
	if judged > 0 {
		pass = float64(judged-failed) / float64(judged)
	}
	detail := fmt.Sprintf("%d of %d paragraphs of %d+ words read as English", judged-failed, judged, fluencyMinWords)
	if len(where) > 0 {
		detail += "; not: " + joinComma(where)
	}
	return CheckResult{Name: checkFluency, Pass: pass, N: judged, Detail: detail}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// numeral reports a word of decimal digits only.
func numeral(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return w != ""
}
