package consistency

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzCheck scores arbitrary text, as the reward does with whatever the
// LLM agents wrote: Check must not panic, every score must be a number in
// [0, 1], the report must list every check in order, and the same text
// must get the same report.
func FuzzCheck(f *testing.F) {
	// Real documents: the three shortest RFCs the writing env ships.
	for _, name := range []string{"2707-dotdot-patterns.md", "2992-cfg-target-abi.md", "2837-demote-apple-32bit.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "envs", "writing", "corpus", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"# Title\n\n## Summary\n\nWe keep one bullet marker.\n\n- one\n- two\n* three\n",
		"Title\n=====\n\nSummary\n-------\n\n> * _a_ **b** `c` __d__ *e*\n\n```go\n# not a heading\n```\n",
		"#\n##\t\n###### x ###\n    code\n1. one\n2) two\n\n[link](http://x) ![img](y) <a href=\"z\">",
	} {
		f.Add([]byte(s))
	}
	names := checkNames()
	f.Fuzz(func(t *testing.T, doc []byte) {
		r := Check(doc)
		in01 := func(v float64) bool { return v >= 0 && v <= 1 && !math.IsNaN(v) }
		if !in01(r.Score) || !in01(r.Coverage) {
			t.Fatalf("score %v, coverage %v: want both in [0, 1]", r.Score, r.Coverage)
		}
		if len(r.Checks) != len(names) {
			t.Fatalf("%d checks, want %d", len(r.Checks), len(names))
		}
		for i, c := range r.Checks {
			if c.Name != names[i] || !in01(c.Pass) || c.N < 0 {
				t.Fatalf("check %d: %+v; want %s with pass in [0, 1] and N ≥ 0", i, c, names[i])
			}
		}
		if again := Check(doc); !reflect.DeepEqual(r, again) {
			t.Fatalf("the same text scored differently:\n%v\n%v", r, again)
		}
	})
}
