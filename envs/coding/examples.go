package coding

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// example is one usage example taken from a prompt's docstring: an
// expression (or a statement, when Want is empty) and the value it shows.
type example struct {
	Source string `json:"source"`
	Want   string `json:"want"`
}

// extractExamples returns the examples written in a HumanEval prompt. Two
// forms are recognised:
//
//   - doctest: `>>> expr` (with `...` continuation lines) followed by the
//     expected output up to a blank line, the next `>>>` or the docstring's
//     end;
//   - call lines, the other form HumanEval uses (88 of its 164 prompts have
//     no `>>>`): a line that starts with `entry_point(`, whose call is
//     followed by `==>`, `=>`, `➞`, `->`, `→`, `==`, `=` or `should return`
//     and the expected value. When the value contains a further `=` (as in
//     `-> 19 - 5 - 6 = 8`), the part after the last one is taken.
//
// Examples are not checked here: the env keeps only those the canonical
// solution passes (see the env's visible tests), which drops the prose that
// merely looks like an example.
func extractExamples(prompt, entryPoint string) []example {
	lines := strings.Split(prompt, "\n")
	var out []example
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if src, ok := strings.CutPrefix(t, ">>>"); ok {
			src = strings.TrimSpace(src)
			for i+1 < len(lines) {
				n := strings.TrimSpace(lines[i+1])
				cont, ok := strings.CutPrefix(n, "...")
				if !ok {
					break
				}
				src += "\n" + strings.TrimPrefix(cont, " ")
				i++
			}
			var want []string
			for i+1 < len(lines) {
				n := strings.TrimSpace(lines[i+1])
				if n == "" || strings.HasPrefix(n, ">>>") || strings.Contains(n, `"""`) || strings.Contains(n, `'''`) {
					break
				}
				want = append(want, n)
				i++
			}
			if src != "" {
				out = append(out, example{Source: src, Want: strings.Join(want, "\n")})
			}
			continue
		}
		if ex, ok := callExample(t, entryPoint); ok {
			out = append(out, ex)
		}
	}
	return out
}

// callExample parses a line of the form `f(args) SEP value`.
func callExample(line, entryPoint string) (example, bool) {
	line = strings.TrimLeft(line, "-*• \t")
	if !strings.HasPrefix(line, entryPoint+"(") {
		return example{}, false
	}
	end := matchParen(line, len(entryPoint))
	if end < 0 {
		return example{}, false
	}
	call, rest := line[:end+1], strings.TrimSpace(line[end+1:])
	want := ""
	for _, sep := range []string{"==>", "=>", "➞", "->", "→", "==", "should return", "returns", "="} {
		if v, ok := strings.CutPrefix(rest, sep); ok {
			want = strings.TrimSpace(v)
			break
		}
	}
	if want == "" {
		return example{}, false
	}
	if i := strings.LastIndex(want, "="); i >= 0 && !strings.Contains(want, "==") {
		want = strings.TrimSpace(want[i+1:])
	}
	want = strings.TrimRight(want, ".,;")
	if want == "" {
		return example{}, false
	}
	return example{Source: call, Want: want}, true
}

// matchParen returns the index of the parenthesis closing the one at open,
// skipping string literals, or -1.
func matchParen(s string, open int) int {
	depth := 0
	var quote byte
	for i := open; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// harnessTemplate runs the examples in order in the program's globals and
// prints a line for each failure ("example N: FAIL …", "example N: ERROR
// …") and, when verbose, for each success ("example N: ok"), flushing each,
// then a summary; it exits 1 if any failed. A value matches when it equals the evaluated expected text (floats
// within 1e-6 relative), or its repr equals the text, or what it printed
// does.
const harnessTemplate = `
def __troupe_examples(cases, verbose):
    import io, sys, contextlib
    g = globals()
    failed = 0
    for i, (src, want) in enumerate(cases, 1):
        head = "example %%d: " %% i
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                if want == "":
                    exec(compile(src, "<example %%d>" %% i, "exec"), g)
                    got = None
                else:
                    got = eval(compile(src, "<example %%d>" %% i, "eval"), g)
        except BaseException as e:
            failed += 1
            print(head + "ERROR: " + src + "\n    " + type(e).__name__ + ": " + str(e)[:300], flush=True)
            continue
        if want == "":
            if verbose:
                print(head + "ok", flush=True)
            continue
        ok = False
        try:
            exp = eval(compile(want, "<expected>", "eval"), g)
            if isinstance(got, float) or isinstance(exp, float):
                ok = abs(got - exp) <= 1e-6 * max(1.0, abs(exp))
            else:
                ok = bool(got == exp) and type(got) is type(exp)
        except BaseException:
            pass
        printed = out.getvalue().strip()
        if not ok:
            try:
                ok = repr(got) == want or (got is None and printed == want)
            except BaseException:
                pass
        if ok:
            if verbose:
                print(head + "ok", flush=True)
        else:
            failed += 1
            try:
                shown = repr(got)[:300]
            except BaseException as e:
                shown = "<unprintable %%s>" %% type(e).__name__
            print(head + "FAIL: " + src + "\n    expected: " + want + "\n    got:      " + shown, flush=True)
    print("%%d of %%d examples passed" %% (len(cases) - failed, len(cases)), flush=True)
    sys.exit(1 if failed else 0)

__troupe_examples(%s, %s)
`

// harness returns the Python code that runs the examples against the
// functions defined before it. It reports failures, like a test runner;
// verbose adds a line for each example that passed.
func harness(examples []example, verbose bool) string {
	cases := make([][2]string, len(examples))
	for i, e := range examples {
		cases[i] = [2]string{e.Source, e.Want}
	}
	// A JSON array of strings is a valid Python literal.
	b, _ := json.Marshal(cases)
	v := "False"
	if verbose {
		v = "True"
	}
	return fmt.Sprintf(harnessTemplate, b, v)
}

// passedExamples returns the 1-based numbers of the examples a harness run
// reported as ok.
func passedExamples(stdout string) map[int]bool {
	ok := map[int]bool{}
	for _, line := range strings.Split(stdout, "\n") {
		rest, found := strings.CutPrefix(line, "example ")
		if !found {
			continue
		}
		num, status, found := strings.Cut(rest, ": ")
		if !found || status != "ok" {
			continue
		}
		if n, err := strconv.Atoi(num); err == nil {
			ok[n] = true
		}
	}
	return ok
}
