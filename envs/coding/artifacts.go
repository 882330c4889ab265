package coding

import (
	"encoding/json"
	"fmt"
	"strings"
)

// solution renders the project as one Python file: every function's prompt
// and completion in backlog order, each under a comment saying who wrote
// it and how it fared. Prompts may define helpers of the same name; in the
// file a later definition wins, but each function was scored on its own.
func (e *Env) solution(results []functionResult) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Project of %d functions written by %d coders (coding env, seed %d).\n", len(e.fns), len(e.agents), e.seed)
	for j, f := range e.fns {
		r := results[j]
		owner := "nobody"
		if f.owner >= 0 {
			owner = fmt.Sprintf("coder%d", f.owner)
		}
		hidden := "fail"
		if r.HiddenPass {
			hidden = "pass"
		}
		fmt.Fprintf(&sb, "\n\n# --- %s: %s, by %s; hidden tests: %s (%s)\n", f.info.task.TaskID, f.info.task.EntryPoint, owner, hidden, r.HiddenResult)
		sb.WriteString(f.info.task.Prompt)
		if f.hasCode {
			sb.WriteString(f.completion)
		} else {
			sb.WriteString("    raise NotImplementedError\n")
		}
	}
	return []byte(sb.String())
}

func resultsJSON(results []functionResult) []byte {
	// functionResult holds only strings, ints and bools: no error.
	b, _ := json.MarshalIndent(results, "", "  ")
	return append(b, '\n')
}
