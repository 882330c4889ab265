package coding

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/internal/sandbox"
)

func TestMutateOperators(t *testing.T) {
	code := `    s = "a < b and True"  # x + 1 < 2
    if n <= 1 and not done:
        return x[::-1] + [n * 2]
    total += n - 1
    return False
`
	got := map[string]bool{}
	for _, m := range mutate(code) {
		got[m.Kind+": "+diffLine(code, m.Code)] = true
	}
	for _, want := range []string{
		"relational:     if n < 1 and not done:",
		"logical:     if n <= 1 or not done:",
		"boolean:     if n <= 1 and done:",
		"constant:     if n <= 2 and not done:",
		"constant:     if n <= 0 and not done:",
		"arithmetic:         return x[::-1] - [n * 2]",
		"arithmetic:         return x[::-1] + [n // 2]",
		"constant:         return x[::-2] + [n * 2]",
		"arithmetic:     total -= n - 1",
		"arithmetic:     total += n + 1",
		"boolean:     return True",
		"return:     return x[::-1] + [n * 2]",
		"statement:     pass",
	} {
		if !got[want] {
			t.Errorf("missing mutant %q", want)
		}
	}
	for k := range got {
		// Unary minus in the slice, the string and the comment are untouched.
		if strings.Contains(k, "[::+1]") || strings.Contains(k, `"a <= b`) || strings.Contains(k, "a < b or") || strings.Contains(k, "x - 1 < 2") {
			t.Errorf("mutated a string, a comment or a unary operator: %q", k)
		}
	}
}

// diffLine returns the first line of b that differs from a.
func diffLine(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range bl {
		if i >= len(al) || al[i] != bl[i] {
			return bl[i]
		}
	}
	return ""
}

func TestMutantPoolIsBalancedAndBounded(t *testing.T) {
	ds, err := HumanEval()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, task := range ds.Tasks {
		all := mutate(task.CanonicalSolution)
		if len(all) == 0 {
			t.Errorf("%s: no mutants", task.TaskID)
		}
		pool := mutantPool(all, 24)
		total += len(pool)
		if len(pool) > 24 {
			t.Fatalf("%s: pool of %d", task.TaskID, len(pool))
		}
		kinds := map[string]bool{}
		for _, m := range all {
			kinds[m.Kind] = true
		}
		pk := map[string]bool{}
		for _, m := range pool {
			pk[m.Kind] = true
			if m.Code == task.CanonicalSolution {
				t.Fatalf("%s: the canonical solution is not a mutant", task.TaskID)
			}
		}
		if len(all) > 24 && len(pk) != len(kinds) {
			t.Errorf("%s: pool kinds %v, all kinds %v", task.TaskID, pk, kinds)
		}
	}
	t.Logf("%d pooled mutants over %d tasks", total, len(ds.Tasks))
}

// Every mutant of every HumanEval solution is valid Python: one interpreter
// parses them all.
func TestMutantsAreValidPython(t *testing.T) {
	ds, err := HumanEval()
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for _, task := range ds.Tasks {
		for _, m := range mutate(task.CanonicalSolution) {
			srcs = append(srcs, task.Prompt+m.Code)
		}
	}
	b, _ := json.Marshal(srcs)
	prog := fmt.Sprintf("import ast, json\nbad = 0\nfor s in json.loads(%q):\n    try:\n        ast.parse(s)\n    except SyntaxError as e:\n        bad += 1\n        print(e, s[-300:])\nprint(bad, len(json.loads(%q)))\n", b, "[]")
	sb, err := sandbox.New(sandbox.Config{CacheEntries: -1, OutputBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sb.Run(context.Background(), sandbox.Program{Code: prog})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || !strings.HasPrefix(r.Stdout, "0 ") {
		t.Fatalf("%d mutants; invalid ones:\n%s%s", len(srcs), r.Stdout, r.Stderr)
	}
	t.Logf("%d mutants parse", len(srcs))
}
