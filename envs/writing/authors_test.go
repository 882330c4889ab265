package writing

import (
	"io/fs"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/envs/writing/internal/markdown"
	"github.com/troupe-dev/troupe/envs/writing/internal/restyle"
)

// variants are every habit's options, including two the env never draws
// (closed ATX headings and indented code).
var variants = struct {
	h    []markdown.HeadingStyle
	c    []markdown.HeadingCase
	b    []markdown.BulletMarker
	e, s []markdown.EmphasisMarker
	code []markdown.CodeStyle
	sp   []markdown.Spelling
	p    []markdown.Person
}{
	[]markdown.HeadingStyle{markdown.HeadingATX, markdown.HeadingSetext, markdown.HeadingATXClosed},
	[]markdown.HeadingCase{markdown.CaseSentence, markdown.CaseTitle},
	[]markdown.BulletMarker{markdown.BulletDash, markdown.BulletStar, markdown.BulletPlus},
	[]markdown.EmphasisMarker{markdown.EmphasisStar, markdown.EmphasisUnderscore},
	[]markdown.EmphasisMarker{markdown.StrongStar, markdown.StrongUnderscore},
	[]markdown.CodeStyle{markdown.CodeBacktick, markdown.CodeTilde, markdown.CodeIndented},
	[]markdown.Spelling{markdown.SpellingUS, markdown.SpellingUK},
	[]markdown.Person{markdown.PersonPlural, markdown.PersonSingular},
}

// distinctStyle returns author k's habits: four authors (k = 0…3) differ
// pairwise in most habits, as differently trained writers would.
func distinctStyle(k int) restyle.Style {
	v := variants
	return restyle.Style{Heading: v.h[k%2], Case: v.c[k%2], Bullet: v.b[k%3], Emphasis: v.e[k%2], Strong: v.s[(k/2)%2],
		Code: v.code[(k/2+k)%2], Spelling: v.sp[(k+1)/2%2], Person: v.p[k%2]}
}

func randomStyle(r *rand.Rand) restyle.Style {
	v := variants
	return restyle.Style{Heading: v.h[r.IntN(3)], Case: v.c[r.IntN(2)], Bullet: v.b[r.IntN(3)], Emphasis: v.e[r.IntN(2)],
		Strong: v.s[r.IntN(2)], Code: v.code[r.IntN(3)], Spelling: v.sp[r.IntN(2)], Person: v.p[r.IntN(2)]}
}

// splitH2 splits md before every H1/H2 heading outside code.
func splitH2(md string) []string {
	lines := strings.Split(strings.TrimSuffix(md, "\n"), "\n")
	var parts []string
	start := 0
	for i, li := range markdown.Parse(md, markdown.NoSections).Lines {
		if (li.Kind == markdown.LineATX && li.Level <= 2 || li.Kind == markdown.LineSetextText) && i > start {
			parts = append(parts, strings.Join(lines[start:i], "\n")+"\n")
			start = i
		}
	}
	return append(parts, strings.Join(lines[start:], "\n")+"\n")
}

// assemble gives a title and the sections of md to the authors in turn,
// each writing in their own style.
func assemble(md, title string, authors []restyle.Style) string {
	var sb strings.Builder
	sb.WriteString(restyle.Markdown("# "+title+"\n\n", authors[0]))
	for i, p := range splitH2(md) {
		sb.WriteString(restyle.Markdown(p, authors[i%len(authors)]))
		sb.WriteString("\n")
	}
	return sb.String()
}

// TestAuthorsOnRealText measures what the writing task needs of the
// "writing.consistency" reward, which shares no definition with the
// writers' renderer: whole shipped RFCs (as the files are, not cut into
// units) rendered by one author (≥ 0.9 on average), by four authors in
// one house style (≥ 0.9) and by four authors with their own habits
// (≤ 0.9 each, ≤ 0.8 on average), so that habits the house style does not
// unify cost clearly more than the checker's own disagreements with the
// renderer.
func TestAuthorsOnRealText(t *testing.T) {
	files, err := fs.Glob(shipped, "corpus/[0-9]*.md")
	if err != nil || len(files) < 30 {
		t.Fatalf("shipped corpus: %d files, %v", len(files), err)
	}
	rng := rand.New(rand.NewPCG(42, 7))
	house := distinctStyle(0)
	four := []restyle.Style{distinctStyle(0), distinctStyle(1), distinctStyle(2), distinctStyle(3)}
	var single, houses, mixed, randomMixed []float64
	for _, f := range files { // in name order
		b, err := fs.ReadFile(shipped, f)
		if err != nil {
			t.Fatal(err)
		}
		n := path.Base(f)
		md, title := string(b), "RFC "+strings.TrimSuffix(n, ".md")
		one := randomStyle(rng)
		r := consistencyOf(t, []byte(assemble(md, title, []restyle.Style{one})))
		single = append(single, r["consistency"])
		h := consistencyOf(t, []byte(assemble(md, title, []restyle.Style{house, house, house, house})))
		houses = append(houses, h["consistency"])
		m := consistencyOf(t, []byte(assemble(md, title, four)))
		mixed = append(mixed, m["consistency"])
		if m["consistency"] > 0.9 {
			t.Errorf("%s by four authors with different habits scored %.3f > 0.9: %v", n, m["consistency"], m)
		}
		rs := []restyle.Style{randomStyle(rng), randomStyle(rng), randomStyle(rng), randomStyle(rng)}
		randomMixed = append(randomMixed, consistencyOf(t, []byte(assemble(md, title, rs)))["consistency"])
	}
	for _, x := range []struct {
		name string
		v    []float64
		lo   float64 // minimum mean
		hi   float64 // maximum mean
	}{
		{"one author", single, 0.9, 1},
		{"house style", houses, 0.9, 1},
		{"four distinct authors", mixed, 0, 0.8},
		{"four random authors", randomMixed, 0, 0.85},
	} {
		s := slices.Sorted(slices.Values(x.v))
		sum := 0.0
		for _, v := range s {
			sum += v
		}
		mean := sum / float64(len(s))
		t.Logf("%-22s min %.3f median %.3f mean %.3f max %.3f", x.name, s[0], s[len(s)/2], mean, s[len(s)-1])
		if mean < x.lo || mean > x.hi {
			t.Errorf("%s: mean %.3f outside [%.2f, %.2f]", x.name, mean, x.lo, x.hi)
		}
	}
}
