package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeOpenAI is an in-process OpenAI-compatible server: it answers every
// chat completion with a Markdown section or a Python function, depending
// on what the prompt asks for, and reports usage.
func fakeOpenAI(t *testing.T, calls *atomic.Int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		n := calls.Add(1)
		prompt := req.Messages[len(req.Messages)-1].Content
		text := fmt.Sprintf("## Section %d\n\nWe describe the design in plain words. We keep one style.\n\n- one point\n- another point\n", n)
		if strings.Contains(prompt, "def ") {
			text = "```python\ndef f(x):\n    return x\n```"
		}
		resp := map[string]any{
			"id": fmt.Sprintf("c%d", n), "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func openaiWriting(url string) string {
	return fmt.Sprintf(`[project]
name = "writing-openai"
seed = 3
[env]
source = "builtin:writing"
[env.params]
writers = 4
[llm.default]
backend = "openai"
model = "test-model"
base_url = "%s/v1"
api_key_env = "TROUPE_TEST_KEY"
max_concurrency = 8
timeout = "10s"
[[rewards]]
source = "builtin:writing.consistency"
[[rewards]]
source = "builtin:makespan"
[[rewards]]
source = "builtin:tokens"
[reward.weights]
quality = 1.0
speed = 0.5
cost = 0.1
[train]
iterations = 1
tasks_per_iteration = 2
group_size = 2
[rollout]
workers = 2
[eval]
episodes = 2
`, url)
}

// TestRunAgainstOpenAIServer plays an episode of the built-in writing task
// with every agent's text written by an OpenAI-compatible server, as a new
// user would with backend = "openai".
func TestRunAgainstOpenAIServer(t *testing.T) {
	var calls atomic.Int64
	srv := fakeOpenAI(t, &calls)
	t.Setenv("TROUPE_TEST_KEY", "sk-test-secret-key")
	af := writeAgentfile(t, openaiWriting(srv.URL))
	out := t.TempDir()
	code, stdout, stderr := troupe(t, "run", "-f", af, "--baseline", "sop", "--seed", "5", "--out", out)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if calls.Load() == 0 {
		t.Fatal("no call reached the server")
	}
	doc, err := os.ReadFile(filepath.Join(out, "document.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "We describe the design") {
		t.Fatalf("the document does not hold the model's text:\n%s", doc)
	}
	if !strings.Contains(stdout, "consistency") || !strings.Contains(stdout, "openai") {
		t.Fatalf("run output should show the score and the backend:\n%s", stdout)
	}
	if strings.Contains(stdout+stderr, "sk-test-secret-key") {
		t.Fatal("the API key leaked into the output")
	}
}

// TestTrainAndExportWithOpenAI trains one iteration against the server and
// exports the recorded calls in TRL's layout.
func TestTrainAndExportWithOpenAI(t *testing.T) {
	var calls atomic.Int64
	srv := fakeOpenAI(t, &calls)
	t.Setenv("TROUPE_TEST_KEY", "sk-test-secret-key")
	af := writeAgentfile(t, openaiWriting(srv.URL))
	out := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := troupe(t, "train", "-f", af, "--out", out, "--no-eval"); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	conf, _ := os.ReadFile(filepath.Join(out, "config.toml"))
	if strings.Contains(string(conf), "sk-test") {
		t.Fatal("config.toml holds the key")
	}
	exp := filepath.Join(t.TempDir(), "grpo.jsonl")
	if code, _, stderr := troupe(t, "export", "--format", "jsonl", "--out", exp, out); code != exitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	f, err := os.Open(exp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := 0
	groups := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var row struct {
			Prompt     []struct{ Role, Content string } `json:"prompt"`
			Completion []struct{ Role, Content string } `json:"completion"`
			Reward     *float64                         `json:"reward"`
			Advantage  *float64                         `json:"advantage"`
			GroupID    string                           `json:"group_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		if len(row.Prompt) == 0 || len(row.Completion) != 1 || row.Completion[0].Role != "assistant" || row.Reward == nil || row.Advantage == nil || row.GroupID == "" {
			t.Fatalf("bad row: %s", sc.Text())
		}
		groups[row.GroupID] = true
		rows++
	}
	if int64(rows) != calls.Load() || len(groups) != 2 {
		t.Fatalf("exported %d rows in %d groups; the server saw %d calls in 2 tasks", rows, len(groups), calls.Load())
	}
}

// TestRecordThenReplayOffline evaluates against the server while recording,
// then replays the evaluation with the server gone: the JSON is identical.
func TestRecordThenReplayOffline(t *testing.T) {
	var calls atomic.Int64
	srv := fakeOpenAI(t, &calls)
	cache := t.TempDir()
	base := openaiWriting(srv.URL) + "" // [llm.default] is the last table holding cache keys
	base = strings.Replace(base, `timeout = "10s"`, fmt.Sprintf("timeout = \"10s\"\ncache = %q\ncache_mode = \"record\"", cache), 1)
	af := writeAgentfile(t, base)
	code, live, stderr := troupe(t, "eval", "-f", af, "--episodes", "2", "--json", "--set", "eval.policies=[\"sop\",\"parallel_naive\"]")
	if code != exitOK {
		t.Fatalf("eval (record): exit %d: %s", code, stderr)
	}
	recorded := calls.Load()
	srv.Close()
	code, replay, stderr := troupe(t, "eval", "-f", af, "--episodes", "2", "--json", "--set", "eval.policies=[\"sop\",\"parallel_naive\"]", "--set", "llm.default.cache_mode=replay")
	if code != exitOK {
		t.Fatalf("eval (replay): exit %d: %s", code, stderr)
	}
	if calls.Load() != recorded {
		t.Fatal("replay called the server")
	}
	// Latencies are replayed as recorded, so everything matches but the
	// backend label.
	live = strings.Replace(live, `"backend":"record:openai"`, `"backend":"X"`, 1)
	replay = strings.Replace(replay, `"backend":"replay:openai"`, `"backend":"X"`, 1)
	// A replay sends no request: its traffic is zero.
	live, replay = withoutTraffic(t, live), withoutTraffic(t, replay)
	if live != replay {
		t.Fatalf("replayed evaluation differs:\n%s\n%s", live, replay)
	}
	// Replaying needs no endpoint and no key, even for the hosted API,
	// which otherwise requires one.
	t.Setenv("TROUPE_TEST_KEY", "")
	code, hosted, stderr := troupe(t, "eval", "-f", af, "--episodes", "2", "--json", "--set", "eval.policies=[\"sop\",\"parallel_naive\"]",
		"--set", "llm.default.cache_mode=replay", "--set", `llm.default.base_url="https://api.openai.com/v1"`)
	if code != exitOK {
		t.Fatalf("eval (replay, hosted URL, no key): exit %d: %s", code, stderr)
	}
	hosted = withoutTraffic(t, strings.Replace(hosted, `"backend":"replay:openai"`, `"backend":"X"`, 1))
	if hosted != live {
		t.Fatalf("replay with the hosted URL differs:\n%s\n%s", live, hosted)
	}
}
