package restyle

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/envs/writing/internal/markdown"
)

func TestRespellAndRestylePerson(t *testing.T) {
	if got := Respell("Colors and behavior; color_space stays.", markdown.SpellingUK); got != "Colours and behaviour; color_space stays." {
		t.Errorf("Respell: %q", got)
	}
	cases := []struct {
		in   string
		to   markdown.Person
		want string
	}{
		{"We are sure our plan helps us.", markdown.PersonSingular, "I am sure my plan helps me."},
		{"I was told, and I think my idea is mine.", markdown.PersonPlural, "We were told, and we think our idea is ours."},
		{"Here I'm sure; the US and `we` stay.", markdown.PersonPlural, "Here we're sure; the US and `we` stay."},
		{"He said \"we lost\" and we left.", markdown.PersonSingular, "He said \"we lost\" and I left."},
	}
	for _, c := range cases {
		if got := Markdown(c.in, Style{Person: c.to}); got != c.want {
			t.Errorf("Markdown(%q, %s) = %q, want %q", c.in, c.to, got, c.want)
		}
	}
}

// TestRecase pins the heading cases the writers produce (the consistency
// checker's TestClassifyHeadingCase reads each as the case it was written
// in).
func TestRecase(t *testing.T) {
	for _, c := range []struct{ in, title, sentence string }{
		{"Rationale and alternatives", "Rationale and Alternatives", "Rationale and alternatives"},
		{"Guide-level explanation", "Guide-level Explanation", "Guide-level explanation"},
		{"Support for `cfg` in where clauses", "Support for `cfg` in Where Clauses", "Support for `cfg` in where clauses"},
		{"Prior art: the C++ way", "Prior Art: the C++ Way", "Prior art: the C++ way"},
	} {
		if got := ToTitleCase(c.in); got != c.title {
			t.Errorf("ToTitleCase(%q) = %q, want %q", c.in, got, c.title)
		}
		if got := ToSentenceCase(c.title); got != c.sentence {
			t.Errorf("ToSentenceCase(%q) = %q, want %q", c.title, got, c.sentence)
		}
	}
	if got := ToTitleCase("support for `cfg` in where clauses"); got != "Support for `cfg` in Where Clauses" {
		t.Errorf("ToTitleCase: %q", got)
	}
}

func TestBlankQuoted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"no quotes", "no quotes"},
		{`a "bc" d “e” "f`, "a " + strings.Repeat(" ", 4) + " d " + strings.Repeat(" ", 7) + ` "f`},
		{`"x"y"`, `   y"`},
	} {
		if got := blankQuoted(c.in); got != c.want {
			t.Errorf("blankQuoted(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Any byte string is some Markdown: rendering it never panics.
func TestGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("#*_-+`~=> \n\tab1.[]()<>|\\\"'I we colour\xff")
	st := Style{markdown.HeadingSetext, markdown.CaseTitle, markdown.BulletPlus, markdown.EmphasisUnderscore,
		markdown.StrongUnderscore, markdown.CodeIndented, markdown.SpellingUK, markdown.PersonSingular}
	for i := 0; i < 300; i++ {
		b := make([]byte, rng.IntN(400))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		Markdown(string(b), st)
	}
}
