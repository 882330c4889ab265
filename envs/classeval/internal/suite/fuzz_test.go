package suite

import (
	"slices"
	"strings"
	"testing"
)

// FuzzExtract feeds arbitrary replies to the extractor, as a model (or a
// user's outputs directory) may send anything: it must never panic, and
// what it returns must keep Extraction's promises — a known status, no
// code exactly when nothing was extracted, the method's own def at
// class-member indentation otherwise, the same result every time.
func FuzzExtract(f *testing.F) {
	ds, err := Embedded()
	if err != nil {
		f.Fatal(err)
	}
	// ClassEval_9's add is a @staticmethod in the skeleton only, so the
	// decorator path runs too.
	classes := []*Class{ds.Class("ClassEval_1"), ds.Class("ClassEval_9")}
	for _, seed := range []string{
		"",
		"def add(num1, num2):\n    return str(int(num1) + int(num2))\n",
		"```python\nimport re\nclass BigNumCalculator:\n    @staticmethod\n    def add(num1, num2):\n        return re.sub(' ', '', num1)\n```\nThis pads.",
		"Sure:\n```python\ndef calculate_circle_area(self):\n    return math.pi * (self.radius ** 2)\n```",
		"    if self.limit == 0:\n        return 1\n<|endoftext|>",
		"def add(num1,\n        num2):\n    s = '''a\r\nb\n",
		"\t\treturn (\n",
		"```\n```\n```python\n",
	} {
		f.Add(seed, uint8(0), uint8(0))
		f.Add(seed, uint8(1), uint8(0))
	}
	f.Fuzz(func(t *testing.T, reply string, ci, mi uint8) {
		c := classes[int(ci)%len(classes)]
		m := c.Methods[int(mi)%len(c.Methods)]
		p := parseReply(reply)
		// Extract is the method-level path: a bare body allowed.
		if !sameExtraction(Extract(reply, c, m), p.extract(c, m, true)) {
			t.Fatalf("Extract and the parsed reply disagree")
		}
		// Method-level replies (a bare body allowed) and whole classes.
		for _, bareBody := range []bool{true, false} {
			x := p.extract(c, m, bareBody)
			if again := parseReply(reply).extract(c, m, bareBody); !sameExtraction(x, again) {
				t.Fatalf("not deterministic: %+v then %+v", x, again)
			}
			switch x.Status {
			case NotExtracted:
				if x.Source != "" || len(x.Imports) > 0 || len(x.Helpers) > 0 {
					t.Fatalf("nothing extracted but code returned: %+v", x)
				}
				continue
			case Extracted, ExtractedTruncated, ExtractedStub:
			default:
				t.Fatalf("unknown status %q", x.Status)
			}
			if x.Reason == "" && x.Status != Extracted {
				t.Fatalf("status %s without a reason", x.Status)
			}
			// The def line, after the decorators, at four spaces.
			lines := strings.Split(x.Source, "\n")
			k := 0
			for k < len(lines) && strings.HasPrefix(lines[k], "    @") {
				k++
			}
			if k == len(lines) {
				t.Fatalf("%s source has decorators only:\n%s", x.Status, x.Source)
			}
			if d, name, ok := defLine(lines[k]); !ok || d != 4 || name != m.Name {
				t.Fatalf("%s source does not open with the def of %s:\n%s", x.Status, m.Name, x.Source)
			}
			if strings.HasSuffix(x.Source, "\n") {
				t.Fatalf("trailing newline kept:\n%q", x.Source)
			}
		}
	})
}

func sameExtraction(a, b Extraction) bool {
	return a.Source == b.Source && a.Status == b.Status && a.Reason == b.Reason &&
		slices.Equal(a.Imports, b.Imports) && slices.Equal(a.Helpers, b.Helpers)
}

// FuzzParseDataset feeds arbitrary bytes to the dataset parser a user's
// env.params.dataset goes through: never a panic; an error that names the
// file, or a dataset whose classes can be found by their ids.
func FuzzParseDataset(f *testing.F) {
	f.Add([]byte(`[{"task_id": "T", "class_name": "A", "skeleton": "s", "test": "x = 1", "class_constructor": "class A:"}]`))
	f.Add([]byte(`[{"task_id": "T", "class_name": "A", "skeleton": "s", "test": "class ATest(unittest.TestCase): pass", "class_constructor": "class A:", "methods_info": [{"method_name": "f"}]}]`))
	f.Add([]byte("[]"))
	f.Add([]byte("\x1f\x8b"))
	f.Add([]byte("[null]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := ParseDataset("x.json", data)
		if err != nil {
			if ds != nil {
				t.Fatalf("a dataset and an error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "x.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(ds.Classes) == 0 {
			t.Fatal("no error and no classes")
		}
		for _, c := range ds.Classes {
			if ds.Class(c.ID) != c {
				t.Fatalf("class %q not found by its id", c.ID)
			}
			for j, m := range c.Methods {
				if m.Index != j || c.MethodIndex(m.Name) != j {
					t.Fatalf("%s: method %d %q indexed %d / %d", c.ID, j, m.Name, m.Index, c.MethodIndex(m.Name))
				}
			}
		}
	})
}
