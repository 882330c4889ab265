package markdown

import (
	"strings"
	"testing"
)

func TestSpellingAndPersonWords(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range spellingPairs {
		for _, w := range p {
			if seen[w] {
				t.Errorf("%q appears twice in spellingPairs", w)
			}
			seen[w] = true
		}
		if v, ok := SpellingOfWord(strings.ToUpper(p[0][:1]) + p[0][1:]); !ok || v != SpellingUS {
			t.Errorf("SpellingOfWord(%q) = %v, %v", p[0], v, ok)
		}
		if v, ok := SpellingOfWord(p[1]); !ok || v != SpellingUK {
			t.Errorf("SpellingOfWord(%q) = %v, %v", p[1], v, ok)
		}
	}
	if len(spellingPairs) < 30 {
		t.Errorf("only %d spelling pairs", len(spellingPairs))
	}
	for _, w := range []string{"license", "program", "practice", "color_space"} {
		if _, ok := SpellingOfWord(w); ok {
			t.Errorf("%q must not be a spelling word", w)
		}
	}
	for p, ws := range map[Person][]string{
		PersonPlural:   {"we", "us", "our", "ours", "ourselves", "we're", "we've", "we'll", "we'd"},
		PersonSingular: {"I", "me", "my", "mine", "myself", "I'm", "I've", "I'll", "I'd"},
	} {
		for _, w := range ws {
			if got, ok := PersonOf(w); !ok || got != p {
				t.Errorf("PersonOf(%q) = %v, %v; want %v", w, got, ok, p)
			}
		}
	}
	for _, w := range []string{"US", "i", "Mine2", "user"} {
		if _, ok := PersonOf(w); ok {
			t.Errorf("PersonOf(%q) must be false", w)
		}
	}
}
