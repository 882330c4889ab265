package suite

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// A Dataset is a set of classes in ClassEval's schema.
type Dataset struct {
	// Source names where it was loaded from (a file path, or "embedded").
	Source string
	// Classes are the tasks in file order.
	Classes []*Class
	byID    map[string]*Class
}

// Class returns the class with task id id, or nil.
func (d *Dataset) Class(id string) *Class { return d.byID[id] }

// A Class is one ClassEval task: a Python class to implement method by
// method, and its unittest suite.
type Class struct {
	// ID is the task id, e.g. "ClassEval_0".
	ID string
	// Name is the class name, e.g. "AccessGatewayFilter".
	Name string
	// Skeleton is the class skeleton the models were prompted with
	// (imports, class docstring, __init__, every method's signature and
	// docstring).
	Skeleton string
	// Imports are the dataset's import statements (import_statement).
	Imports []string
	// Constructor is the dataset's class_constructor: the class line and
	// its __init__ (which sets the fields), or the class line alone.
	Constructor string
	// Fields are the instance fields the class declares (fields).
	Fields []string
	// Methods are the methods to implement, in the dataset's order.
	Methods []*Method
	// Test is the class's full unittest source (hidden from agents).
	Test string
	// TestCases are the names of every unittest.TestCase class defined in
	// Test, in source order (the dataset's test_classes list is not
	// trusted: one of its entries carries a stray space).
	TestCases []string
	// ClassTestCases are the TestCases no method owns (usually the one
	// testing the class as a whole); see [Method.TestCase].
	ClassTestCases []string
	// Canonical is the canonical solution of the whole class
	// (solution_code). It serves only to check the harness.
	Canonical string
	methodIdx map[string]int
}

// MethodIndex returns the index in Methods of the method named name, or -1.
func (c *Class) MethodIndex(name string) int {
	if i, ok := c.methodIdx[name]; ok {
		return i
	}
	return -1
}

// A Method is one method of a class to implement.
type Method struct {
	// Name is the method's name.
	Name string
	// Index is its position in Class.Methods.
	Index int
	// Description is its signature and docstring as the dataset gives them
	// (method_description).
	Description string
	// Decorators are the decorator lines the skeleton puts above the
	// method (e.g. "@staticmethod"), which the dataset's description
	// sometimes omits. An implementation without decorators gets these.
	Decorators []string
	// Examples is the example part of its docstring: every line from the
	// first `>>>` on, dedented, with ">>>x" read as ">>> x" (doctest
	// syntax). "" when the docstring has no example.
	Examples string
	// ExampleCount is the number of `>>>` lines in Examples.
	ExampleCount int
	// Deps are its dependencies as the dataset declares them.
	Deps Dependencies
	// MethodDeps are the indexes into Class.Methods of Deps.Methods (the
	// names that are methods of the class to implement; others, such as
	// __init__, are left out).
	MethodDeps []int
	// TestCase is the TestCase that scores this method: a TestCase named
	// CLASS+"Test"+CamelCase(method) if the suite has one, else the
	// dataset's test_class if it exists, no other method owns it and its
	// code calls the method. "" when neither holds (the method has no
	// test of its own; 4 of the 313 shipped methods): it is then scored by
	// the class's ClassTestCases (see [TestResult.MethodPass]).
	TestCase string
	// DatasetTestCase is the dataset's test_class, kept for reference.
	DatasetTestCase string
	// Canonical is the canonical implementation (solution_code). It serves
	// only to check the harness.
	Canonical string
}

// Dependencies are a method's dependencies (methods_info[].dependencies).
type Dependencies struct {
	// Standalone reports that the method uses no field, library or other
	// method.
	Standalone bool
	// Libs are the libraries it uses (lib_dependencies).
	Libs []string
	// Fields are the instance fields it uses (field_dependencies).
	Fields []string
	// Methods are the methods it calls (method_dependencies).
	Methods []string
}

// rawTask mirrors one task of ClassEval's JSON schema. Pointers tell a
// missing field from an empty one.
type rawTask struct {
	TaskID           *string          `json:"task_id"`
	Skeleton         *string          `json:"skeleton"`
	Test             *string          `json:"test"`
	SolutionCode     *string          `json:"solution_code"`
	ImportStatement  []string         `json:"import_statement"`
	ClassName        *string          `json:"class_name"`
	ClassConstructor *string          `json:"class_constructor"`
	Fields           []string         `json:"fields"`
	MethodsInfo      []*rawMethodInfo `json:"methods_info"`
}

type rawMethodInfo struct {
	MethodName        *string `json:"method_name"`
	MethodDescription *string `json:"method_description"`
	TestClass         *string `json:"test_class"`
	SolutionCode      *string `json:"solution_code"`
	Dependencies      *struct {
		Standalone        bool     `json:"Standalone"`
		LibDependencies   []string `json:"lib_dependencies"`
		FieldDependencies []string `json:"field_dependencies"`
		MethodDeps        []string `json:"method_dependencies"`
	} `json:"dependencies"`
}

// LoadDataset reads a dataset in ClassEval's schema from path: a JSON array
// of tasks, gzip-compressed when the file starts with gzip's magic bytes.
// Errors name the file, the task and the field.
func LoadDataset(path string) (*Dataset, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("classeval dataset: %w", err)
	}
	return ParseDataset(path, b)
}

// readMaybeGzip returns data, decompressed when it is gzip.
func readMaybeGzip(name string, data []byte) ([]byte, error) {
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", name, err)
	}
	return out, nil
}

// ParseDataset parses a dataset (see [LoadDataset]); name is used in
// errors and as Dataset.Source.
func ParseDataset(name string, data []byte) (*Dataset, error) {
	data, err := readMaybeGzip(name, data)
	if err != nil {
		return nil, err
	}
	var raw []*rawTask
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of ClassEval tasks: %w", name, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: no tasks", name)
	}
	ds := &Dataset{Source: name, byID: map[string]*Class{}}
	for i, rt := range raw {
		c, err := buildClass(rt)
		if err != nil {
			id := ""
			if rt != nil && rt.TaskID != nil {
				id = " (" + *rt.TaskID + ")"
			}
			return nil, fmt.Errorf("%s: task %d%s: %w", name, i, id, err)
		}
		if ds.byID[c.ID] != nil {
			return nil, fmt.Errorf("%s: task %d: task_id %q appears twice", name, i, c.ID)
		}
		ds.byID[c.ID] = c
		ds.Classes = append(ds.Classes, c)
	}
	return ds, nil
}

func need(field string, p *string) (string, error) {
	if p == nil {
		return "", fmt.Errorf("%s: missing", field)
	}
	if strings.TrimSpace(*p) == "" {
		return "", fmt.Errorf("%s: empty", field)
	}
	return *p, nil
}

var (
	identRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	testCaseRe  = regexp.MustCompile(`(?m)^class\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
	skelDefRe   = regexp.MustCompile(`^([ \t]+)(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
	promptNoSpc = regexp.MustCompile(`^(\s*)>>>(\S)`)
)

func buildClass(rt *rawTask) (*Class, error) {
	if rt == nil {
		return nil, fmt.Errorf("null task")
	}
	c := &Class{methodIdx: map[string]int{}}
	var err error
	if c.ID, err = need("task_id", rt.TaskID); err != nil {
		return nil, err
	}
	if c.Name, err = need("class_name", rt.ClassName); err != nil {
		return nil, err
	}
	if !identRe.MatchString(c.Name) {
		return nil, fmt.Errorf("class_name: %q is not a Python identifier", c.Name)
	}
	if c.Skeleton, err = need("skeleton", rt.Skeleton); err != nil {
		return nil, err
	}
	if c.Test, err = need("test", rt.Test); err != nil {
		return nil, err
	}
	if rt.ClassConstructor == nil {
		return nil, fmt.Errorf("class_constructor: missing")
	}
	c.Constructor = strings.ReplaceAll(*rt.ClassConstructor, "\r\n", "\n")
	if first, _, _ := strings.Cut(strings.TrimLeft(c.Constructor, "\n"), "\n"); !strings.HasPrefix(strings.TrimSpace(first), "class ") {
		return nil, fmt.Errorf("class_constructor: does not start with a class line: %.60q", c.Constructor)
	}
	if rt.SolutionCode != nil {
		c.Canonical = *rt.SolutionCode
	}
	c.Imports = rt.ImportStatement
	c.Fields = rt.Fields
	for _, m := range testCaseRe.FindAllStringSubmatch(c.Test, -1) {
		c.TestCases = append(c.TestCases, m[1])
	}
	if len(c.TestCases) == 0 {
		return nil, fmt.Errorf("test: defines no TestCase class")
	}
	if len(rt.MethodsInfo) == 0 {
		return nil, fmt.Errorf("methods_info: empty")
	}
	decorators := skeletonDecorators(c.Skeleton)
	for j, rm := range rt.MethodsInfo {
		field := fmt.Sprintf("methods_info[%d]", j)
		if rm == nil {
			return nil, fmt.Errorf("%s: null", field)
		}
		m := &Method{Index: j}
		if m.Name, err = need(field+".method_name", rm.MethodName); err != nil {
			return nil, err
		}
		if !identRe.MatchString(m.Name) {
			return nil, fmt.Errorf("%s.method_name: %q is not a Python identifier", field, m.Name)
		}
		if _, dup := c.methodIdx[m.Name]; dup {
			return nil, fmt.Errorf("%s.method_name: %q appears twice", field, m.Name)
		}
		if m.Description, err = need(field+".method_description", rm.MethodDescription); err != nil {
			return nil, err
		}
		if _, ok := findDef(strings.Split(normalizeText(m.Description), "\n"), m.Name); !ok {
			return nil, fmt.Errorf("%s.method_description: no line `def %s(`", field, m.Name)
		}
		if rm.TestClass != nil {
			m.DatasetTestCase = strings.TrimSpace(*rm.TestClass)
		}
		if rm.SolutionCode != nil {
			m.Canonical = *rm.SolutionCode
		}
		if d := rm.Dependencies; d != nil {
			m.Deps = Dependencies{Standalone: d.Standalone, Libs: d.LibDependencies, Fields: d.FieldDependencies, Methods: d.MethodDeps}
		}
		m.Decorators = decorators[m.Name]
		m.Examples, m.ExampleCount = docExamples(m.Description)
		c.methodIdx[m.Name] = j
		c.Methods = append(c.Methods, m)
	}
	for _, m := range c.Methods {
		for _, dep := range m.Deps.Methods {
			if k, ok := c.methodIdx[dep]; ok && k != m.Index {
				m.MethodDeps = append(m.MethodDeps, k)
			}
		}
	}
	c.resolveTestCases()
	return c, nil
}

// camel turns snake_case into CamelCase ("_save_cookies" -> "SaveCookies").
func camel(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(s, "_") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

// resolveTestCases assigns each method its TestCase (see Method.TestCase)
// and lists the rest as ClassTestCases.
func (c *Class) resolveTestCases() {
	exists := map[string]bool{}
	for _, n := range c.TestCases {
		exists[n] = true
	}
	owned := map[string]bool{}
	for _, m := range c.Methods {
		if n := c.Name + "Test" + camel(m.Name); exists[n] {
			m.TestCase = n
			owned[n] = true
		}
	}
	for _, m := range c.Methods {
		n := m.DatasetTestCase
		if m.TestCase != "" || !exists[n] || owned[n] {
			continue
		}
		if strings.Contains(testCaseSource(c.Test, n), m.Name+"(") {
			m.TestCase = n
			owned[n] = true
		}
	}
	for _, n := range c.TestCases {
		if !owned[n] {
			c.ClassTestCases = append(c.ClassTestCases, n)
		}
	}
}

// testCaseSource returns the source of TestCase class name within test:
// from its class line to the next top-level line.
func testCaseSource(test, name string) string {
	lines := strings.Split(test, "\n")
	re := regexp.MustCompile(`^class\s+` + regexp.QuoteMeta(name) + `\s*\(`)
	for i, l := range lines {
		if !re.MatchString(l) {
			continue
		}
		j := i + 1
		for j < len(lines) && (strings.TrimSpace(lines[j]) == "" || lines[j][0] == ' ' || lines[j][0] == '\t') {
			j++
		}
		return strings.Join(lines[i:j], "\n")
	}
	return ""
}

// skeletonDecorators maps each method name to the decorator lines directly
// above its def in the skeleton (member-level defs only).
func skeletonDecorators(skel string) map[string][]string {
	lines := strings.Split(normalizeText(skel), "\n")
	out := map[string][]string{}
	for i, l := range lines {
		m := skelDefRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if _, seen := out[m[2]]; seen {
			continue
		}
		var decs []string
		for k := i - 1; k >= 0; k-- {
			t := strings.TrimSpace(lines[k])
			if !strings.HasPrefix(t, "@") || indentOf(lines[k]) != len(m[1]) {
				break
			}
			decs = append([]string{t}, decs...)
		}
		out[m[2]] = decs
	}
	return out
}

// docExamples returns the example part of a method description's
// docstring (see Method.Examples) and its number of `>>>` lines.
func docExamples(desc string) (string, int) {
	lines := strings.Split(normalizeText(desc), "\n")
	start := -1
	for i, l := range lines {
		if strings.Contains(l, ">>>") {
			start = i
			break
		}
	}
	if start < 0 {
		return "", 0
	}
	var ex []string
	for _, l := range lines[start:] {
		t := strings.TrimSpace(l)
		if t == `"""` || t == `'''` || t == "”“”" {
			break // the docstring's closing quotes
		}
		ex = append(ex, l)
	}
	ex = dedent(ex)
	n := 0
	for i, l := range ex {
		ex[i] = promptNoSpc.ReplaceAllString(l, "$1>>> $2")
		if strings.HasPrefix(strings.TrimSpace(ex[i]), ">>>") {
			n++
		}
	}
	return strings.TrimRight(strings.Join(ex, "\n"), "\n \t") + "\n", n
}

// dedent removes the common leading spaces of the non-blank lines.
func dedent(lines []string) []string {
	min := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if d := indentOf(l); min < 0 || d < min {
			min = d
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= min && min > 0 && strings.TrimSpace(l[:min]) == "" {
			out[i] = l[min:]
		} else {
			out[i] = strings.TrimLeft(l, " ")
		}
	}
	return out
}

// indentOf returns the number of leading spaces of l.
func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// normalizeText turns CRLF and CR into LF and tabs into four spaces.
func normalizeText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.ReplaceAll(s, "\t", "    ")
}
