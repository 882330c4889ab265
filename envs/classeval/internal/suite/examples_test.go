package suite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// counterTask is a ClassEval-schema class whose docstring examples lean
// on each other as the real ones do: add's examples use the instance that
// total's docstring builds ("c"), and mean's use one that no docstring
// builds ("counter").
func counterTask() map[string]any {
	method := func(name, desc, body string) map[string]any {
		return map[string]any{"method_name": name, "method_description": desc, "test_class": "CounterTest" + strings.ToUpper(name[:1]) + name[1:],
			"solution_code": body, "dependencies": map[string]any{"Standalone": false, "lib_dependencies": []string{}, "field_dependencies": []string{"self.items"}, "method_dependencies": []string{}}}
	}
	total := "def total(self):\n        \"\"\"\n        >>> c = Counter()\n        >>> c.add(2)\n        >>> c.total()\n        2\n        \"\"\""
	add := "def add(self, x):\n        \"\"\"\n        >>> c.add(3)\n        >>> c.items\n        [3]\n        \"\"\""
	mean := "def mean(self):\n        \"\"\"\n        >>> counter.add(1)\n        >>> counter.add(2)\n        >>> counter.mean()\n        1.50\n        \"\"\""
	skeleton := "class Counter:\n    \"\"\"A counter.\"\"\"\n\n    def __init__(self):\n        self.items = []\n\n    " + total + "\n\n    " + add + "\n\n    " + mean + "\n"
	test := "import unittest\n\nclass CounterTestTotal(unittest.TestCase):\n    def test_total(self):\n        c = Counter()\n        c.add(2)\n        self.assertEqual(c.total(), 2)\n\n" +
		"class CounterTestAdd(unittest.TestCase):\n    def test_add(self):\n        c = Counter()\n        c.add(3)\n        self.assertEqual(c.items, [3])\n\n" +
		"class CounterTestMean(unittest.TestCase):\n    def test_mean(self):\n        c = Counter()\n        c.add(1)\n        c.add(2)\n        self.assertEqual(c.mean(), 1.5)\n"
	return map[string]any{
		"task_id": "Mine_2", "class_name": "Counter", "skeleton": skeleton, "test": test,
		"solution_code":     "class Counter:\n    def __init__(self):\n        self.items = []\n\n    def total(self):\n        return sum(self.items)\n\n    def add(self, x):\n        self.items.append(x)\n\n    def mean(self):\n        return sum(self.items) / len(self.items)\n",
		"import_statement":  []string{},
		"class_constructor": "class Counter: \n    def __init__(self):\n        self.items = []\n",
		"fields":            []string{"self.items"},
		"methods_info": []map[string]any{
			method("total", total, "def total(self):\n        return sum(self.items)"),
			method("add", add, "def add(self, x):\n        self.items.append(x)"),
			method("mean", mean, "def mean(self):\n        return sum(self.items) / len(self.items)"),
		},
	}
}

// TestExampleSetupAndKinds runs docstring examples as a developer would:
// an instance another docstring builds is built first, one that no
// docstring builds is the class's no-argument instance, and each failure
// is classed by kind.
func TestExampleSetupAndKinds(t *testing.T) {
	dir := t.TempDir()
	b, _ := json.Marshal([]any{counterTask()})
	path := filepath.Join(dir, "counter.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadDataset(path)
	if err != nil {
		t.Fatal(err)
	}
	c := ds.Classes[0]
	r := newRunner(t)
	if err := r.CheckCanonical(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	canon := c.CanonicalImpls()
	run := func(m int, impls []Impl) ExampleResult {
		t.Helper()
		res, err := r.RunExamples(context.Background(), c, c.Methods[m], impls)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// add's examples use c, which total's docstring builds.
	if res := run(1, canon); !res.Pass || !strings.Contains(res.Report, "c = Counter()") {
		t.Errorf("add on the canonical solution: %+v, want a pass after the setup c = Counter()", res)
	}
	// mean's use counter, which no docstring builds: Counter() is bound,
	// and 1.5 printed for the docstring's "1.50" is the right value
	// written otherwise.
	res := run(2, canon)
	if res.Pass || res.Cosmetic != 1 || res.Mismatches+res.CodeErrors+res.ExampleErrors != 0 || !strings.Contains(res.Report, "counter = Counter()") {
		t.Errorf("mean on the canonical solution: %+v, want one cosmetic failure after counter = Counter()", res)
	}
	// A wrong value is a mismatch; an exception in the class's code a code
	// error.
	wrong := append([]Impl(nil), canon...)
	wrong[2] = Impl{Source: "    def mean(self):\n        return 7"}
	if res := run(2, wrong); res.Mismatches != 1 || res.Cosmetic+res.CodeErrors+res.ExampleErrors != 0 {
		t.Errorf("mean returning 7: %+v, want one mismatch", res)
	}
	raising := append([]Impl(nil), canon...)
	raising[2] = Impl{Source: "    def mean(self):\n        return self.itemz[0]"}
	if res := run(2, raising); res.CodeErrors != 1 || res.Mismatches+res.Cosmetic+res.ExampleErrors != 0 {
		t.Errorf("mean raising AttributeError: %+v, want one code error", res)
	}
	// Without a working add the setup and examples of add raise in the
	// code; a stub's add returns None silently and total's example then
	// prints a wrong value.
	stub := append([]Impl(nil), canon...)
	stub[1] = Impl{}
	if res := run(0, stub); res.Pass || res.Mismatches == 0 {
		t.Errorf("total with add a stub: %+v, want a mismatch", res)
	}
	// An example that raises by itself is an example error: a name
	// nothing defines, used as a value (not as an object, so it is not
	// bound to an instance).
	ex := c.Methods[1]
	ex.Examples = ">>> c.add(undefined_name)\n"
	res, err = r.RunExamples(context.Background(), c, ex, canon)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pass || res.ExampleErrors != 1 || res.CodeErrors+res.Mismatches+res.Cosmetic != 0 {
		t.Errorf("an example using an undefined name: %+v, want one example error", res)
	}
}
