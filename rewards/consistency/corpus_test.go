package consistency

import (
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
var rfcTemplate = &Template{Title: false, Sections: defaultTemplate.Sections}

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
		for _, c := range []string{checkSections, checkNonemptySections} {
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

// allRealRFCs returns every real RFC the project has: the full data set
// when present (minus its template), else the shipped corpus.
func allRealRFCs(t *testing.T) map[string]string {
	files, _ := filepath.Glob(filepath.Join(sharedDir, "[0-9]*.md"))
	if len(files) == 0 {
		return shippedRFCs(t)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "0000-") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// TestNewChecksOnRealRFCs measures the content checks (terminology,
// cross_references, duplication) on every real RFC as written: most must
// pass in full. Run with -v to see the distribution and every finding.
func TestNewChecksOnRealRFCs(t *testing.T) {
	docs := allRealRFCs(t)
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	sort.Strings(names)
	per := map[string][]float64{}
	for _, n := range names {
		r := Options{Template: rfcTemplate}.Check([]byte(docs[n]))
		per["score"] = append(per["score"], r.Score)
		for _, c := range r.Checks {
			per[c.Name] = append(per[c.Name], c.Pass)
			switch c.Name {
			case checkTerminology, checkCrossReferences, checkDuplication, checkFluency:
				if c.Pass < 1 {
					t.Logf("%s %s %.3f: %s", n, c.Name, c.Pass, c.Detail)
				}
			}
		}
	}
	for _, c := range append([]string{"score"}, checkNames()...) {
		v := per[c]
		full := 0
		for _, x := range v {
			if x == 1 {
				full++
			}
		}
		d := distribution(v)
		t.Logf("%-18s mean %.3f min %.3f median %.3f; %d of %d at 1", c, d.mean, d.min, d.median, full, len(v))
		// Terminology flags hyphenation variants real authors leave in
		// (runtime / run-time): at least half of the RFCs must pass it in
		// full; three quarters for the other two.
		switch c {
		case checkTerminology:
			if 2*full < len(v) {
				t.Errorf("%s passes in full on only %d of %d real RFCs", c, full, len(v))
			}
		case checkCrossReferences, checkDuplication, checkFluency:
			if 4*full < 3*len(v) {
				t.Errorf("%s passes in full on only %d of %d real RFCs", c, full, len(v))
			}
		}
	}
}
