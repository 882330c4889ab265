package suite

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/internal/codetokens"
)

// TestEmbeddedDataset checks the shipped dataset's shape and the fixes the
// loader makes to the dataset's test_class and decorators.
func TestEmbeddedDataset(t *testing.T) {
	ds, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	methods, noCase, examples := 0, 0, 0
	for _, c := range ds.Classes {
		methods += len(c.Methods)
		for _, m := range c.Methods {
			if m.TestCase == "" {
				noCase++
			}
			if m.ExampleCount > 0 {
				examples++
			}
		}
	}
	if len(ds.Classes) != 75 || methods != 313 {
		t.Errorf("%d classes, %d methods; want 75, 313", len(ds.Classes), methods)
	}
	if noCase != 4 {
		t.Errorf("%d methods without a TestCase of their own, want 4", noCase)
	}
	t.Logf("%d classes, %d methods, %d with docstring examples, %d without a TestCase of their own", len(ds.Classes), methods, examples, noCase)
	// ClassEval_60's test_class entries are shifted by one in the dataset.
	c := ds.Class("ClassEval_60")
	if m := method(t, c, "insert_ticket"); m.TestCase != "MovieTicketDBTestInsertTicket" || m.DatasetTestCase != "MovieTicketDBTestSearchTicketsByCustomer" {
		t.Errorf("insert_ticket: TestCase %q (dataset %q)", m.TestCase, m.DatasetTestCase)
	}
	if m := method(t, c, "create_table"); m.TestCase != "" {
		t.Errorf("create_table: TestCase %q, want none", m.TestCase)
	}
	if got := strings.Join(c.ClassTestCases, ","); got != "MovieTicketDBTest" {
		t.Errorf("ClassEval_60 class-level TestCases %q", got)
	}
	// ClassEval_9's add is @staticmethod in the skeleton but not in its description.
	if m := method(t, ds.Class("ClassEval_9"), "add"); strings.Join(m.Decorators, ",") != "@staticmethod" {
		t.Errorf("add decorators %q", m.Decorators)
	}
	// ClassEval_97 lists " Words2NumbersTestMain" with a space; TestCases come from the source.
	if got := strings.Join(ds.Class("ClassEval_97").TestCases, ","); strings.Contains(got, " ") {
		t.Errorf("TestCases %q", got)
	}
	// Dependencies become indexes.
	f := method(t, ds.Class("ClassEval_0"), "filter")
	if len(f.MethodDeps) != 3 {
		t.Errorf("filter's method deps %v (%v)", f.MethodDeps, f.Deps.Methods)
	}
}

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestBringYourOwn loads a user's dataset (plain JSON) and outputs
// directory (one .json, one .json.gz) in ClassEval's layout.
func TestBringYourOwn(t *testing.T) {
	dir := t.TempDir()
	task := map[string]any{
		"task_id": "Mine_1", "class_name": "Adder", "skeleton": "class Adder:\n    def add(self, a, b):\n        \"\"\"\n        >>> Adder().add(1, 2)\n        3\n        \"\"\"\n",
		"test":          "import unittest\n\nclass AdderTestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(Adder().add(1, 2), 3)\n",
		"solution_code": "class Adder:\n    def add(self, a, b):\n        return a + b\n", "import_statement": []string{},
		"class_constructor": "class Adder: \n", "fields": []string{},
		"methods_info": []map[string]any{{"method_name": "add", "method_description": "def add(self, a, b):\n        \"\"\"\n        >>> Adder().add(1, 2)\n        3\n        \"\"\"", "test_class": "AdderTestAdd", "solution_code": "def add(self, a, b):\n        return a + b", "dependencies": map[string]any{"Standalone": true, "lib_dependencies": []string{}, "field_dependencies": []string{}, "method_dependencies": []string{}}}},
	}
	b, _ := json.Marshal([]any{task})
	dsPath := filepath.Join(dir, "mine.json")
	os.WriteFile(dsPath, b, 0o644)
	ds, err := LoadDataset(dsPath)
	if err != nil {
		t.Fatal(err)
	}
	m := ds.Classes[0].Methods[0]
	if m.TestCase != "AdderTestAdd" || m.ExampleCount != 1 {
		t.Errorf("method %+v", m)
	}
	outDir := filepath.Join(dir, "outputs")
	os.Mkdir(outDir, 0o755)
	dire, _ := json.Marshal([]any{map[string]any{"task_id": "Mine_1", "predict": []string{"x"}, "raw_output": []string{"Sure:\n```python\ndef add(self, a, b):\n    return a + b\n```"}}})
	os.WriteFile(filepath.Join(outDir, "MyModel_100_m_dire.json"), dire, 0o644)
	c5, _ := json.Marshal([]any{map[string]any{"task_id": "Mine_1", "predict": []string{"class Adder:\n    def add(self, a, b):\n        return b + a\n", "class Adder:\n    pass\n"}}, map[string]any{"task_id": "NotInDataset", "predict": []string{""}}})
	os.WriteFile(filepath.Join(outDir, "MyModel_c_5.json.gz"), gz(t, c5), 0o644)
	os.WriteFile(filepath.Join(outDir, "notes.txt"), []byte("ignored"), 0o644)
	out, err := LoadOutputs(outDir, ds)
	if err != nil {
		t.Fatal(err)
	}
	if !out.HasMode("MyModel", ModeDirect) || !out.HasMode("MyModel", ModeClassSampled) || out.HasMode("MyModel", ModeIter) {
		t.Errorf("modes %v", out.ModesOf("MyModel"))
	}
	d := out.Completions("MyModel", ModeDirect, ds.Classes[0], m)
	if len(d) != 1 || d[0].Source != "    def add(self, a, b):\n        return a + b" || d[0].Tokens == 0 {
		t.Errorf("m_dire: %+v", d)
	}
	s := out.Completions("MyModel", ModeClassSampled, ds.Classes[0], m)
	if len(s) != 2 || s[0].Status != Extracted || s[1].Status != NotExtracted {
		t.Errorf("c_5: %+v", s)
	}
	if r := out.Report(); len(r.Rows) != 2 || len(r.Failures) != 1 {
		t.Errorf("report %+v", r)
	}
	// And it runs.
	r := newRunner(t)
	c := ds.Classes[0]
	if err := r.CheckCanonical(context.Background(), c); err != nil {
		t.Error(err)
	}
	res, err := r.RunTests(context.Background(), c, []Impl{d[0].Impl()})
	if err != nil || !res.ClassPass || !res.MethodPass[0] {
		t.Errorf("m_dire completion: %+v, %v", res, err)
	}
	ex, err := r.RunExamples(context.Background(), c, m, []Impl{s[1].Impl()})
	if err != nil || ex.Pass || ex.Attempted != 1 {
		t.Errorf("stub's examples: %+v, %v", ex, err)
	}
}

// TestLoadErrors checks bad input is reported with the file, task and
// field.
func TestLoadErrors(t *testing.T) {
	ds, _ := Embedded()
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"not JSON", "{", []string{"x.json", "not a JSON array"}},
		{"missing field", `[{"task_id": "T", "class_name": "A", "skeleton": "s", "test": "class ATest(unittest.TestCase): pass", "class_constructor": "class A:", "methods_info": [{"method_name": "f"}]}]`,
			[]string{"x.json: task 0 (T): methods_info[0].method_description: missing"}},
		{"bad class name", `[{"task_id": "T", "class_name": "A B", "skeleton": "s"}]`, []string{"task 0 (T): class_name"}},
		{"no tests", `[{"task_id": "T", "class_name": "A", "skeleton": "s", "test": "x = 1", "class_constructor": "class A:"}]`, []string{"test: defines no TestCase"}},
	} {
		_, err := ParseDataset("x.json", []byte(tc.data))
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want it to contain %q", tc.name, err, w)
			}
		}
	}
	for _, tc := range []struct {
		name, file, data string
		want             string
	}{
		{"bad name", "model.json", "[]", "model.json: name is not MODEL_100_MODE"},
		{"no raw_output", "M_100_m_dire.json", `[{"task_id": "ClassEval_0", "predict": ["x"]}]`, "M_100_m_dire.json: task 0 (ClassEval_0): raw_output: missing"},
		{"no task_id", "M_100_c_t0.json", `[{"predict": ["x"]}]`, "M_100_c_t0.json: task 0: task_id: missing"},
		{"empty predict", "M_100_c_t0.json", `[{"task_id": "ClassEval_0", "predict": []}]`, "(ClassEval_0): predict: empty"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.data), 0o644)
		_, err := LoadOutputs(dir, ds)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if _, err := LoadOutputs(t.TempDir(), ds); err == nil || !strings.Contains(err.Error(), "no outputs file") {
		t.Errorf("empty dir: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := LoadOutputs(missing, ds); err == nil || err.Error() != missing+": no such outputs directory" {
		t.Errorf("missing dir: %v, want it named", err)
	}
}

// TestTokens checks the tokenizer approximation on the shipped replies:
// about 3-4 characters per token, as cl100k gives on Python.
func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{{"", 0}, {"hello world", 2}, {"f(x):", 4}, {"        return x\n        y", 6}} {
		if got := codetokens.Count(tc.s); got != tc.want {
			t.Errorf("codetokens.Count(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
	out, _ := EmbeddedOutputs()
	ds, _ := Embedded()
	chars, toks := 0, 0
	for _, c := range ds.Classes {
		for _, m := range c.Methods {
			for _, comp := range out.Completions("GPT-4", ModeDirect, c, m) {
				chars += len(comp.Source)
				toks += comp.Tokens
			}
		}
	}
	r := float64(chars) / float64(toks)
	t.Logf("%.2f characters per token on GPT-4's m_dire methods", r)
	if r < 3 || r > 4.5 {
		t.Errorf("%.2f characters per token", r)
	}
}
