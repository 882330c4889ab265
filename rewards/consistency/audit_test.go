package consistency

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestAuditRealRFCs prints every finding the checker counts against the
// real RFCs as written: the 15 held-out RFCs (envs/writing/corpus/
// HELDOUT.txt, from the project's data) and the shipped corpus, with the
// per-check means of each set. It is a tool for auditing the checker by
// hand, not a test of it: it runs only with CONSISTENCY_AUDIT=1.
//
//	CONSISTENCY_AUDIT=1 go test ./rewards/consistency -run TestAuditRealRFCs -v
func TestAuditRealRFCs(t *testing.T) {
	if os.Getenv("CONSISTENCY_AUDIT") == "" {
		t.Skip("set CONSISTENCY_AUDIT=1 to print the audit")
	}
	list, err := os.ReadFile(filepath.Join(shippedDir, "HELDOUT.txt"))
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, n := range strings.Fields(string(list)) {
		b, err := os.ReadFile(filepath.Join(sharedDir, n))
		if err != nil {
			t.Skipf("held-out data not here: %v", err)
		}
		held[n] = string(b)
	}
	var out strings.Builder
	if dir := os.Getenv("CONSISTENCY_AUDIT_DIR"); dir != "" {
		// Other documents, such as the writing env's final documents,
		// checked as the reward checks them (default options).
		files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
		docs := map[string]string{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs[filepath.Base(f)] = string(b)
		}
		means := auditSet(&out, dir, docs, Options{})
		fmt.Fprintf(&out, "\n== per-check means\n%-18s %8s\n", "check", "mean")
		for _, c := range append([]string{"score", "score_markup_fixed", "score_style_fixed"}, checkNames()...) {
			fmt.Fprintf(&out, "%-18s %8.4f\n", c, means[c])
		}
		t.Log("\n" + out.String())
		return
	}
	rfc := Options{Template: rfcTemplate}
	heldMeans := auditSet(&out, "held-out", held, rfc)
	shipMeans := auditSet(&out, "shipped", shippedRFCs(t), rfc)
	fmt.Fprintf(&out, "\n== per-check means\n%-18s %8s %8s\n", "check", "held-out", "shipped")
	for _, c := range append([]string{"score", "score_markup_fixed", "score_style_fixed"}, checkNames()...) {
		fmt.Fprintf(&out, "%-18s %8.4f %8.4f\n", c, heldMeans[c], shipMeans[c])
	}
	t.Log("\n" + out.String())
}

func auditSet(out *strings.Builder, set string, docs map[string]string, o Options) map[string]float64 {
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	sort.Strings(names)
	sums := map[string]float64{}
	fmt.Fprintf(out, "\n######## %s: %d RFCs\n", set, len(names))
	for _, n := range names {
		doc := docs[n]
		tr := trace{}
		r := o.check([]byte(doc), tr)
		sums["score"] += r.Score
		sums["score_markup_fixed"] += scoreWith(r, markupChecks)
		sums["score_style_fixed"] += scoreWith(r, styleChecks)
		fmt.Fprintf(out, "\n=== %s %s score %.4f (style checks at 1: %.4f)\n", set, n, r.Score, scoreWith(r, styleChecks))
		for _, c := range r.Checks {
			sums[c.Name] += c.Pass
			if c.Pass >= 1 {
				continue
			}
			fmt.Fprintf(out, "  -- %s %.4f (majority %q): %s\n", c.Name, c.Pass, c.Majority, c.Detail)
			for _, f := range tr[c.Name] {
				switch {
				case c.Majority != "" && f.variant == c.Majority && c.Name != checkHeadingCase:
					continue
				case c.Name == checkHeadingCase && f.variant == c.Majority:
					fmt.Fprintf(out, "       (%s) %s\n", f.variant, f.text)
				default:
					fmt.Fprintf(out, "     * [%s] %s\n", f.variant, f.text)
				}
				if c.Name == checkTerminology {
					for _, l := range auditContext(doc, f.text) {
						fmt.Fprintf(out, "         %s\n", l)
					}
				}
			}
		}
	}
	for k := range sums {
		sums[k] /= float64(len(names))
	}
	return sums
}

// styleChecks are the checks of the eight style habits the writing env's
// writers restyle (heading style and case, bullet, emphasis, strong, code
// fence, spelling, person); markupChecks the five of them that are
// Markdown syntax only.
var (
	styleChecks  = []string{checkHeadingStyle, checkHeadingCase, checkBulletStyle, checkEmphasisStyle, checkStrongStyle, checkCodeStyle, checkSpelling, checkPerson}
	markupChecks = []string{checkHeadingStyle, checkBulletStyle, checkEmphasisStyle, checkStrongStyle, checkCodeStyle}
)

// scoreWith is r's Score had the named checks passed in full: what a
// team would reach that made those consistent and kept everything else
// as the document has it.
func scoreWith(r Report, perfect []string) float64 {
	sum, n := 0.0, 0
	for _, c := range r.Checks {
		if c.N == 0 {
			continue
		}
		p := c.Pass
		for _, q := range perfect {
			if q == c.Name {
				p = 1
			}
		}
		sum += p
		n++
	}
	if n == 0 {
		return 0
	}
	return r.Coverage * sum / float64(n)
}

// auditContext returns the lines of doc (outside code fences) that hold
// the forms named in a terminology finding ("spelled \"a\" 3 / \"b\" 1").
func auditContext(doc, finding string) []string {
	forms := regexp.MustCompile(`"((?:[^"\\]|\\.)*)" \d+`).FindAllStringSubmatch(finding, -1)
	var out []string
	lines := strings.Split(doc, "\n")
	for _, f := range forms {
		form := strings.Trim(f[1], "`")
		flags := "(?i)"
		if strings.Contains(finding, "cased") {
			flags = ""
		}
		pat := strings.ReplaceAll(regexp.QuoteMeta(form), `\ `, `\s+`)
		re := regexp.MustCompile(flags + `(^|[^\w-])` + pat + `s?\b`)
		shown := 0
		fence := false
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "```") || strings.HasPrefix(strings.TrimSpace(l), "~~~") {
				fence = !fence
				continue
			}
			if fence || !re.MatchString(l) {
				continue
			}
			if shown++; shown > 4 {
				out = append(out, fmt.Sprintf("[%s] …", form))
				break
			}
			s := strings.TrimSpace(l)
			if len(s) > 160 {
				loc := re.FindStringIndex(s)
				from := max(0, loc[0]-70)
				s = "…" + s[from:min(len(s), from+160)] + "…"
			}
			out = append(out, fmt.Sprintf("[%s] L%d: %s", form, i+1, s))
		}
	}
	return out
}

// TestTraceChangesNothing: recording the findings never changes a report.
func TestTraceChangesNothing(t *testing.T) {
	for name, doc := range shippedRFCs(t) {
		for _, o := range []Options{{}, {Template: rfcTemplate}} {
			a := o.Check([]byte(doc)).String()
			if b := o.check([]byte(doc), trace{}).String(); a != b {
				t.Errorf("%s: traced report differs:\n%s\n%s", name, a, b)
			}
		}
	}
}
