package consistency

import "fmt"

// trace records every individual finding behind a report, for audits of
// the checker on real text (see audit_test.go): what each check counted,
// one entry per thing. Check passes a nil trace and records nothing; a
// trace never changes a score.
type trace map[string][]finding

// finding is one thing a check counted: for the "one style" checks the
// variant it counted (the audit compares it with the majority), for the
// others "bad" or a per-item label.
type finding struct {
	variant string
	text    string
}

// add records a finding of the named check; a nil trace records nothing.
func (tr trace) add(check, variant, format string, args ...any) {
	if tr == nil {
		return
	}
	tr[check] = append(tr[check], finding{variant, fmt.Sprintf(format, args...)})
}
