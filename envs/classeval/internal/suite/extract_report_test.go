package suite

import (
	"os"
	"strings"
	"testing"
)

// TestExtractionReport prints the extraction report of the shipped
// outputs (go test -run TestExtractionReport -v), checks it accounts for
// every completion and that data/README.md shows it (with
// TROUPE_CLASSEVAL_WRITE=1 it rewrites the README's table instead).
func TestExtractionReport(t *testing.T) {
	ds, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	out, err := EmbeddedOutputs()
	if err != nil {
		t.Fatal(err)
	}
	r := out.Report()
	t.Logf("extraction of %d classes, %d models:\n%s", len(ds.Classes), len(out.Models()), r)
	methods := 0
	for _, c := range ds.Classes {
		methods += len(c.Methods)
	}
	fails := 0
	for _, row := range r.Rows {
		want := methods
		if row.Mode == ModeClassSampled {
			want = 5 * methods
		}
		if row.Completions != want || row.Extracted+row.Truncated+row.Stub+row.Missing != row.Completions {
			t.Errorf("%s %s: %d completions (%d+%d+%d), want %d", row.Model, row.Mode, row.Completions, row.Extracted, row.Stub, row.Missing, want)
		}
		fails += row.Truncated + row.Stub + row.Missing
	}
	if fails != len(r.Failures) {
		t.Errorf("%d failures listed, rows count %d", len(r.Failures), fails)
	}
	const readme = "data/README.md"
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	const open = "```text\nmodel "
	head, rest, ok := strings.Cut(string(doc), open)
	if !ok {
		t.Fatalf("%s has no extraction table (a block starting %q)", readme, open)
	}
	table, tail, ok := strings.Cut("model "+rest, "```")
	if !ok {
		t.Fatalf("%s: the extraction table's block does not end", readme)
	}
	if table == r.String() {
		return
	}
	if os.Getenv("TROUPE_CLASSEVAL_WRITE") != "" {
		if err := os.WriteFile(readme, []byte(head+"```text\n"+r.String()+"```"+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the extraction table of %s", readme)
		return
	}
	t.Errorf("%s's extraction table is not the extraction's (TROUPE_CLASSEVAL_WRITE=1 rewrites it):\n%s\nwant\n%s", readme, table, r)
}
