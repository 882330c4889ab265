package writing

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadShipped(t *testing.T) {
	rs, err := LoadShipped()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 40 {
		t.Errorf("shipped corpus: %d RFCs, want 40", len(rs))
	}
	for _, r := range rs {
		if len(r.Units) < len(templateSections) {
			t.Errorf("%s: %d units, fewer than the %d sections", r.Name, len(r.Units), len(templateSections))
		}
		seen := map[int]bool{}
		sum := 0
		last := -1
		for k, u := range r.Units {
			sum += u.Tokens
			if u.Section >= 0 {
				seen[u.Section] = true
				if u.Section < last {
					t.Errorf("%s unit %d: section %d after %d", r.Name, k, u.Section, last)
				}
				last = u.Section
			}
			if u.Level != 2 && u.Level != 3 {
				t.Errorf("%s unit %d: level %d", r.Name, k, u.Level)
			}
			if u.Tokens <= 0 || u.Words <= 0 || strings.TrimSpace(u.Source) == "" {
				t.Errorf("%s unit %d: empty", r.Name, k)
			}
		}
		if len(seen) != len(templateSections) {
			t.Errorf("%s: %d template sections among the units", r.Name, len(seen))
		}
		if sum != r.Tokens {
			t.Errorf("%s: Tokens %d, units sum to %d", r.Name, r.Tokens, sum)
		}
		if !strings.HasPrefix(r.Units[0].Source, "# "+r.Title+"\n") {
			t.Errorf("%s: unit 0 does not start with the title: %.60q", r.Name, r.Units[0].Source)
		}
	}
}

const miniRFC = `- Feature Name: ` + "`mini`" + `

# Summary
[summary]: #summary

A small feature.

# Motivation

Because we can.

## Use cases

Some cases.

#### Deep detail

Detail below a skipped level.

# Guide-level explanation

Explained.

# Reference-level explanation

Specified.

# Drawbacks

None.

# Rationale and alternatives

Other designs.

# Prior art

Elsewhere.

# Unresolved questions

Few.

# Future possibilities

Many.
`

// An RFC whose sections are H1 headings is shifted so that sections are
// H2 and subsections H3; a skipped level below is repaired, the anchor
// reference dropped, and the title made from the file name.
func TestParseRFCShiftsLevels(t *testing.T) {
	r, err := parseRFC("1234-mini-feature", miniRFC)
	if err != nil {
		t.Fatal(err)
	}
	if r.Title != "Mini feature (RFC 1234)" {
		t.Errorf("title %q", r.Title)
	}
	var paths []string
	for _, u := range r.Units {
		paths = append(paths, u.Path)
	}
	want := "Summary|Motivation|Motivation / Use cases|Guide-level explanation|Reference-level explanation|Drawbacks|Rationale and alternatives|Prior art|Unresolved questions|Future possibilities"
	if got := strings.Join(paths, "|"); got != want {
		t.Errorf("units:\n got %s\nwant %s", got, want)
	}
	u := r.Units[2]
	if u.Level != 3 || !strings.Contains(u.Source, "\n#### Deep detail") {
		t.Errorf("subsection unit: level %d source %q", u.Level, u.Source)
	}
	if strings.Contains(r.Units[0].Source, "[summary]: #summary") {
		t.Errorf("anchor reference kept: %q", r.Units[0].Source)
	}
	if !strings.Contains(r.Units[0].Source, "- Feature Name: `mini`") {
		t.Errorf("metadata missing from unit 0: %q", r.Units[0].Source)
	}
}

// An H2 with no lead text is merged with its first subsection, and
// setext headings are recognised.
func TestParseRFCMergesAndSetext(t *testing.T) {
	src := strings.Join([]string{
		"Summary", "-------", "", "Short.", "",
		"## Motivation", "", "### First reason", "", "Text one.", "", "### Second reason", "", "Text two.", "",
		"## Guide-level explanation", "", "G.", "", "## Reference-level explanation", "", "R.", "",
		"## Drawbacks", "", "D.", "", "## Rationale and alternatives", "", "A.", "", "## Prior art", "", "P.", "",
		"## Unresolved questions", "", "U.", "", "## Future possibilities", "", "F.", "",
	}, "\n")
	r, err := parseRFC("x", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Units) != 10 {
		t.Fatalf("%d units, want 10", len(r.Units))
	}
	m := r.Units[1]
	if m.Path != "Motivation / First reason" || len(m.Headings) != 2 || m.Headings[0].Level != 2 || m.Headings[1].Level != 3 {
		t.Errorf("merged unit: %+v", m)
	}
	if r.Units[2].Path != "Motivation / Second reason" {
		t.Errorf("unit 2: %q", r.Units[2].Path)
	}
}

func TestParseRFCErrors(t *testing.T) {
	full := []string{"Summary", "Motivation", "Guide-level explanation", "Reference-level explanation", "Drawbacks",
		"Rationale and alternatives", "Prior art", "Unresolved questions", "Future possibilities"}
	doc := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString("## " + n + "\n\nText.\n\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"missing", doc(full[:8]...), `missing section(s) "Future possibilities"`},
		{"twice", doc(append(append([]string{}, full...), "Drawbacks")...), `section "Drawbacks" appears twice`},
		{"order", doc(append([]string{full[1], full[0]}, full[2:]...)...), "out of template order"},
		{"none", "# Just a note\n\nNo template here.\n", "not an RFC with the template"},
		{"in code", "```\n" + doc(full...) + "```\n", "not an RFC with the template"},
	} {
		_, err := parseRFC("f", tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	shipped := filepath.Join("corpus", "2707-dotdot-patterns.md")
	b, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "2707-dotdot-patterns.md"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "LICENSE-MIT.md"), []byte("licence"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := LoadDir(dir)
	if err != nil || len(rs) != 1 || rs[0].Name != "2707-dotdot-patterns" {
		t.Fatalf("LoadDir = %d RFCs, %v", len(rs), err)
	}
	// Through the env's corpus_dir param.
	env, err := New(map[string]any{"corpus_dir": dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Reset(3); err != nil || env.RFC().Name != "2707-dotdot-patterns" {
		t.Fatalf("Reset: %v, RFC %v", err, env.RFC())
	}

	empty := t.TempDir()
	if _, err := New(map[string]any{"corpus_dir": empty}); err == nil || !strings.Contains(err.Error(), "no RFC Markdown files") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := New(map[string]any{"corpus_dir": filepath.Join(empty, "nope")}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing dir: %v", err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "notes.md"), []byte("# Notes\n\nNo sections.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = New(map[string]any{"corpus_dir": bad})
	if err == nil || !strings.Contains(err.Error(), "notes.md") || !strings.Contains(err.Error(), "missing section") {
		t.Errorf("file without the template: %v", err)
	}
	file := filepath.Join(bad, "notes.md")
	if _, err := LoadDir(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file as corpus_dir: %v", err)
	}
}

// rfcs selects files, so corpus_dir may hold files without the template.
func TestLoadSelectedFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"2707-dotdot-patterns.md", "2992-cfg-target-abi.md"} {
		b, err := os.ReadFile(filepath.Join("corpus", n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# Notes\n"), 0o644)
	if _, err := LoadDir(dir); err == nil {
		t.Error("a file without the template loaded")
	}
	rs, err := LoadDir(dir, "2992-cfg-target-abi", "2707-dotdot-patterns.md")
	if err != nil || len(rs) != 2 || rs[0].Name != "2992-cfg-target-abi" {
		t.Fatalf("selected: %v %v", len(rs), err)
	}
	env, err := New(map[string]any{"corpus_dir": dir, "rfcs": []any{"2707-dotdot-patterns"}})
	if err != nil || len(env.Corpus()) != 1 {
		t.Fatalf("rfcs param: %v", err)
	}
	rs, err = LoadShipped("2992-cfg-target-abi")
	if err != nil || len(rs) != 1 {
		t.Fatalf("LoadShipped selected: %v", err)
	}
}

// The loader reads the units' dependencies from the real text: in RFC
// 2627 the Summary introduces "import library", which four later units
// use; the reference-level explanation builds on the guide-level one; in
// RFC 2561 the guide-level explanation mentions the "Future
// possibilities" and "Unresolved questions" sections by name.
func TestDependencies(t *testing.T) {
	rs, err := LoadShipped("2627-raw-dylib-kind", "2561-future-possibilities")
	if err != nil {
		t.Fatal(err)
	}
	dylib, future := rs[0], rs[1]
	var lib *Term
	for i := range dylib.Terms {
		if dylib.Terms[i].Form == "import library" {
			lib = &dylib.Terms[i]
		}
	}
	if lib == nil {
		t.Fatalf("no term \"import library\" in %+v", dylib.Terms)
	}
	if lib.Intro != 0 || !slices.Equal(lib.Users, []int{1, 2, 3, 6}) || !slices.Contains(lib.Variants, "import-library") {
		t.Errorf("import library: %+v", *lib)
	}
	ref := dylib.Units[3]
	if ref.Section != 3 || !slices.Contains(ref.BuildsOn, 2) || !slices.Contains(ref.DependsOn, 0) || !slices.Contains(ref.DependsOn, 2) {
		t.Errorf("reference-level unit: builds on %v, depends on %v", ref.BuildsOn, ref.DependsOn)
	}
	for k, u := range dylib.Units {
		for _, d := range u.DependsOn {
			if d == k {
				t.Errorf("unit %d depends on itself", k)
			}
		}
	}
	guide := future.Units[4]
	var targets []string
	for _, r := range guide.Refs {
		targets = append(targets, future.Units[r.Target].Headings[r.Heading].Text)
	}
	if !slices.Equal(targets, []string{"Unresolved questions", "Future possibilities"}) {
		t.Errorf("guide-level unit mentions %v", targets)
	}
	// Every term is used by more than one unit, and code is not prose.
	for _, r := range rs {
		for _, term := range r.Terms {
			if len(term.Users) == 0 || strings.Contains(term.Form, "`") {
				t.Errorf("%s: term %+v", r.Name, term)
			}
		}
	}
	if p := proseOf("Text `a-b c` and [x](#y-z).\n\n```\nfoo-bar baz\n```\n## Head-ing\n"); strings.Contains(p, "a-b") || strings.Contains(p, "foo-bar") || strings.Contains(p, "y-z") || strings.Contains(p, "Head-ing") || !strings.Contains(p, "Text") {
		t.Errorf("prose %q", p)
	}
}
