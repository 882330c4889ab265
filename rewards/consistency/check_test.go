package consistency

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-dev/troupe/internal/markdown"
)

// perfectDoc follows the default template in one style throughout: ATX
// headings in sentence case, "-" bullets, *emphasis*, **strong**, ```
// fences, US spelling and "we". Every "one style" check has evidence.
const perfectDoc = `# RFC 9999: Colored output for the build tool

## Summary

We propose a flag that lets the build tool print colored output on every
terminal. The flag is *optional* and keeps the current behavior by default.
It makes long build logs easier to read for the people who use them daily.

## Motivation

Our users read long build logs every day. Without color, errors and warnings
look the same, and it is hard to find the line that matters. We have heard
this request many times in the issue tracker and on the forum.

- Errors are hard to spot in a long log.
- Warnings look like normal progress messages.
- New users do not know where to look first.

## Guide-level explanation

We explain the flag with a short example. You pass the flag once and the
tool prints errors in red and warnings in yellow. The output is **only**
colored when the terminal supports it, so pipes and files stay plain text.

` + "```" + `
build --color=always
` + "```" + `

### Choosing a mode

There are three modes for the flag. We describe each of them here in turn,
and we show which one the tool picks when the user gives no mode at all on
the command line.

- The first mode always prints color codes.
- The second mode never prints them.
- The third mode decides from the terminal type.

## Reference-level explanation

The flag takes one of three values. We read it before any other option and
store it in the shared settings. Each part of the tool asks the settings
whether to print color codes, so the behavior is the same everywhere.

` + "```" + `
enum ColorChoice { Always, Never, Auto }
` + "```" + `

## Drawbacks

The flag adds one more option that users must learn. We also need to test
the output on many terminals, which costs time in our release process. Some
terminals report their abilities in ways that are hard to detect well.

## Rationale and alternatives

We considered an environment variable instead of a flag. A variable is easy
to forget and hard to discover, so we prefer a flag that shows up in the
help text. We also looked at a config file, but that is too heavy here.

## Prior art

Many tools already offer the same kind of flag. The version control tool we
all use has a color setting with the same three modes, and our users know it
well. We follow its names so that nothing here is new to them at all.

## Unresolved questions

We have not decided which colors to use for notes and help messages. We also
need to decide whether the default should change in a later release, once
the flag has been in use for some time and we know more about it.

## Future possibilities

Later we could let users organize their own color themes in a config file.
We could also **optimize** the output for screen readers, which would help
people who cannot see colors well, and make the tool *nicer* for everyone.
`

func mustScore(t *testing.T, doc string) Report {
	t.Helper()
	r := Check([]byte(doc))
	if r.Score < 0 || r.Score > 1 || math.IsNaN(r.Score) {
		t.Fatalf("score %v out of [0,1]", r.Score)
	}
	if len(r.Checks) != len(CheckNames()) {
		t.Fatalf("%d checks, want %d", len(r.Checks), len(CheckNames()))
	}
	for i, c := range r.Checks {
		if c.Name != CheckNames()[i] {
			t.Fatalf("check %d is %q, want %q", i, c.Name, CheckNames()[i])
		}
		if c.Pass < 0 || c.Pass > 1 {
			t.Fatalf("check %s pass %v out of [0,1]", c.Name, c.Pass)
		}
	}
	return r
}

func TestPerfectDocument(t *testing.T) {
	r := mustScore(t, perfectDoc)
	if r.Score != 1 {
		t.Fatalf("perfect document scored %v:\n%s", r.Score, r)
	}
	// Every check must have had something to judge, or the break-one
	// tests below would prove nothing.
	for _, c := range r.Checks {
		if c.N == 0 {
			t.Errorf("check %s judged nothing: %s", c.Name, c.Detail)
		}
	}
	want := map[string]string{
		CheckHeadingStyle: "atx", CheckHeadingCase: "sentence", CheckBulletStyle: "-",
		CheckEmphasisStyle: "*", CheckStrongStyle: "**", CheckCodeStyle: "backtick",
		CheckSpelling: "us", CheckPerson: "we",
	}
	for _, c := range r.Checks {
		if w, ok := want[c.Name]; ok && c.Majority != w {
			t.Errorf("check %s majority %q, want %q", c.Name, c.Majority, w)
		}
	}
}

// replaceOnce replaces the first old in s with new and fails if old is absent.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("test document lacks %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

func TestBreakOneCheckAtATime(t *testing.T) {
	cases := []struct {
		check  string
		mutate func(t *testing.T, s string) string
	}{
		{CheckTitle, func(t *testing.T, s string) string {
			return s + "\n# Appendix\n\nMore text here.\n"
		}},
		{CheckSections, func(t *testing.T, s string) string {
			// Swap Drawbacks and Prior art.
			s = replaceOnce(t, s, "## Drawbacks", "## TMP")
			s = replaceOnce(t, s, "## Prior art", "## Drawbacks")
			return replaceOnce(t, s, "## TMP", "## Prior art")
		}},
		{CheckNonemptySections, func(t *testing.T, s string) string {
			i := strings.Index(s, "## Drawbacks\n")
			j := strings.Index(s, "## Rationale and alternatives")
			return s[:i] + "## Drawbacks\n\n" + s[j:]
		}},
		{CheckHeadingLevels, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "### Choosing a mode", "#### Choosing a mode")
		}},
		{CheckHeadingStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "## Prior art\n", "Prior art\n---------\n")
		}},
		{CheckHeadingCase, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "### Choosing a mode", "### Choosing A Mode")
		}},
		{CheckBulletStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "- Warnings look", "* Warnings look")
		}},
		{CheckEmphasisStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "*optional*", "_optional_")
		}},
		{CheckStrongStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "**only**", "__only__")
		}},
		{CheckCodeStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "```\nbuild --color=always\n```", "~~~\nbuild --color=always\n~~~")
		}},
		{CheckSpelling, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "keeps the current behavior", "keeps the current behaviour")
		}},
		{CheckPerson, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "We also need to test", "I also need to test")
		}},
		{CheckReadability, func(t *testing.T, s string) string {
			i := strings.Index(s, "## Drawbacks\n")
			j := strings.Index(s, "## Rationale and alternatives")
			return s[:i] + "## Drawbacks\n\n" + strings.Repeat("Institutionalized interoperability considerations notwithstanding, "+
				"organizational responsibilities necessitate comprehensive evaluation, ", 4) + "unquestionably.\n\n" + s[j:]
		}},
	}
	for _, c := range cases {
		t.Run(c.check, func(t *testing.T) {
			doc := c.mutate(t, perfectDoc)
			r := mustScore(t, doc)
			for _, ch := range r.Checks {
				switch {
				case ch.Name == c.check && ch.Pass >= 1:
					t.Errorf("%s not lowered: %s", ch.Name, ch.Detail)
				case ch.Name != c.check && ch.Pass != 1:
					t.Errorf("%s lowered to %.3f too: %s", ch.Name, ch.Pass, ch.Detail)
				}
			}
			if r.Score >= 1 {
				t.Errorf("score not lowered:\n%s", r)
			}
		})
	}
}

func TestOneStrayCostsLittle(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(perfectDoc)
	sb.WriteString("\n## Appendix\n\n")
	for i := 0; i < 38; i++ {
		sb.WriteString("- an item\n")
	}
	sb.WriteString("* a stray item\n")
	r := mustScore(t, sb.String())
	p, _ := r.Pass(CheckBulletStyle)
	// 44 dashes and one star: 2·44/45 − 1.
	if want := 2*44.0/45 - 1; math.Abs(p-want) > 1e-12 {
		t.Fatalf("bullet_style %v, want %v", p, want)
	}
	if r.Score < 0.99 {
		t.Fatalf("one stray bullet among 45 cost too much: %v", r.Score)
	}
}

func TestCodeIsIgnored(t *testing.T) {
	// Code in the document's own fence style, full of every inconsistency.
	noise := "```\n" + `# Not A Heading Of Mine
Setext Lookalike
================
* star bullet
+ plus bullet
_underscore emphasis_ and __underscore strong__
I think my colour and behaviour are organised.
    ~~~
    indented tilde
    ~~~
` + "```\n"
	doc := replaceOnce(t, perfectDoc, "## Drawbacks\n", noise+"\n## Drawbacks\n")
	// Inline code spans too.
	doc = replaceOnce(t, doc, "Our users read long build logs",
		"Our users read `I colour _my_ * logs` and ``__my__ behaviour`` build logs")
	r := mustScore(t, doc)
	if r.Score != 1 {
		t.Fatalf("code was not ignored:\n%s", r)
	}
	// An indented code block is code too; in a document whose only code
	// style is indentation it is consistent.
	ind := strings.ReplaceAll(perfectDoc, "```\nbuild --color=always\n```", "    build --color=always\n    # I colour _my_ logs\n    * x")
	ind = strings.ReplaceAll(ind, "```\nenum ColorChoice { Always, Never, Auto }\n```", "    enum ColorChoice { Always, Never, Auto }")
	r = mustScore(t, ind)
	if r.Score != 1 {
		t.Fatalf("indented code was not ignored:\n%s", r)
	}
	if c := r.Checks[9]; c.Majority != string(CodeIndented) || c.N != 2 {
		t.Fatalf("code_style: %+v, want 2 indented blocks", c)
	}
}

func TestQuotesAreIgnoredForPersonAndSpelling(t *testing.T) {
	doc := replaceOnce(t, perfectDoc, "We have heard\nthis request",
		"One user wrote \"I hate the colour of my logs\".\n\n> I organised my colours myself.\n\nWe have heard\nthis request")
	r := mustScore(t, doc)
	if r.Score != 1 {
		t.Fatalf("quoted text counted:\n%s", r)
	}
}

func TestEmptyAndGarbage(t *testing.T) {
	if r := mustScore(t, ""); r.Score != 0 || r.Coverage != 0 {
		t.Fatalf("empty document: %v", r)
	}
	// Style without the template's sections scores low whatever its style.
	if r := mustScore(t, "# Title\n\nSome text in one style.\n"); r.Score > 0.01 {
		t.Fatalf("document without sections scored %v", r.Score)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("#*_-+`~=> \n\tab1.[]()<>|\\\"'I we colour\xff")
	for i := 0; i < 300; i++ {
		b := make([]byte, rng.IntN(400))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		mustScore(t, string(b)) // must not panic, and stays in range
	}
}

func TestDeterministicAndConcurrent(t *testing.T) {
	first := Check([]byte(perfectDoc + "\n* stray\n\n_x_ colour I\n"))
	var wg sync.WaitGroup
	results := make([]Report, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = Check([]byte(perfectDoc + "\n* stray\n\n_x_ colour I\n"))
		}()
	}
	wg.Wait()
	for _, r := range results {
		if !reflect.DeepEqual(r, first) {
			t.Fatalf("reports differ:\n%s\n%s", r, first)
		}
	}
}

func TestTemplateOptions(t *testing.T) {
	noTitle := replaceOnce(t, perfectDoc, "# RFC 9999: Colored output for the build tool\n", "")
	if p, _ := Check([]byte(noTitle)).Pass(CheckTitle); p != 0 {
		t.Fatalf("missing title passed with the default template: %v", p)
	}
	tmpl := DefaultTemplate
	tmpl.Title = false
	if p, _ := (Options{Template: &tmpl}).Check([]byte(noTitle)).Pass(CheckTitle); p != 1 {
		t.Fatalf("Title=false: no H1 must pass, got %v", p)
	}
	// A custom template.
	custom := &Template{Title: true, Sections: []string{"Intro", "Body"}}
	r := Options{Template: custom}.Check([]byte("# T\n\n## 1. Intros\n\nHello there.\n\n## BODY:\n\nText.\n"))
	if r.Score != 1 {
		t.Fatalf("custom template:\n%s", r)
	}
	r = Options{Template: custom}.Check([]byte("# T\n\n## Body\n\nText.\n\n## Intro\n\nHello.\n\n## Intro\n\nAgain.\n"))
	if p, _ := r.Pass(CheckSections); math.Abs(p-1.0/3) > 1e-12 {
		t.Fatalf("swapped and duplicated sections: %v, want 1/3:\n%s", p, r)
	}
	// Readability bound.
	if (Options{ReadabilityBound: 0.01}).Check([]byte(perfectDoc)).Map()[CheckReadability] >= 1 {
		t.Fatal("a tiny readability bound must fail the perfect document's natural spread")
	}
}

func TestMissingSectionGatesScore(t *testing.T) {
	i := strings.Index(perfectDoc, "## Prior art")
	j := strings.Index(perfectDoc, "## Unresolved questions")
	r := mustScore(t, perfectDoc[:i]+perfectDoc[j:])
	if r.Coverage != 8.0/9 {
		t.Fatalf("coverage %v, want 8/9", r.Coverage)
	}
	if p, _ := r.Pass(CheckSections); p != 8.0/9 {
		t.Fatalf("sections %v, want 8/9", p)
	}
	if r.Score > 8.0/9 {
		t.Fatalf("score %v above coverage", r.Score)
	}
}

func TestClassifyHeadingCase(t *testing.T) {
	cases := []struct {
		in   string
		want HeadingCase
		ok   bool
	}{
		{"Rationale and alternatives", CaseSentence, true},
		{"Rationale and Alternatives", CaseTitle, true},
		{"Guide-level explanation", CaseSentence, true},
		{"Guide-Level Explanation", CaseTitle, true},
		{"Summary", "", false},
		{"Interaction with Rust and Cargo", "", false}, // only proper nouns and minor words
		{"Support for `cfg` in where clauses", CaseSentence, true},
		{"Using LLVM intrinsics", CaseSentence, true},
		{"The Linux Kernel", CaseTitle, true},
		{"Alternative 2: Extended shebang", CaseSentence, true},
		{"[Links](https://example.com/Some/Path) are Ignored Here", CaseTitle, true},
	}
	for _, c := range cases {
		got, ok := ClassifyHeadingCase(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ClassifyHeadingCase(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	// The writing env's simulated writers recase headings to these (see
	// TestRecase in envs/writing/internal/restyle); each reads as the case
	// it was written in.
	for _, h := range []struct{ title, sentence string }{
		{"Rationale and Alternatives", "Rationale and alternatives"},
		{"Guide-level Explanation", "Guide-level explanation"},
		{"Support for `cfg` in Where Clauses", "Support for `cfg` in where clauses"},
		{"Prior Art: the C++ Way", "Prior art: the C++ way"},
	} {
		if c, ok := ClassifyHeadingCase(h.title); !ok || c != CaseTitle {
			t.Errorf("%q classified %q", h.title, c)
		}
		if c, ok := ClassifyHeadingCase(h.sentence); !ok || c != CaseSentence {
			t.Errorf("%q classified %q", h.sentence, c)
		}
	}
}

func TestSpellingAndPersonWords(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range SpellingPairs() {
		for _, w := range p {
			if seen[w] {
				t.Errorf("%q appears twice in SpellingPairs", w)
			}
			seen[w] = true
		}
		if v, ok := SpellingOf(strings.ToUpper(p[0][:1]) + p[0][1:]); !ok || v != SpellingUS {
			t.Errorf("SpellingOf(%q) = %v, %v", p[0], v, ok)
		}
		if v, ok := SpellingOf(p[1]); !ok || v != SpellingUK {
			t.Errorf("SpellingOf(%q) = %v, %v", p[1], v, ok)
		}
	}
	if len(SpellingPairs()) < 30 {
		t.Errorf("only %d spelling pairs", len(SpellingPairs()))
	}
	for _, w := range []string{"license", "program", "practice", "color_space"} {
		if _, ok := SpellingOf(w); ok {
			t.Errorf("%q must not be a spelling word", w)
		}
	}
	for p, ws := range PersonWords() {
		for _, w := range ws {
			if got, ok := markdown.PersonOf(w); !ok || got != p {
				t.Errorf("PersonOf(%q) = %v, %v; want %v", w, got, ok, p)
			}
		}
	}
	for _, w := range []string{"US", "i", "Mine2", "user"} {
		if _, ok := markdown.PersonOf(w); ok {
			t.Errorf("PersonOf(%q) must be false", w)
		}
	}
	// Identifiers and I/O are not prose pronouns.
	r := mustScore(t, replaceOnce(t, perfectDoc, "Our users read", "The my_crate and I/O paths, self.color and Our users read"))
	if r.Score != 1 {
		t.Fatalf("identifiers counted as words:\n%s", r)
	}
}

func TestSyllables(t *testing.T) {
	for w, n := range map[string]int{"the": 1, "make": 1, "table": 2, "explanation": 4, "readability": 5, "a": 1, "rhythm": 1, "organize": 3} {
		if got := syllables(w); got != n {
			t.Errorf("syllables(%q) = %d, want %d", w, got, n)
		}
	}
}
