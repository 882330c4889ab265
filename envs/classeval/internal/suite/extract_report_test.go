package suite

import "testing"

// TestExtractionReport prints the extraction report of the shipped
// outputs (go test -run TestExtractionReport -v) and checks it accounts
// for every completion.
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
}
