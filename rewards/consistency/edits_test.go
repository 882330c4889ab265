package consistency

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Edited copies of real RFCs: each edit introduces one failure that
// parallel writers produce, and must lower its own check and the score,
// while the untouched RFC keeps its as-written value.

func readRFC(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shippedDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// secondHalf applies f to the document from the first paragraph break
// after its middle.
func secondHalf(doc string, f func(string) string) string {
	mid := len(doc) / 2
	i := strings.Index(doc[mid:], "\n\n")
	if i < 0 {
		return doc
	}
	return doc[:mid+i] + f(doc[mid+i:])
}

// renameOutsideCode replaces whole words outside code fences and spans.
func renameOutsideCode(s string, re *regexp.Regexp, repl string) string {
	var out strings.Builder
	inFence := false
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if inFence || strings.HasPrefix(strings.TrimSpace(line), "```") {
			out.WriteString(line)
			continue
		}
		parts := strings.Split(line, "`")
		for i := 0; i < len(parts); i += 2 {
			parts[i] = re.ReplaceAllString(parts[i], repl)
		}
		out.WriteString(strings.Join(parts, "`"))
	}
	return out.String()
}

type edit struct {
	name, rfc, check string
	apply            func(t *testing.T, doc string) string
}

var edits = []edit{
	{"renamed term in half", "3191-debugger-visualizer.md", checkTerminology, func(t *testing.T, doc string) string {
		return secondHalf(doc, func(s string) string {
			return renameOutsideCode(s, regexp.MustCompile(`\bcrate(s?)\b`), "package$1")
		})
	}},
	{"renamed key term in half", "3662-mergeable-rustdoc-cross-crate-info.md", checkTerminology, func(t *testing.T, doc string) string {
		return secondHalf(doc, func(s string) string {
			return renameOutsideCode(s, regexp.MustCompile(`\bcrate(s?)\b`), "package$1")
		})
	}},
	{"hyphenation variant in half", "3191-debugger-visualizer.md", checkTerminology, func(t *testing.T, doc string) string {
		// "metadata" is written closed throughout; the second half hyphenates it.
		return secondHalf(doc, func(s string) string {
			return renameOutsideCode(s, regexp.MustCompile(`\bmetadata\b`), "meta-data")
		})
	}},
	{"broken anchor", "3191-debugger-visualizer.md", checkCrossReferences, func(t *testing.T, doc string) string {
		return replaceOnce(t, doc, "## Drawbacks\n", "## Drawbacks\n\nThis is discussed in the [guide](#guide-level-explanations-and-examples).\n")
	}},
	{"section named in prose that does not exist", "2707-dotdot-patterns.md", checkCrossReferences, func(t *testing.T, doc string) string {
		return replaceOnce(t, doc, "## Drawbacks\n", "## Drawbacks\n\nAs the Detailed design section shows, nothing breaks.\n")
	}},
	{"duplicated paragraph", "3191-debugger-visualizer.md", checkDuplication, func(t *testing.T, doc string) string {
		// Repeat the first paragraph of the motivation in the drawbacks.
		i := strings.Index(doc, "## Motivation")
		p := strings.Index(doc[i:], "\n\n") + i + 2
		q := strings.Index(doc[p:], "\n\n") + p
		return replaceOnce(t, doc, "## Drawbacks\n", "## Drawbacks\n\n"+doc[p:q]+"\n")
	}},
	{"mixed bullet styles", "3191-debugger-visualizer.md", checkBulletStyle, func(t *testing.T, doc string) string {
		return secondHalf(doc, func(s string) string { return regexp.MustCompile(`(?m)^(\s*)\* `).ReplaceAllString(s, "$1- ") })
	}},
	{"mixed heading styles", "3191-debugger-visualizer.md", checkHeadingStyle, func(t *testing.T, doc string) string {
		return secondHalf(doc, func(s string) string {
			return regexp.MustCompile(`(?m)^## (.*)$`).ReplaceAllStringFunc(s, func(h string) string {
				text := strings.TrimPrefix(h, "## ")
				return text + "\n" + strings.Repeat("-", len(text))
			})
		})
	}},
}

func TestEditedRFCs(t *testing.T) {
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			orig := readRFC(t, e.rfc)
			edited := e.apply(t, orig)
			if edited == orig {
				t.Fatal("the edit changed nothing")
			}
			opts := Options{Template: rfcTemplate}
			before, after := opts.Check([]byte(orig)), opts.Check([]byte(edited))
			pb, _ := before.Pass(e.check)
			pa, _ := after.Pass(e.check)
			t.Logf("%s: %s %.3f → %.3f, score %.4f → %.4f", e.rfc, e.check, pb, pa, before.Score, after.Score)
			if !(pa < pb) {
				t.Errorf("%s not lowered: %.3f → %.3f\n%s", e.check, pb, pa, after)
			}
			if !(after.Score < before.Score) {
				t.Errorf("score not lowered: %.4f → %.4f", before.Score, after.Score)
			}
			switch e.check {
			case checkCrossReferences, checkDuplication:
				if pb != 1 {
					t.Errorf("the untouched RFC should pass %s in full: %.3f", e.check, pb)
				}
			}
		})
	}
}

// replaceProse rewrites every prose paragraph (lines outside code fences,
// headings, lists, tables and link definitions) word by word with pick.
func replaceProse(doc string, pick func() string) string {
	var out []string
	inFence := false
	word := regexp.MustCompile(`[A-Za-z]+`)
	for _, line := range strings.Split(doc, "\n") {
		tr := strings.TrimSpace(line)
		if strings.HasPrefix(tr, "```") {
			inFence = !inFence
		}
		if inFence || tr == "" || strings.ContainsAny(tr[:1], "#`-*+|[>0123456789") || strings.HasPrefix(line, "    ") {
			out = append(out, line)
			continue
		}
		out = append(out, word.ReplaceAllStringFunc(line, func(string) string { return pick() }))
	}
	return strings.Join(out, "\n")
}

// TestContentBlindness replaces an RFC's prose with random words: drawn
// uniformly from the document's own vocabulary, and drawn by frequency
// (its words shuffled). Both must lower fluency and the score.
func TestContentBlindness(t *testing.T) {
	orig := readRFC(t, "3191-debugger-visualizer.md")
	var toks []string
	types := map[string]bool{}
	var vocab []string
	for _, w := range regexp.MustCompile(`[A-Za-z]+`).FindAllString(orig, -1) {
		toks = append(toks, w)
		if !types[strings.ToLower(w)] {
			types[strings.ToLower(w)] = true
			vocab = append(vocab, strings.ToLower(w))
		}
	}
	opts := Options{Template: rfcTemplate}
	before := opts.Check([]byte(orig))
	if p, _ := before.Pass(checkFluency); p != 1 {
		t.Fatalf("the untouched RFC fails fluency: %v", p)
	}
	// Shuffled words keep English's share of function words; only their
	// broken grammar (article misfits) gives them away, in part.
	for _, c := range []struct {
		name       string
		pool       []string
		maxFluency float64
	}{{"uniform over the vocabulary", vocab, 0.2}, {"shuffled words", toks, 0.8}} {
		rng := rand.New(rand.NewPCG(1, 2))
		edited := replaceProse(orig, func() string { return c.pool[rng.IntN(len(c.pool))] })
		after := opts.Check([]byte(edited))
		pa, _ := after.Pass(checkFluency)
		t.Logf("%s: fluency 1 → %.3f, score %.4f → %.4f", c.name, pa, before.Score, after.Score)
		if pa > c.maxFluency || after.Score >= before.Score {
			t.Errorf("%s: fluency %.3f, score %.4f → %.4f", c.name, pa, before.Score, after.Score)
		}
	}
}
