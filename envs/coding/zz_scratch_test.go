package coding

import (
	"encoding/json"
	"os"
	"testing"
)

func TestScratchDump(t *testing.T) {
	ds, err := HumanEval()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID      string
		Prompt  string
		Canon   string
		Mutants []Mutant
		Ex      []Example
	}
	var rows []row
	total := 0
	for _, tk := range ds.Tasks {
		ms := Mutate(tk.CanonicalSolution)
		total += len(ms)
		rows = append(rows, row{tk.TaskID, tk.Prompt, tk.CanonicalSolution, ms, ExtractExamples(tk.Prompt, tk.EntryPoint)})
	}
	b, _ := json.Marshal(rows)
	os.WriteFile("/tmp/mutants.json", b, 0o644)
	t.Logf("%d tasks, %d mutants", len(rows), total)
}
