package coding

import (
	"sort"
	"strconv"
	"strings"
)

// mutant is a variant of a solution with one small, realistic mistake.
type mutant struct {
	// Kind names the mutation operator (see mutate).
	Kind string
	// Line is the 1-based line of the solution the mistake is on.
	Line int
	// Code is the mutated solution.
	Code string
}

// The mutation operators, in the order mutate applies them.
const (
	kindRelational = "relational" // < ↔ <=, > ↔ >=, == ↔ !=
	kindArithmetic = "arithmetic" // + ↔ -, * → //, // → *, / → *, % → //, += ↔ -=
	kindConstant   = "constant"   // an integer literal n → n+1 and n−1
	kindBoolean    = "boolean"    // True ↔ False; `not` dropped
	kindLogical    = "logical"    // and ↔ or
	kindReturn     = "return"     // a return value replaced by another return's
	kindStatement  = "statement"  // a simple statement replaced by `pass`
)

var kindOrder = []string{kindRelational, kindArithmetic, kindConstant, kindBoolean, kindLogical, kindReturn, kindStatement}

// pyToken is one lexical token of Python source.
type pyToken struct {
	kind       byte // 'n' name, '0' number, 's' string, 'o' operator, '#' comment, '\n' newline
	start, end int
	line       int
}

var pyOps = []string{"**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>"}

// tokenize splits Python source into tokens. It understands string literals
// (prefixes, triple quotes, escapes), comments and numbers well enough that
// mutations never touch the inside of a string or a comment.
func tokenize(src string) []pyToken {
	var toks []pyToken
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			toks = append(toks, pyToken{'\n', i, i + 1, line})
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			line++
			i += 2
		case c == '#':
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = len(src) - i
			}
			toks = append(toks, pyToken{'#', i, i + j, line})
			i += j
		case isNameStart(c):
			j := i
			for j < len(src) && isNameChar(src[j]) {
				j++
			}
			// A string prefix (r, b, f, u, rb, …) directly before a quote.
			if j < len(src) && (src[j] == '\'' || src[j] == '"') && j-i <= 2 && strings.Trim(strings.ToLower(src[i:j]), "rbfu") == "" {
				end, nl := scanString(src, j)
				toks = append(toks, pyToken{'s', i, end, line})
				line += nl
				i = end
				continue
			}
			toks = append(toks, pyToken{'n', i, j, line})
			i = j
		case c == '\'' || c == '"':
			end, nl := scanString(src, i)
			toks = append(toks, pyToken{'s', i, end, line})
			line += nl
			i = end
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) {
				d := src[j]
				if isNameChar(d) || d == '.' {
					j++
				} else if (d == '+' || d == '-') && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(strings.ToLower(src[i:j]), "0x") {
					j++
				} else {
					break
				}
			}
			toks = append(toks, pyToken{'0', i, j, line})
			i = j
		default:
			n := 1
			for _, op := range pyOps {
				if strings.HasPrefix(src[i:], op) {
					n = len(op)
					break
				}
			}
			toks = append(toks, pyToken{'o', i, i + n, line})
			i += n
		}
	}
	return toks
}

func isNameStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isNameChar(c byte) bool { return isNameStart(c) || c >= '0' && c <= '9' }

// scanString returns the end of the string literal whose quote is at q and
// the number of newlines inside it. An unterminated literal ends the source.
func scanString(src string, q int) (end, newlines int) {
	quote := src[q]
	triple := strings.HasPrefix(src[q:], strings.Repeat(string(quote), 3))
	i := q + 1
	if triple {
		i = q + 3
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\\':
			if i+1 < len(src) && src[i+1] == '\n' {
				newlines++
			}
			i += 2
			continue
		case c == '\n':
			newlines++
			if !triple {
				return i, newlines - 1
			}
		case c == quote:
			if !triple {
				return i + 1, newlines
			}
			if strings.HasPrefix(src[i:], strings.Repeat(string(quote), 3)) {
				return i + 3, newlines
			}
		}
		i++
	}
	return len(src), newlines
}

var pyKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

// operand reports whether a token ends an operand, so that an operator
// after it is binary.
func operand(src string, t pyToken) bool {
	switch t.kind {
	case '0', 's':
		return true
	case 'n':
		w := src[t.start:t.end]
		return !pyKeywords[w] || w == "True" || w == "False" || w == "None"
	case 'o':
		w := src[t.start:t.end]
		return w == ")" || w == "]" || w == "}"
	}
	return false
}

type edit struct {
	kind       string
	start, end int
	repl       string
	line       int
}

var swaps = map[string]map[string]string{
	kindRelational: {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="},
	kindArithmetic: {"+": "-", "-": "+", "*": "//", "//": "*", "/": "*", "%": "//", "+=": "-=", "-=": "+="},
}

// mutate returns every single-point mutant of a Python solution that the
// operators produce, without duplicates and without the solution itself,
// ordered by operator (see kindOrder) and then by position:
//
//   - relational: < ↔ <=, > ↔ >=, == ↔ !=
//   - arithmetic (binary operators only): + ↔ -, * → //, // → *, / → *,
//     % → //, += ↔ -=
//   - constant: a decimal integer literal n → n+1 and n−1 (0 → 1 only)
//   - boolean: True ↔ False, and a `not` dropped
//   - logical: and ↔ or
//   - return: the value of a return replaced by that of another return of
//     a different value
//   - statement: a one-line simple statement replaced by `pass`
//
// Nothing inside a string literal or a comment is touched. A mutant may be
// equivalent to the solution (pass every test); the env does not care, as
// it scores code by running the hidden tests.
func mutate(code string) []mutant {
	toks := tokenize(code)
	var edits []edit
	// Significant tokens only, for the operand test.
	prev := func(i int) (pyToken, bool) {
		for j := i - 1; j >= 0; j-- {
			if toks[j].kind != '#' {
				return toks[j], toks[j].kind != '\n'
			}
		}
		return pyToken{}, false
	}
	next := func(i int) (pyToken, bool) {
		for j := i + 1; j < len(toks); j++ {
			if toks[j].kind != '#' {
				return toks[j], true
			}
		}
		return pyToken{}, false
	}
	var returns []edit // value spans of return statements
	for i, t := range toks {
		w := code[t.start:t.end]
		switch t.kind {
		case 'o':
			if r, ok := swaps[kindRelational][w]; ok {
				edits = append(edits, edit{kindRelational, t.start, t.end, r, t.line})
			}
			if r, ok := swaps[kindArithmetic][w]; ok {
				p, ok := prev(i)
				if ok && operand(code, p) {
					edits = append(edits, edit{kindArithmetic, t.start, t.end, r, t.line})
				}
			}
		case '0':
			n, err := strconv.Atoi(strings.ReplaceAll(w, "_", ""))
			if err != nil || (len(w) > 1 && w[0] == '0') {
				break
			}
			edits = append(edits, edit{kindConstant, t.start, t.end, strconv.Itoa(n + 1), t.line})
			if n > 0 {
				edits = append(edits, edit{kindConstant, t.start, t.end, strconv.Itoa(n - 1), t.line})
			}
		case 'n':
			switch w {
			case "True":
				edits = append(edits, edit{kindBoolean, t.start, t.end, "False", t.line})
			case "False":
				edits = append(edits, edit{kindBoolean, t.start, t.end, "True", t.line})
			case "not":
				if n, ok := next(i); ok && n.kind != '\n' {
					edits = append(edits, edit{kindBoolean, t.start, n.start, "", t.line})
				}
			case "and":
				edits = append(edits, edit{kindLogical, t.start, t.end, "or", t.line})
			case "or":
				edits = append(edits, edit{kindLogical, t.start, t.end, "and", t.line})
			case "return":
				if p, ok := prev(i); ok && !(p.kind == 'o' && code[p.start:p.end] == ":") {
					break // `return` must start its statement
				}
				end := statementEnd(code, toks, i)
				if n, ok := next(i); ok && n.start < end {
					returns = append(returns, edit{kindReturn, n.start, end, code[n.start:end], t.line})
				}
			}
		}
	}
	for _, a := range returns {
		for _, b := range returns {
			if strings.TrimSpace(a.repl) != strings.TrimSpace(b.repl) {
				edits = append(edits, edit{kindReturn, a.start, a.end, b.repl, a.line})
			}
		}
	}
	edits = append(edits, statementEdits(code, toks)...)

	sort.SliceStable(edits, func(a, b int) bool {
		ka, kb := kindRank(edits[a].kind), kindRank(edits[b].kind)
		if ka != kb {
			return ka < kb
		}
		return edits[a].start < edits[b].start
	})
	seen := map[string]bool{code: true}
	var out []mutant
	for _, e := range edits {
		m := code[:e.start] + e.repl + code[e.end:]
		if seen[m] {
			continue
		}
		seen[m] = true
		out = append(out, mutant{Kind: e.kind, Line: e.line, Code: m})
	}
	return out
}

func kindRank(k string) int {
	for i, x := range kindOrder {
		if x == k {
			return i
		}
	}
	return len(kindOrder)
}

// statementEnd returns the byte offset where the logical line holding token
// i ends (at a newline outside brackets, a `;`, or a comment).
func statementEnd(code string, toks []pyToken, i int) int {
	depth := 0
	end := toks[i].end
	for j := i; j < len(toks); j++ {
		t := toks[j]
		w := code[t.start:t.end]
		switch {
		case t.kind == 'o' && strings.Contains("([{", w):
			depth++
		case t.kind == 'o' && strings.Contains(")]}", w):
			depth--
		case t.kind == '#' || (t.kind == '\n' || w == ";") && depth <= 0:
			return end
		}
		end = t.end
	}
	return end
}

// statementEdits replaces each simple statement that sits alone on one
// physical line with `pass` (keeping the indentation, so the code stays
// valid). Compound statement headers, `else:`-like lines and multi-line
// statements are left alone.
func statementEdits(code string, toks []pyToken) []edit {
	var out []edit
	lineStart := 0
	for lineNo, line := range strings.SplitAfter(code, "\n") {
		start := lineStart
		lineStart += len(line)
		body := strings.TrimRight(line, "\n")
		trimmed := strings.TrimSpace(body)
		if trimmed == "" || trimmed == "pass" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		// Tokens on this line must start and end on it and balance.
		depth, ok, first := 0, true, ""
		for _, t := range toks {
			if t.end <= start || t.start >= start+len(body) {
				continue
			}
			if t.start < start || t.end > start+len(body) {
				ok = false // a string spanning lines
				break
			}
			w := code[t.start:t.end]
			if first == "" && t.kind != '#' {
				first = w
			}
			switch {
			case t.kind == 'o' && strings.Contains("([{", w):
				depth++
			case t.kind == 'o' && strings.Contains(")]}", w):
				depth--
			}
		}
		if !ok || depth != 0 || strings.HasSuffix(trimmed, ":") || strings.HasSuffix(trimmed, "\\") {
			continue
		}
		switch first {
		case "def", "class", "if", "elif", "else", "for", "while", "try", "except", "finally", "with", "@", "import", "from", "global", "nonlocal":
			continue
		case ")", "]", "}":
			continue // the tail of a multi-line statement
		}
		if !ok || !startsStatement(code, toks, start) {
			continue
		}
		indent := body[:len(body)-len(strings.TrimLeft(body, " \t"))]
		// A statement after `if x:` on the same line is not alone; skip.
		if strings.Contains(trimmed, ":") && (strings.HasPrefix(trimmed, "if ") || strings.HasPrefix(trimmed, "for ")) {
			continue
		}
		out = append(out, edit{kindStatement, start, start + len(body), indent + "pass", lineNo + 1})
	}
	return out
}

// startsStatement reports whether the physical line at offset start begins
// a logical line (the previous significant token is a newline outside
// brackets).
func startsStatement(code string, toks []pyToken, start int) bool {
	depth := 0
	for _, t := range toks {
		if t.start >= start {
			break
		}
		w := code[t.start:t.end]
		switch {
		case t.kind == 'o' && strings.Contains("([{", w):
			depth++
		case t.kind == 'o' && strings.Contains(")]}", w):
			depth--
		}
	}
	return depth == 0
}

// mutantPool picks up to n mutants, round-robin across operator kinds (in
// kindOrder, each kind in source order), so that every kind is represented.
func mutantPool(all []mutant, n int) []mutant {
	if n <= 0 || len(all) <= n {
		return all
	}
	byKind := map[string][]mutant{}
	for _, m := range all {
		byKind[m.Kind] = append(byKind[m.Kind], m)
	}
	var out []mutant
	for round := 0; len(out) < n; round++ {
		added := false
		for _, k := range kindOrder {
			if ms := byKind[k]; round < len(ms) && len(out) < n {
				out = append(out, ms[round])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return out
}
