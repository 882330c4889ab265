package coding

import (
	"testing"

	"github.com/troupe-dev/troupe/internal/codetokens"
)

func TestExtractCompletion(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		ok               bool
	}{
		{"fenced body", "```python\n    return x + 1\n```", "    return x + 1\n", true},
		{"fenced full function", "Here:\n```python\nimport math\n\ndef f(x):\n    return x + 1\n```\ndone", "\nimport math\n\ndef f(x):\n    return x + 1\n", true},
		{"prefers the block defining the entry point", "```\nprint(1)\nprint(2)\nprint(3)\n```\n```py\ndef f(x):\n    return x\n```", "\ndef f(x):\n    return x\n", true},
		{"bare body", "    return x + 1", "    return x + 1\n", true},
		{"unindented body", "y = x + 1\nreturn y\n", "    y = x + 1\n    return y\n", true},
		{"tabs and CRLF", "```python\r\n\treturn x\r\n```", "    return x\n", true},
		{"unterminated fence", "```python\n    return 1\n", "    return 1\n", true},
		{"no changes", "NO_CHANGES", "", false},
		{"empty", "  \n", "", false},
	} {
		got, ok := extractCompletion(tc.text, "f")
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestApproxTokens(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0}, {"hello", 1}, {"hello world", 2}, {"a+b", 3}, {"f(x):", 4}, {"has_close_elements", 3},
		{"        return x\n        y", 1 + 1 + 1 + 1 + 1 + 1}, {"for i in range(10):", 7},
	} {
		if got := codetokens.Count(tc.s); got != tc.want {
			t.Errorf("codetokens.Count(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
	ds, err := HumanEval()
	if err != nil {
		t.Fatal(err)
	}
	chars, toks := 0, 0
	for _, task := range ds.Tasks {
		chars += len(task.Prompt) + len(task.CanonicalSolution)
		toks += codetokens.Count(task.Prompt) + codetokens.Count(task.CanonicalSolution)
	}
	r := float64(chars) / float64(toks)
	t.Logf("%.2f characters per token on HumanEval", r)
	if r < 3 || r > 4 {
		t.Errorf("%.2f characters per token on HumanEval, want about 3–4", r)
	}
}
