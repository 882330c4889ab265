package coding

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// humanEval is OpenAI's HumanEval (MIT, see data/HumanEval.LICENSE): 164
// hand-written Python problems, each a signature with a docstring, a
// canonical solution and hidden unit tests.
//
//go:embed data/HumanEval.jsonl.gz
var humanEval []byte

// humanEvalName is the name the embedded dataset goes by in errors.
const humanEvalName = "HumanEval.jsonl.gz (embedded)"

// Task is one problem in the HumanEval JSONL schema.
type Task struct {
	// TaskID identifies the problem, e.g. "HumanEval/0".
	TaskID string `json:"task_id"`
	// Prompt is the code the agent starts from: imports, helpers, the
	// signature and the docstring with its examples.
	Prompt string `json:"prompt"`
	// EntryPoint is the name of the function to implement.
	EntryPoint string `json:"entry_point"`
	// CanonicalSolution is a correct body, to be appended to Prompt.
	CanonicalSolution string `json:"canonical_solution"`
	// Test defines check(candidate); it is hidden from the agents.
	Test string `json:"test"`
}

// Dataset is a list of tasks with the file it came from.
type Dataset struct {
	// Name is the file the tasks came from, as errors name it.
	Name string
	// Tasks are the problems in file order.
	Tasks []Task
	// digest identifies the content (for caches keyed by dataset).
	digest [32]byte
}

// LoadDataset reads a HumanEval-schema dataset: one JSON object per line,
// gzip-compressed or not (recognised by content). Blank lines are skipped.
// A line that does not parse, lacks a field or repeats a task_id is an error
// naming the file and the line.
func LoadDataset(path string) (*Dataset, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return parseDataset(path, b)
}

// parseDataset parses dataset content; name is used in errors.
func parseDataset(name string, b []byte) (*Dataset, error) {
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("dataset %s: gzip: %w", name, err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: gzip: %w", name, err)
		}
		b = raw
	}
	ds := &Dataset{Name: name, digest: sha256.Sum256(b)}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var t Task
		dec := json.NewDecoder(bytes.NewReader(text))
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("dataset %s:%d: %v", name, line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("dataset %s:%d: more than one JSON value on the line", name, line)
		}
		if err := t.validate(); err != nil {
			return nil, fmt.Errorf("dataset %s:%d: %v", name, line, err)
		}
		if prev, dup := seen[t.TaskID]; dup {
			return nil, fmt.Errorf("dataset %s:%d: task_id %q already on line %d", name, line, t.TaskID, prev)
		}
		seen[t.TaskID] = line
		ds.Tasks = append(ds.Tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dataset %s:%d: %v", name, line+1, err)
	}
	if len(ds.Tasks) == 0 {
		return nil, fmt.Errorf("dataset %s: no tasks", name)
	}
	return ds, nil
}

func (t Task) validate() error {
	for _, f := range []struct{ name, v string }{
		{"task_id", t.TaskID}, {"prompt", t.Prompt}, {"entry_point", t.EntryPoint},
		{"canonical_solution", t.CanonicalSolution}, {"test", t.Test},
	} {
		if f.v == "" {
			return fmt.Errorf("missing or empty field %q", f.name)
		}
	}
	if !isIdentifier(t.EntryPoint) {
		return fmt.Errorf("task %s: entry_point %q is not a Python identifier", t.TaskID, t.EntryPoint)
	}
	return nil
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= 0x80:
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

var (
	humanEvalOnce sync.Once
	humanEvalDS   *Dataset
	humanEvalErr  error
)

// HumanEval returns the embedded HumanEval dataset (parsed once).
func HumanEval() (*Dataset, error) {
	humanEvalOnce.Do(func() {
		humanEvalDS, humanEvalErr = parseDataset(humanEvalName, humanEval)
	})
	if humanEvalErr != nil {
		return nil, humanEvalErr
	}
	return humanEvalDS, nil
}
