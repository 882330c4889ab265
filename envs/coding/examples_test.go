package coding

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/sandbox"
)

func TestExtractExamples(t *testing.T) {
	doctest := `def f(a, b):
    """ Add.
    >>> f(1, 2)
    3
    >>> f([1,
    ...    2], [3])
    [1, 2, 3]
    >>> x = 5
    >>> f(x, 1)
    6
    """
`
	got := extractExamples(doctest, "f")
	want := []example{{"f(1, 2)", "3"}, {"f([1,\n   2], [3])", "[1, 2, 3]"}, {"x = 5", ""}, {"f(x, 1)", "6"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("doctest examples\n got %q\nwant %q", got, want)
	}
	calls := `def g(s, n):
    """Examples:
    g("a(b", 1) ==> 'x'
    g("c", 2) ➞ True
    - g("d", 3) -> 19 - 5 - 6 = 8
    g("e", 4) == [1]
    g("f", 5) should return 7.
    g is nice
    """
`
	got = extractExamples(calls, "g")
	want = []example{{`g("a(b", 1)`, "'x'"}, {`g("c", 2)`, "True"}, {`g("d", 3)`, "8"}, {`g("e", 4)`, "[1]"}, {`g("f", 5)`, "7"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("call examples\n got %q\nwant %q", got, want)
	}
}

func TestHarnessRunsExamples(t *testing.T) {
	sb, err := sharedSandbox("/usr/bin/python3", 2, core.Sandbox{})
	if err != nil {
		t.Fatal(err)
	}
	code := "def f(a, b):\n    return a + b\n"
	exs := []example{{"f(1, 2)", "3"}, {"f('a', 'b')", "'ab'"}, {"f(0.1, 0.2)", "0.3"}, {"x = 4", ""}, {"f(x, 1)", "5"}, {"print(f(1, 1))", "2"}}
	r, err := sb.Run(context.Background(), sandbox.Program{TaskID: "harness", Code: code, Test: harness(exs, false)})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || !strings.Contains(r.Stdout, "6 of 6 examples passed") {
		t.Fatalf("all examples should pass: %s\n%s", r.Stdout, r.Stderr)
	}
	bad := "def f(a, b):\n    if a == 0.1:\n        raise ValueError('no')\n    return a - b\n"
	r, err = sb.Run(context.Background(), sandbox.Program{TaskID: "harness", Code: bad, Test: harness(exs, true)})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.ExitCode != 1 {
		t.Fatalf("failures must exit 1: %+v", r)
	}
	for _, want := range []string{"example 1: FAIL: f(1, 2)\n    expected: 3\n    got:      -1", "example 3: ERROR: f(0.1, 0.2)\n    ValueError: no", "example 4: ok", "1 of 6 examples passed"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if ok := passedExamples(r.Stdout); !reflect.DeepEqual(ok, map[int]bool{4: true}) {
		t.Errorf("passed %v", ok)
	}
}

// The validated examples of every fourth HumanEval task pass with its
// canonical solution, and most tasks keep some.
func TestValidatedExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python for every task")
	}
	ds, err := HumanEval()
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	sb, err := sharedSandbox(p.Interpreter, p.TimeoutS, core.Sandbox{})
	if err != nil {
		t.Fatal(err)
	}
	with, examples := 0, 0
	var tasks []*Task
	var progs []sandbox.Program
	for i := 0; i < len(ds.Tasks); i += 4 {
		task := &ds.Tasks[i]
		info, err := prepareTask(sb, ds, task, p.MutantsPerFunction)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
		progs = append(progs, sandbox.Program{TaskID: task.TaskID, Code: task.Prompt + task.CanonicalSolution, Test: info.visible})
		if n := len(info.examples); n > 0 {
			with++
			examples += n
		}
	}
	res, err := sb.RunAll(context.Background(), progs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.OK() {
			t.Errorf("%s: canonical solution fails its validated examples: %s", tasks[i].TaskID, r.Stdout+r.Stderr)
		}
	}
	t.Logf("%d of %d tasks have examples (%d in all)", with, len(tasks), examples)
	if float64(with) < 0.75*float64(len(tasks)) {
		t.Errorf("only %d of %d tasks kept examples", with, len(tasks))
	}
}
