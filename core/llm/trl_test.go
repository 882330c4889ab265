package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

func TestWriteTRL(t *testing.T) {
	samples := []Sample{
		{GroupID: "it1-s17", Prompt: []core.Message{{Role: "system", Content: "house style"}, {Role: "user", Content: "Write <Summary> & more"}},
			Completion: "# Summary\n\nText.", Reward: 0.75, Advantage: 0.5, Agent: 2, Decision: "draft_section", Env: "writing", Seed: 17, Step: 4},
		{GroupID: "it1-s17", Prompt: []core.Message{{Role: "user", Content: "q"}}, Completion: "", Reward: -1, Advantage: -0.5},
	}
	var buf bytes.Buffer
	if err := WriteTRL(&buf, samples); err != nil {
		t.Fatal(err)
	}
	want0 := `{"prompt":[{"role":"system","content":"house style"},{"role":"user","content":"Write <Summary> & more"}],` +
		`"completion":[{"role":"assistant","content":"# Summary\n\nText."}],"reward":0.75,"advantage":0.5,"group_id":"it1-s17",` +
		`"agent":2,"decision":"draft_section","data_source":"writing","extra_info":{"group_id":"it1-s17","agent":2,` +
		`"decision":"draft_section","seed":17,"step":4,"reward":0.75,"advantage":0.5}}`
	sc := bufio.NewScanner(&buf)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	if lines[0] != want0 {
		t.Errorf("line 0:\n got %s\nwant %s", lines[0], want0)
	}
	// Every line is a JSON object with TRL's conversational columns.
	for i, l := range lines {
		var row struct {
			Prompt     []map[string]string `json:"prompt"`
			Completion []map[string]string `json:"completion"`
			Reward     *float64            `json:"reward"`
			Advantage  *float64            `json:"advantage"`
			GroupID    *string             `json:"group_id"`
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if len(row.Prompt) != len(samples[i].Prompt) || len(row.Completion) != 1 || row.Completion[0]["role"] != "assistant" ||
			row.Completion[0]["content"] != samples[i].Completion || row.Reward == nil || *row.Advantage != samples[i].Advantage || *row.GroupID != samples[i].GroupID {
			t.Errorf("line %d decoded to %+v", i, row)
		}
	}
}

func TestWriteTRLRejectsBadSamples(t *testing.T) {
	ok := Sample{GroupID: "g", Prompt: []core.Message{{Role: "user", Content: "q"}}}
	cases := map[string]Sample{
		"sample 1 (group \"g\", agent 0): empty prompt": {GroupID: "g"},
		"not finite":                {GroupID: "g", Prompt: ok.Prompt, Reward: math.NaN()},
		`message 0: role "tool"`:    {Prompt: []core.Message{{Role: "tool", Content: "x"}}},
		"advantage +Inf not finite": {Prompt: ok.Prompt, Advantage: math.Inf(1)},
	}
	for want, bad := range cases {
		var buf bytes.Buffer
		err := WriteTRL(&buf, []Sample{ok, bad})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want error containing %q, got %v", want, err)
		}
		if buf.Len() != 0 {
			t.Errorf("wrote %d bytes despite an invalid sample", buf.Len())
		}
	}
}
