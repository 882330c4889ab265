package suite

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/internal/testenv"
)

// rawTaskOutput returns one task of a shipped outputs file.
func rawTaskOutput(t *testing.T, model string, mode Mode, id string) *rawOutput {
	t.Helper()
	b, err := dataFS.ReadFile("data/outputs/" + model + "_100_" + string(mode) + ".json.gz")
	if err != nil {
		t.Fatal(err)
	}
	b, err = readMaybeGzip("test", b)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []*rawOutput
	if err := json.Unmarshal(b, &tasks); err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if *task.TaskID == id {
			return task
		}
	}
	t.Fatalf("%s %s: no task %s", model, mode, id)
	return nil
}

func method(t *testing.T, c *Class, name string) *Method {
	t.Helper()
	i := c.MethodIndex(name)
	if i < 0 {
		t.Fatalf("%s has no method %s", c.ID, name)
	}
	return c.Methods[i]
}

// TestExtractRealReplies extracts methods from real replies of the
// shipped outputs, one per kind of reply.
func TestExtractRealReplies(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		mode        Mode
		class       string
		method      string
		status      ExtractStatus
		want        []string // substrings of Source
		notWant     []string
	}{
		{"prose around a fenced def", "GPT-4", ModeIter, "ClassEval_1", "calculate_sector_area", Extracted,
			[]string{"    def calculate_sector_area(self, angle):\n", "\n        return (angle / (2 * math.pi))"}, []string{"Here is", "```"}},
		{"plain def at column 0", "GPT-4", ModeDirect, "ClassEval_1", "calculate_circle_area", Extracted,
			[]string{"    def calculate_circle_area(self):\n", "\n        return math.pi * (self.radius ** 2)"}, nil},
		{"echoed prompt, then a fenced class", "Vicuna", ModeDirect, "ClassEval_6", "get", Extracted,
			[]string{"    def get(self, index):\n", "block_size = int(len(self.lst) / self.limit)"}, []string{"### Instruction", "class AvgPartition"}},
		{"echoed prompt, reply is a bare def", "instruct-CodeGen-16b", ModeDirect, "ClassEval_6", "get", Extracted,
			[]string{"    def get(self, index):\n", "\n        size = len(self.lst) // self.limit"}, nil},
		{"body only, then doctest boilerplate and <|endoftext|>", "CodeGeeX", ModeIter, "ClassEval_6", "get", Extracted,
			[]string{"    def get(self, index):\n        if self.limit == 0:"}, []string{"doctest", "endoftext", "__main__"}},
		{"prose with a usage example only", "ChatGLM", ModeDirect, "ClassEval_0", "filter", NotExtracted, nil, nil},
		{"empty reply", "CodeGeeX", ModeIter, "ClassEval_54", "remove_icons", NotExtracted, nil, nil},
	} {
		ds, _ := Embedded()
		c := ds.Class(tc.class)
		m := method(t, c, tc.method)
		raw := rawTaskOutput(t, tc.model, tc.mode, tc.class)
		x := Extract(alignReplies(c, raw.RawOutput)[m.Index], c, m)
		if x.Status != tc.status {
			t.Errorf("%s: status %s (%s), want %s\n%s", tc.name, x.Status, x.Reason, tc.status, x.Source)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(x.Source, w) {
				t.Errorf("%s: source lacks %q:\n%s", tc.name, w, x.Source)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(x.Source, w) {
				t.Errorf("%s: source holds %q:\n%s", tc.name, w, x.Source)
			}
		}
	}
}

// TestExtractWholeClass takes methods from whole-class predictions: a
// real one, and CodeGeeX's c_t0 reply that restates the skeleton (stubs).
func TestExtractWholeClass(t *testing.T) {
	out, err := EmbeddedOutputs()
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := Embedded()
	c := ds.Class("ClassEval_1")
	m := method(t, c, "calculate_annulus_area")
	g := out.Completions("GPT-4", ModeClassGreedy, c, m)
	if len(g) != 1 || g[0].Status != Extracted || !strings.HasPrefix(g[0].Source, "    def calculate_annulus_area(") {
		t.Errorf("GPT-4 c_t0: %+v", g)
	}
	if s := out.Completions("GPT-4", ModeClassSampled, c, m); len(s) != 5 || s[4].Sample != 4 || s[0].ReplyTokens == 0 {
		t.Errorf("GPT-4 c_5: %d samples", len(s))
	}
	cg := out.Completions("CodeGeeX", ModeClassGreedy, c, m)
	if len(cg) != 1 || cg[0].Status != ExtractedStub {
		t.Errorf("CodeGeeX c_t0 restates the skeleton; got %+v", cg)
	}
}

// TestAlignReplies: ClassEval_54's outputs hold six replies for the five
// methods the dataset keeps (one for a method it dropped, print_board).
func TestAlignReplies(t *testing.T) {
	ds, _ := Embedded()
	c := ds.Class("ClassEval_54")
	raw := rawTaskOutput(t, "GPT-4", ModeDirect, "ClassEval_54")
	if len(raw.RawOutput) != 6 || len(c.Methods) != 5 {
		t.Fatalf("%d replies for %d methods", len(raw.RawOutput), len(c.Methods))
	}
	got := alignReplies(c, raw.RawOutput)
	for j, m := range c.Methods {
		if _, ok := findDef(strings.Split(cleanReply(got[j]), "\n"), m.Name); !ok {
			t.Errorf("method %s got a reply without its def", m.Name)
		}
	}
}

// TestExtractSynthetic covers normalization, decorators, helpers and
// imports on small replies.
func TestExtractSynthetic(t *testing.T) {
	ds, _ := Embedded()
	c := ds.Class("ClassEval_9") // BigNumCalculator: add is @staticmethod in the skeleton only
	add := method(t, c, "add")
	for _, tc := range []struct {
		name, reply, want string
		imports           []string
		helpers           int
	}{
		{"decorator from the skeleton, column-0 def",
			"def add(num1, num2):\n    return str(int(num1) + int(num2))\n",
			"    @staticmethod\n    def add(num1, num2):\n        return str(int(num1) + int(num2))", nil, 0},
		{"helpers it calls and imports it uses, not the others",
			"```python\nimport re\nimport numpy as np\nfrom os import path\nclass BigNumCalculator:\n    @staticmethod\n    def add(num1, num2):\n        return BigNumCalculator._pad(re.sub(' ', '', num1), num2)\n\n    @staticmethod\n    def _pad(a, b):\n        return a + b\n\n    def unused(self):\n        return np.zeros(1)\n```\nThis pads.",
			"    @staticmethod\n    def add(num1, num2):\n        return BigNumCalculator._pad(re.sub(' ', '', num1), num2)", []string{"import re"}, 1},
		{"multi-line string content kept, tabs and CRLF",
			"def add(num1, num2):\r\n\ts = '''a\r\nb'''\r\n\treturn s\r\n",
			"    @staticmethod\n    def add(num1, num2):\n        s = '''a\nb'''\n        return s", nil, 0},
		{"multi-line signature",
			"    def add(num1,\n            num2):\n        return num1\n",
			"    @staticmethod\n    def add(num1,\n            num2):\n        return num1", nil, 0},
	} {
		x := Extract(tc.reply, c, add)
		if x.Status != Extracted || x.Source != tc.want {
			t.Errorf("%s: %s %s\ngot:\n%s\nwant:\n%s", tc.name, x.Status, x.Reason, x.Source, tc.want)
		}
		if strings.Join(x.Imports, ";") != strings.Join(tc.imports, ";") || len(x.Helpers) != tc.helpers {
			t.Errorf("%s: imports %q helpers %d", tc.name, x.Imports, len(x.Helpers))
		}
	}
	if x := Extract("```python\ndef add(num1, num2):\n    \"\"\"Adds.\"\"\"\n    pass\n```", c, add); x.Status != ExtractedStub {
		t.Errorf("docstring and pass: %s", x.Status)
	}
}

// TestExtractedSourcesParse compiles every extracted method of the shipped
// outputs (with its helpers, inside a class) and reports how many do not
// parse; their class will fail its tests, as the model's own would.
func TestExtractedSourcesParse(t *testing.T) {
	testenv.Need(t, testenv.PythonInstalled())
	out, err := EmbeddedOutputs()
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := Embedded()
	var srcs []string
	var who []string
	for _, model := range out.Models() {
		for _, mode := range out.ModesOf(model) {
			for _, c := range ds.Classes {
				for _, m := range c.Methods {
					for _, comp := range out.Completions(model, mode, c, m) {
						if comp.Status != Extracted && comp.Status != ExtractedStub {
							continue
						}
						srcs = append(srcs, "class C:\n"+comp.Source+"\n"+strings.Join(comp.Helpers, "\n")+"\n")
						who = append(who, model+" "+string(mode))
					}
				}
			}
		}
	}
	in, _ := json.Marshal(srcs)
	cmd := exec.Command(testenv.Python, "-I", "-c", "import ast, json, sys\nbad = []\nfor i, s in enumerate(json.load(sys.stdin)):\n    try:\n        ast.parse(s)\n    except SyntaxError:\n        bad.append(i)\nprint(json.dumps(bad))")
	cmd.Stdin = strings.NewReader(string(in))
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var bad []int
	if err := json.Unmarshal(b, &bad); err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, i := range bad {
		per[who[i]]++
	}
	t.Logf("%d of %d extracted methods do not parse: %v", len(bad), len(srcs), per)
	if f := os.Getenv("SUITE_DUMP_UNPARSED"); f != "" {
		var b strings.Builder
		for _, i := range bad {
			b.WriteString("===== " + who[i] + "\n" + srcs[i])
		}
		os.WriteFile(f, []byte(b.String()), 0o644)
	}
	if len(bad) > len(srcs)/10 {
		t.Errorf("%d of %d extracted methods do not parse", len(bad), len(srcs))
	}
}
