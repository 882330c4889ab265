package rewards

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/rewards/consistency"
)

const wcDoc = `# A title

## Summary

We write one summary.

## Motivation

We have a reason.

- one
- one and a half
* two

## Guide-level explanation

Text.

## Reference-level explanation

Text.

## Drawbacks

Text.

## Rationale and alternatives

Text.

## Prior art

Text.

## Unresolved questions

Text.

## Future possibilities

Text.
`

func TestWritingConsistency(t *testing.T) {
	r, err := core.LoadReward(context.Background(), core.SourceRef{Scheme: "builtin", Path: "writing.consistency"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != "writing.consistency" || len(r.Components()) != 1 || r.Components()[0] != "quality" {
		t.Fatalf("name %q components %v", r.Name(), r.Components())
	}
	ep := &core.Episode{Artifacts: map[string][]byte{"document.md": []byte(wcDoc)}}
	comp, metrics, err := r.Score(ep)
	if err != nil {
		t.Fatal(err)
	}
	want := consistency.Check([]byte(wcDoc))
	if comp["quality"] != want.Score || metrics["consistency"] != want.Score {
		t.Fatalf("quality %v consistency %v, want %v", comp["quality"], metrics["consistency"], want.Score)
	}
	if want.Score >= 1 || want.Score <= 0.5 {
		t.Fatalf("test document should be mildly inconsistent, scored %v", want.Score)
	}
	for _, c := range want.Checks {
		if got, ok := metrics["consistency."+c.Name]; !ok || got != c.Pass {
			t.Errorf("metric consistency.%s = %v, %v; want %v", c.Name, got, ok, c.Pass)
		}
	}
	// The content checks are metrics of their own, for eval tables.
	for _, name := range []string{"terminology", "cross_references", "duplication", "fluency"} {
		if _, ok := metrics["consistency."+name]; !ok {
			t.Errorf("metric consistency.%s missing", name)
		}
	}
	dup := strings.Replace(wcDoc, "Text.\n\n## Drawbacks", "We write one summary of the whole design in plain words here.\n\n## Drawbacks", 1)
	dup = strings.Replace(dup, "Text.\n\n## Prior art", "We write one summary of the whole design in plain words here.\n\n## Prior art", 1)
	_, md, err := r.Score(&core.Episode{Artifacts: map[string][]byte{"document.md": []byte(dup)}})
	if err != nil {
		t.Fatal(err)
	}
	if md["consistency.duplication"] >= 1 || md["consistency"] >= metrics["consistency"] {
		t.Errorf("a sentence repeated in another section: duplication %v, consistency %v → %v",
			md["consistency.duplication"], metrics["consistency"], md["consistency"])
	}
	if p := metrics["consistency.bullet_style"]; math.Abs(p-1.0/3) > 1e-12 {
		t.Errorf("bullet_style %v, want 1/3", p)
	}
}

func TestWritingConsistencyErrors(t *testing.T) {
	r, err := NewWritingConsistency(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = r.Score(&core.Episode{Artifacts: map[string][]byte{"doc.md": nil}})
	if err == nil || !strings.Contains(err.Error(), `"document.md"`) {
		t.Fatalf("missing artifact: err %v, want one naming document.md", err)
	}
	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"readability": 3}, "readability"},
		{map[string]any{"readability_bound": "high"}, "readability_bound"},
		{map[string]any{"readability_bound": -1}, "readability_bound"},
		{map[string]any{"min_section_words": 0}, "min_section_words"},
	} {
		if _, err := NewWritingConsistency(c.params); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("params %v: err %v, want one naming %q", c.params, err, c.want)
		}
	}
}

func TestWritingConsistencyReadabilityBound(t *testing.T) {
	long := strings.Replace(wcDoc, "We have a reason.", strings.Repeat("Notwithstanding institutionalized interoperability considerations, organizational responsibilities necessitate comprehensive evaluation ", 3)+"unquestionably.", 1)
	long = strings.Replace(long, "We write one summary.", strings.Repeat("We write a short line. It is easy. ", 5), 1)
	ep := &core.Episode{Artifacts: map[string][]byte{"document.md": []byte(long)}}
	strict, err := NewWritingConsistency(map[string]any{"readability_bound": 2.0})
	if err != nil {
		t.Fatal(err)
	}
	loose, err := NewWritingConsistency(map[string]any{"readability_bound": 100.0})
	if err != nil {
		t.Fatal(err)
	}
	_, ms, _ := strict.Score(ep)
	_, ml, _ := loose.Score(ep)
	if !(ms["consistency.readability"] < 1 && ml["consistency.readability"] == 1) {
		t.Fatalf("readability with bound 2: %v, with bound 100: %v", ms["consistency.readability"], ml["consistency.readability"])
	}
}
