package consistency

import (
	"fmt"
	"slices"
	"strings"
)

// Duplication thresholds.
const (
	dupShingle        = 4   // words per shingle
	dupMinBlockWords  = 12  // paragraphs and list items shorter than this are not compared whole
	dupJaccard        = 0.5 // shingle-set Jaccard similarity that makes two blocks near-duplicates
	dupMinSentenceLen = 10  // sentences shorter than this are not compared
)

// duplication is the check "no content repeated in another section": a
// paragraph or list item whose 4-word shingles overlap an earlier one's
// in another section with Jaccard similarity ≥ 0.5, or a sentence of 10
// or more words repeated word for word (ignoring case and punctuation) in
// another section, is one repeat. Pass = 1 / (1 + repeats); N is the
// number of blocks and sentences compared.
func (p *prose) duplication(tr trace) CheckResult {
	type shingled struct {
		part, line, size int
	}
	var earlier []shingled
	index := map[uint64][]int{}   // shingle → earlier blocks holding it
	shared := map[int]int{}       // earlier block → shingles shared with the current one
	sentences := map[uint64]int{} // sentence hash → part of its first use
	repeats, judged := 0, 0
	var where []string
	var set []uint64 // the current block's shingles, sorted
	hashWords := func(ts []tok) uint64 {
		// FNV-1a over the words, each followed by a space.
		h := uint64(14695981039346656037)
		for _, t := range ts {
			for i := 0; i < len(t.lower); i++ {
				h = (h ^ uint64(t.lower[i])) * 1099511628211
			}
			h = (h ^ ' ') * 1099511628211
		}
		return h
	}
	for _, b := range p.blocks {
		if b.kind == blockTable {
			continue
		}
		ts := p.toks[b.from:b.to]
		dup := false
		if len(ts) >= dupMinBlockWords {
			judged++
			set = set[:0]
			for i := 0; i+dupShingle <= len(ts); i++ {
				set = append(set, hashWords(ts[i:i+dupShingle]))
			}
			slices.Sort(set)
			set = slices.Compact(set)
			clear(shared)
			for _, sh := range set {
				for _, e := range index[sh] {
					shared[e]++
				}
			}
			best, bestJ := -1, 0.0
			for e, inter := range shared {
				if earlier[e].part == b.part {
					continue
				}
				j := float64(inter) / float64(len(set)+earlier[e].size-inter)
				if j > bestJ || (j == bestJ && e < best) {
					best, bestJ = e, j
				}
			}
			if best >= 0 && bestJ >= dupJaccard {
				dup = true
				repeats++
				where = append(where, fmt.Sprintf("line %d repeats line %d (Jaccard %.2f)", b.line, earlier[best].line, bestJ))
				tr.add(checkDuplication, "bad", "%s", where[len(where)-1])
			}
			for _, sh := range set {
				index[sh] = append(index[sh], len(earlier))
			}
			earlier = append(earlier, shingled{part: b.part, line: b.line, size: len(set)})
		}
		// Sentences.
		start := 0
		for i := range ts {
			if !ts[i].ends && i+1 < len(ts) {
				continue
			}
			sent := ts[start : i+1]
			start = i + 1
			if len(sent) < dupMinSentenceLen {
				continue
			}
			judged++
			k := hashWords(sent)
			first, seen := sentences[k]
			switch {
			case !seen:
				sentences[k] = b.part
			case first != b.part && !dup:
				repeats++
				where = append(where, fmt.Sprintf("line %d repeats the sentence %q", b.line, firstWords(sent, 6)))
				tr.add(checkDuplication, "bad", "line %d repeats the sentence %q", b.line, firstWords(sent, len(sent)))
			}
		}
	}
	detail := fmt.Sprintf("%d repeat(s) in %d blocks and sentences compared", repeats, judged)
	if len(where) > 0 {
		detail += ": " + strings.Join(where[:min(3, len(where))], "; ")
	}
	return CheckResult{Name: checkDuplication, Pass: 1 / (1 + float64(repeats)), N: judged, Detail: detail}
}

func firstWords(ts []tok, n int) string {
	var w []string
	for _, t := range ts[:min(n, len(ts))] {
		w = append(w, t.w)
	}
	return strings.Join(w, " ") + " …"
}
