package consistency

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The shipped corpus of the writing env, and the full data set it was
// taken from (absent outside the project's machines: those tests skip).
const (
	shippedDir = "../../envs/writing/corpus"
	sharedDir  = "../../../shared/data/rust-rfcs"
)

// rfcTemplate is the default template without the title requirement: RFC
// files keep their title outside the text.
var rfcTemplate = &Template{Title: false, Sections: DefaultTemplate.Sections}

func shippedRFCs(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(shippedDir, "[0-9]*.md"))
	if err != nil || len(files) < 30 {
		t.Fatalf("shipped corpus: %d files, %v", len(files), err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

type dist struct{ min, median, mean, max float64 }

func distribution(v []float64) dist {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := 0.0
	for _, x := range s {
		m += x
	}
	return dist{s[0], s[len(s)/2], m / float64(len(s)), s[len(s)-1]}
}

// checkRealRFCs scores real RFCs as they are. They are not perfectly
// consistent (authors mix bullet markers, heading case and "I"/"we"), but
// a very low score would mean a check misreads real Markdown.
func checkRealRFCs(t *testing.T, docs map[string]string) {
	var scores []float64
	for name, doc := range docs {
		r := Options{Template: rfcTemplate}.Check([]byte(doc))
		scores = append(scores, r.Score)
		if r.Score < 0.75 {
			t.Errorf("%s scored %.3f:\n%s", name, r.Score, r)
		}
		for _, c := range []string{CheckSections, CheckNonemptySections} {
			if p, _ := r.Pass(c); p != 1 {
				t.Errorf("%s: %s = %v; the corpus holds full-template RFCs only", name, c, p)
			}
		}
	}
	d := distribution(scores)
	t.Logf("%d RFCs: min %.3f median %.3f mean %.3f max %.3f", len(scores), d.min, d.median, d.mean, d.max)
	if d.median < 0.9 {
		t.Errorf("median %.3f < 0.9", d.median)
	}
}

func TestShippedRFCs(t *testing.T) {
	checkRealRFCs(t, shippedRFCs(t))
}

func TestHeldOutRFCs(t *testing.T) {
	list, err := os.ReadFile(filepath.Join(shippedDir, "HELDOUT.txt"))
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Fields(string(list))
	if len(names) != 15 {
		t.Fatalf("HELDOUT.txt lists %d files, want 15", len(names))
	}
	shipped := shippedRFCs(t)
	docs := map[string]string{}
	for _, n := range names {
		if _, dup := shipped[n]; dup {
			t.Errorf("held-out %s is shipped", n)
		}
		b, err := os.ReadFile(filepath.Join(sharedDir, n))
		if os.IsNotExist(err) {
			t.Skipf("held-out data not here: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		docs[n] = string(b)
	}
	checkRealRFCs(t, docs)
}

var variants = struct {
	h    []HeadingStyle
	c    []HeadingCase
	b    []BulletMarker
	e, s []EmphasisMarker
	code []CodeStyle
	sp   []Spelling
	p    []Person
}{
	[]HeadingStyle{HeadingATX, HeadingSetext, HeadingATXClosed},
	[]HeadingCase{CaseSentence, CaseTitle},
	[]BulletMarker{BulletDash, BulletStar, BulletPlus},
	[]EmphasisMarker{EmphasisStar, EmphasisUnderscore},
	[]EmphasisMarker{StrongStar, StrongUnderscore},
	[]CodeStyle{CodeBacktick, CodeTilde, CodeIndented},
	[]Spelling{SpellingUS, SpellingUK},
	[]Person{PersonPlural, PersonSingular},
}

// distinctStyle returns author k's habits: four authors (k = 0…3) differ
// pairwise in most habits, as differently trained writers would.
func distinctStyle(k int) Style {
	v := variants
	return Style{v.h[k%2], v.c[k%2], v.b[k%3], v.e[k%2], v.s[(k/2)%2], v.code[(k/2+k)%2], v.sp[(k+1)/2%2], v.p[k%2]}
}

func randomStyle(r *rand.Rand) Style {
	v := variants
	return Style{v.h[r.IntN(3)], v.c[r.IntN(2)], v.b[r.IntN(3)], v.e[r.IntN(2)], v.s[r.IntN(2)],
		v.code[r.IntN(3)], v.sp[r.IntN(2)], v.p[r.IntN(2)]}
}

// splitH2 splits md before every H1/H2 heading outside code.
func splitH2(md string) []string {
	d := parse(md, noSections)
	lines := splitLines(md)
	var parts []string
	start := 0
	for i, li := range d.lines {
		if (li.kind == lkATX && li.level <= 2 || li.kind == lkSetextText) && i > start {
			parts = append(parts, strings.Join(lines[start:i], "\n")+"\n")
			start = i
		}
	}
	return append(parts, strings.Join(lines[start:], "\n")+"\n")
}

// assemble gives a title and the sections of md to the authors in turn,
// each writing in their own style.
func assemble(md, title string, authors []Style) string {
	var sb strings.Builder
	sb.WriteString(Restyle("# "+title+"\n\n", authors[0]))
	for i, p := range splitH2(md) {
		sb.WriteString(Restyle(p, authors[i%len(authors)]))
		sb.WriteString("\n")
	}
	return sb.String()
}

var styleChecks = []string{CheckHeadingStyle, CheckHeadingCase, CheckBulletStyle, CheckEmphasisStyle,
	CheckStrongStyle, CheckCodeStyle, CheckSpelling, CheckPerson}

// TestAuthorsOnRealText measures what the writing task needs: real RFC
// text rendered by one author (≥ 0.97), by four authors in one house
// style (≥ 0.98) and by four authors with their own habits (≤ 0.85).
func TestAuthorsOnRealText(t *testing.T) {
	docs := shippedRFCs(t)
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	sort.Strings(names)
	rng := rand.New(rand.NewPCG(42, 7))
	house := distinctStyle(0)
	four := []Style{distinctStyle(0), distinctStyle(1), distinctStyle(2), distinctStyle(3)}
	var single, houses, mixed, randomMixed []float64
	for _, n := range names {
		md, title := docs[n], "RFC "+strings.TrimSuffix(n, ".md")
		one := randomStyle(rng)
		r := Check([]byte(assemble(md, title, []Style{one})))
		single = append(single, r.Score)
		for _, c := range styleChecks {
			if p, _ := r.Pass(c); p != 1 {
				t.Errorf("%s restyled in %+v: %s = %.3f, want 1", n, one, c, p)
			}
		}
		h := Check([]byte(assemble(md, title, []Style{house, house, house, house})))
		houses = append(houses, h.Score)
		m := Check([]byte(assemble(md, title, four)))
		mixed = append(mixed, m.Score)
		if m.Score > 0.85 {
			t.Errorf("%s by four authors with different habits scored %.3f > 0.85:\n%s", n, m.Score, m)
		}
		rs := []Style{randomStyle(rng), randomStyle(rng), randomStyle(rng), randomStyle(rng)}
		randomMixed = append(randomMixed, Check([]byte(assemble(md, title, rs))).Score)
	}
	for _, x := range []struct {
		name string
		v    []float64
		lo   float64 // minimum mean
		hi   float64 // maximum mean
	}{
		{"one author", single, 0.98, 1},
		{"house style", houses, 0.98, 1},
		{"four distinct authors", mixed, 0, 0.75},
		{"four random authors", randomMixed, 0, 0.85},
	} {
		d := distribution(x.v)
		t.Logf("%-22s min %.3f median %.3f mean %.3f max %.3f", x.name, d.min, d.median, d.mean, d.max)
		if d.mean < x.lo || d.mean > x.hi {
			t.Errorf("%s: mean %.3f outside [%.2f, %.2f]", x.name, d.mean, x.lo, x.hi)
		}
	}
}
