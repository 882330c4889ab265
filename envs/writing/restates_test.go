package writing

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// restatesByLists is restates as it was first written, word lists and a
// fresh set per comparison: the oracle for the one with cached sets.
func restatesByLists(e *Env, k int, text string) int {
	words := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) })
	}
	jac := func(a, b []string) float64 {
		if len(a) == 0 || len(b) == 0 {
			return 0
		}
		sa, sb := map[string]bool{}, map[string]bool{}
		for _, w := range a {
			sa[w] = true
		}
		inter := 0
		for _, w := range b {
			if !sb[w] {
				sb[w] = true
				if sa[w] {
					inter++
				}
			}
		}
		return float64(inter) / float64(len(sa)+len(sb)-inter)
	}
	for _, j := range e.rfc.Units[k].BuildsOn {
		p := restatable(e.rfc.Units[j].Source)
		if p == "" {
			continue
		}
		for _, q := range strings.Split(text, "\n\n") {
			if jac(words(p), words(q)) >= 0.8 {
				return j
			}
		}
	}
	return -1
}

// TestRestatesMatchesItsDefinition checks restates against the plain
// definition on every unit of the shipped RFCs that builds on another,
// with texts that restate a dependency's paragraph whole, with words
// dropped (near the 0.8 threshold on either side), cut short, or not at
// all. It runs on the word sets that restates caches per RFC, so it also
// checks that one RFC's cache does not answer for another.
func TestRestatesMatchesItsDefinition(t *testing.T) {
	e := newEnv(t, oneTier(map[string]any{}))
	rng := rand.New(rand.NewPCG(5, 6))
	checked, found := 0, 0
	for ri := 0; ri < len(e.corpus); ri += 8 { // every eighth RFC keeps it under a second
		e.rfc = &e.corpus[ri]
		for k, u := range e.rfc.Units {
			for _, j := range u.BuildsOn {
				p := restatable(e.rfc.Units[j].Source)
				if p == "" {
					continue
				}
				ws := strings.Fields(p)
				texts := []string{u.Source, u.Source + "\n\n" + p, p[:len(p)/2] + "\n\n" + u.Source}
				for _, drop := range []float64{0.05, 0.1, 0.15, 0.2, 0.3} {
					var kept []string
					for _, w := range ws {
						if rng.Float64() >= drop {
							kept = append(kept, w)
						}
					}
					texts = append(texts, u.Source+"\n\n"+strings.Join(kept, " "))
				}
				for _, text := range texts {
					got, want := e.restates(k, text), restatesByLists(e, k, text)
					if got != want {
						t.Fatalf("%s unit %d: restates = %d, the definition says %d, for %q", e.rfc.Name, k, got, want, text)
					}
					checked++
					if want >= 0 {
						found++
					}
				}
			}
		}
	}
	if checked == 0 || found == 0 || found == checked {
		t.Fatalf("%d texts checked, %d restating: the test needs both kinds", checked, found)
	}
	t.Logf("%d texts checked, %d restating", checked, found)
}
