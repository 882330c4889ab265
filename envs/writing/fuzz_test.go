package writing

import (
	"reflect"
	"testing"
)

// FuzzParseRFC feeds arbitrary Markdown to the parser a user's
// env.params.corpus_dir goes through: never a panic, the same result every
// time, and a parsed RFC whose units, token counts and dependency indices
// hold together (the env indexes them without checks).
func FuzzParseRFC(f *testing.F) {
	f.Add(miniRFC)
	f.Add("")
	f.Add("# Summary\n\n## Motivation\n```\n## Drawbacks\n")
	f.Add("Summary\n=======\n\nMotivation\n----------\n")
	if b, err := shipped.ReadFile("corpus/2582-raw-reference-mir-operator.md"); err == nil {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, src string) {
		r, err := parseRFC("1-fuzz", src)
		r2, err2 := parseRFC("1-fuzz", src)
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(r, r2) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(r.Units) == 0 {
			t.Fatal("parsed with no units")
		}
		tokens := 0
		seen := map[int]bool{}
		for k, u := range r.Units {
			tokens += u.Tokens
			seen[u.Section] = true
			if u.Level != 2 && u.Level != 3 {
				t.Fatalf("unit %d: level %d", k, u.Level)
			}
			if len(u.Headings) == 0 || u.Source == "" {
				t.Fatalf("unit %d: no heading or no source", k)
			}
			for _, d := range u.DependsOn {
				if d < 0 || d >= len(r.Units) || d == k {
					t.Fatalf("unit %d depends on %d (of %d units)", k, d, len(r.Units))
				}
			}
			for _, d := range u.BuildsOn {
				if d < 0 || d >= len(r.Units) {
					t.Fatalf("unit %d builds on %d", k, d)
				}
			}
			for _, ref := range u.Refs {
				if ref.Target < 0 || ref.Target >= len(r.Units) || ref.Heading < 0 || ref.Heading >= len(r.Units[ref.Target].Headings) {
					t.Fatalf("unit %d: reference %+v out of range", k, ref)
				}
			}
			for _, ti := range append(append([]int(nil), u.Introduces...), u.Uses...) {
				if ti < 0 || ti >= len(r.Terms) {
					t.Fatalf("unit %d: term %d of %d", k, ti, len(r.Terms))
				}
			}
		}
		if tokens != r.Tokens {
			t.Fatalf("tokens %d, units sum to %d", r.Tokens, tokens)
		}
		for s := range templateSections {
			if !seen[s] {
				t.Fatalf("template section %d has no unit", s)
			}
		}
	})
}
