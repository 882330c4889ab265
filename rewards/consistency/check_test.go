package consistency

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
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

The flag adds one more option that users must learn, as the
[guide-level explanation](#guide-level-explanation) shows. We also need to test
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
	if len(r.Checks) != len(checkNames()) {
		t.Fatalf("%d checks, want %d", len(r.Checks), len(checkNames()))
	}
	for i, c := range r.Checks {
		if c.Name != checkNames()[i] {
			t.Fatalf("check %d is %q, want %q", i, c.Name, checkNames()[i])
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
		checkHeadingStyle: "atx", checkHeadingCase: "sentence", checkBulletStyle: "-",
		checkEmphasisStyle: "*", checkStrongStyle: "**", checkCodeStyle: "backtick",
		checkSpelling: "us", checkPerson: "we",
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
		{checkTitle, func(t *testing.T, s string) string {
			return s + "\n# Appendix\n\nMore text here.\n"
		}},
		{checkSections, func(t *testing.T, s string) string {
			// Swap Drawbacks and Prior art.
			s = replaceOnce(t, s, "## Drawbacks", "## TMP")
			s = replaceOnce(t, s, "## Prior art", "## Drawbacks")
			return replaceOnce(t, s, "## TMP", "## Prior art")
		}},
		{checkNonemptySections, func(t *testing.T, s string) string {
			i := strings.Index(s, "## Drawbacks\n")
			j := strings.Index(s, "## Rationale and alternatives")
			return s[:i] + "## Drawbacks\n\n" + s[j:]
		}},
		{checkHeadingLevels, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "### Choosing a mode", "#### Choosing a mode")
		}},
		{checkHeadingStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "## Prior art\n", "Prior art\n---------\n")
		}},
		{checkHeadingCase, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "### Choosing a mode", "### Choosing A Mode")
		}},
		{checkBulletStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "- Warnings look", "* Warnings look")
		}},
		{checkEmphasisStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "*optional*", "_optional_")
		}},
		{checkStrongStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "**only**", "__only__")
		}},
		{checkCodeStyle, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "```\nbuild --color=always\n```", "~~~\nbuild --color=always\n~~~")
		}},
		{checkSpelling, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "keeps the current behavior", "keeps the current behaviour")
		}},
		{checkPerson, func(t *testing.T, s string) string {
			return replaceOnce(t, s, "We also need to test", "I also need to test")
		}},
		{checkReadability, func(t *testing.T, s string) string {
			i := strings.Index(s, "## Drawbacks\n")
			j := strings.Index(s, "## Rationale and alternatives")
			return s[:i] + "## Drawbacks\n\n" + strings.Repeat("the institutionalized interoperability considerations of our "+
				"organizational responsibilities necessitate a comprehensive evaluation, ", 4) + "unquestionably.\n\n" + s[j:]
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
	p, _ := r.Pass(checkBulletStyle)
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
	if c := r.Checks[9]; c.Majority != "indented" || c.N != 2 {
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
	if p, _ := Check([]byte(noTitle)).Pass(checkTitle); p != 0 {
		t.Fatalf("missing title passed with the default template: %v", p)
	}
	tmpl := defaultTemplate
	tmpl.Title = false
	if p, _ := (Options{Template: &tmpl}).Check([]byte(noTitle)).Pass(checkTitle); p != 1 {
		t.Fatalf("Title=false: no H1 must pass, got %v", p)
	}
	// A custom template.
	custom := &Template{Title: true, Sections: []string{"Intro", "Body"}}
	r := Options{Template: custom}.Check([]byte("# T\n\n## 1. Intros\n\nHello there.\n\n## BODY:\n\nText.\n"))
	if r.Score != 1 {
		t.Fatalf("custom template:\n%s", r)
	}
	r = Options{Template: custom}.Check([]byte("# T\n\n## Body\n\nText.\n\n## Intro\n\nHello.\n\n## Intro\n\nAgain.\n"))
	if p, _ := r.Pass(checkSections); math.Abs(p-1.0/3) > 1e-12 {
		t.Fatalf("swapped and duplicated sections: %v, want 1/3:\n%s", p, r)
	}
	// Readability bound.
	if (Options{ReadabilityBound: 0.01}).Check([]byte(perfectDoc)).Map()[checkReadability] >= 1 {
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
	if p, _ := r.Pass(checkSections); p != 8.0/9 {
		t.Fatalf("sections %v, want 8/9", p)
	}
	if r.Score > 8.0/9 {
		t.Fatalf("score %v above coverage", r.Score)
	}
}

// checkNames returns the names of all checks in report order.
func checkNames() []string {
	return []string{
		checkTitle, checkSections, checkNonemptySections, checkHeadingLevels,
		checkHeadingStyle, checkHeadingCase, checkBulletStyle, checkEmphasisStyle,
		checkStrongStyle, checkCodeStyle, checkSpelling, checkPerson, checkReadability,
		checkTerminology, checkCrossReferences, checkDuplication, checkFluency,
	}
}

// classifyHeadingCase classifies heading text with inline Markdown the
// way the heading_case check does, in a document whose prose capitalizes
// Rust, Cargo and Linux mid-sentence.
func classifyHeadingCase(text string) (string, bool) {
	caps := capitalStats{}
	eachWord("we use Rust and Cargo on Linux with Rust", func(w string, _ int) { caps.add(w) })
	return headingCase(headingText(text, nil), caps)
}

func TestClassifyHeadingCase(t *testing.T) {
	cases := []struct {
		in   string
		want string
		ok   bool
	}{
		{"Rationale and alternatives", "sentence", true},
		{"Rationale and Alternatives", "title", true},
		{"Guide-level explanation", "sentence", true},
		{"Guide-Level Explanation", "title", true},
		{"Summary", "", false},
		{"Interaction with Rust and Cargo", "", false}, // only the document's proper nouns and minor words
		{"Support for `cfg` in where clauses", "sentence", true},
		{"Using LLVM intrinsics", "sentence", true},
		{"The Linux Kernel", "title", true},
		{"Alternative 2: Extended shebang", "sentence", true},
		{"[Links](https://example.com/Some/Path) are Ignored Here", "title", true},
		{"Prior Art: the C++ Way", "title", true},
		{"Prior art: the C++ way", "sentence", true},
		// Inline code is no word of either case (held-out RFCs 2788,
		// 3128, 3308, 3681): it was read as the lower-case word "x".
		{"Variations of `set`", "", false},
		{"`OwnedFd` and `BorrowedFd<'fd>`", "", false},
		{"For `struct`s", "", false},
		{"Change 1: respect `--registry`", "", false},
		{"`offset_of!` On Other Types", "title", true},
		{"`offset_of!` on other types", "sentence", true},
		{"Alternative 1: `foo` Takes a Value", "title", true},
		{"Support for `cfg` in Where Clauses", "title", true},
	}
	for _, c := range cases {
		got, ok := classifyHeadingCase(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("classifyHeadingCase(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	// Without the document's evidence, Rust and Cargo are ordinary
	// capitalized words.
	if c, ok := headingCase("Interaction with Rust and Cargo", capitalStats{}); !ok || c != "title" {
		t.Errorf("no proper nouns known: %q, %v; want title", c, ok)
	}
}

// Identifiers and I/O are not prose pronouns. (The spelling and person
// word lists themselves are the checker's own, in words.go.)
func TestIdentifiersAreNotWords(t *testing.T) {
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
