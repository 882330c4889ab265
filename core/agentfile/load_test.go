package agentfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
)

const good = `[project]
name = "t"
seed = 7

[env]
source = "builtin:lbf"
[env.params]
size = 8

[[rewards]]
source = "builtin:return"

[reward.weights]
return = 1.0

[train]
iterations = 3
group_size = 4
`

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agentfile.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(write(t, good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Project.Seed != 7 || c.Train.Iterations != 3 || c.Train.GroupSize != 4 {
		t.Fatalf("file values lost: %+v", c.Train)
	}
	if c.Train.TasksPerIteration != 16 || c.Train.Baseline != "mean" || c.Eval.Episodes != 100 {
		t.Fatalf("defaults not filled: %+v", c.Train)
	}
	if c.LLM["default"].Backend != "sim" || c.LLM["default"].Sim.DecodeTPS != 40 {
		t.Fatalf("llm default missing: %+v", c.LLM)
	}
	if c.Env.Params["size"] != int64(8) {
		t.Fatalf("params: %#v", c.Env.Params)
	}
}

func TestLLMTableDefaults(t *testing.T) {
	c, err := Load(write(t, good+"\n[llm.default]\nbackend = \"openai\"\nbase_url = \"http://u:secret@localhost:1/v1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := c.LLM["default"]
	if l.Backend != "openai" || l.MaxConcurrency != 16 || l.Timeout.Seconds() != 60 {
		t.Fatalf("llm defaults: %+v", l)
	}
	out, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "u:secret") {
		t.Fatalf("encoded config leaks a secret:\n%s", out)
	}
}

func wantErr(t *testing.T, err error, key string, line int) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error for %s, got %v", key, err)
	}
	if e.Key != key || e.Line != line {
		t.Fatalf("want key %q line %d, got key %q line %d (%v)", key, line, e.Key, e.Line, err)
	}
}

func TestUnknownKey(t *testing.T) {
	_, err := Load(write(t, strings.Replace(good, "group_size = 4", "group_size = 4\ngroup_sise = 5", 1)))
	wantErr(t, err, "train.group_sise", 19)
	if !strings.Contains(err.Error(), "unknown key") || !strings.Contains(err.Error(), "group_size") {
		t.Fatalf("message should say unknown and suggest: %v", err)
	}
}

func TestNegativeGroupSize(t *testing.T) {
	_, err := Load(write(t, strings.Replace(good, "group_size = 4", "group_size = -3", 1)))
	wantErr(t, err, "train.group_size", 18)
	if !strings.Contains(err.Error(), "-3") {
		t.Fatalf("message should show the value: %v", err)
	}
}

func TestWrongType(t *testing.T) {
	_, err := Load(write(t, strings.Replace(good, "iterations = 3", `iterations = "three"`, 1)))
	var e *Error
	if !errors.As(err, &e) || e.Line != 17 {
		t.Fatalf("want line 17, got %v", err)
	}
	if !strings.Contains(err.Error(), "iterations") {
		t.Fatalf("message should name the key: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	_, err := Load(write(t, "[train\niterations = 3\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line < 1 || e.Line > 2 {
		t.Fatalf("want a line-1/2 syntax error, got %v", err)
	}
}

func TestOverrides(t *testing.T) {
	p := write(t, good)
	c, err := Load(p, "reward.weights.return=0.5", "train.iterations=9", "env.params.size=5", "project.name=hello world")
	if err != nil {
		t.Fatal(err)
	}
	if c.Reward.Weights["return"] != 0.5 || c.Train.Iterations != 9 || c.Env.Params["size"] != int64(5) || c.Project.Name != "hello world" {
		t.Fatalf("overrides not applied: %+v %+v", c.Reward, c.Train)
	}
	_, err = Load(p, "train.group_size=-1")
	var e *Error
	if !errors.As(err, &e) || e.Key != "train.group_size" {
		t.Fatalf("override validation: %v", err)
	}
	if _, err = Load(p, "train.iterations=abc"); err == nil || !strings.Contains(err.Error(), "iterations") {
		t.Fatalf("override type error should name the key: %v", err)
	}
	if _, err = Load(p, "train.no_such=1"); err == nil || !strings.Contains(err.Error(), "no_such") {
		t.Fatalf("unknown override key: %v", err)
	}
	if _, err = Load(p, "rewards.0.params.x=1"); err != nil {
		t.Fatalf("array index override: %v", err)
	}
}

func TestRewardArrayLine(t *testing.T) {
	text := good + "\n[[rewards]]\nsource = \"nocolon\"\n"
	_, err := Load(write(t, text))
	wantErr(t, err, "rewards.1.source", 21)
}

func TestAgentLLM(t *testing.T) {
	c, err := Load(write(t, good+"\n[[agents]]\nrole = \"a\"\ncount = 2\n[[agents]]\nrole = \"b\"\ncount = 1\nllm = \"big\"\n[llm.big]\nbackend = \"sim\"\n[llm.default]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.TotalAgents() != 3 || c.AgentLLM(1) != "default" || c.AgentLLM(2) != "big" {
		t.Fatalf("agent mapping: %d %s %s", c.TotalAgents(), c.AgentLLM(1), c.AgentLLM(2))
	}
	_, err = Load(write(t, good+"\n[[agents]]\ncount = 2\nllm = \"nope\"\n"))
	wantErr(t, err, "agents.0.llm", 22)
}

func TestPathParamsResolved(t *testing.T) {
	c := Config{Dir: "/proj"}
	got := c.resolvePathParams(map[string]any{"corpus_dir": "rfcs", "dataset": "d.jsonl", "abs_dir": "/x", "name": "rfcs", "empty_dir": ""})
	want := map[string]any{"corpus_dir": "/proj/rfcs", "dataset": "/proj/d.jsonl", "abs_dir": "/x", "name": "rfcs", "empty_dir": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
}

func TestOverrideErrorNamesSet(t *testing.T) {
	// group_size is in the file (line 18), but the bad value is the
	// override's.
	_, err := Load(write(t, good), "train.group_size=-1")
	var e *Error
	if !errors.As(err, &e) || e.File != "--set" || e.Line != 0 || e.Key != "train.group_size" {
		t.Fatalf("want --set: train.group_size, got %v", err)
	}
}

func TestResolvedPaths(t *testing.T) {
	c := Config{Dir: "/proj",
		Env:     Env{Source: "wasm:env.wasm", Params: map[string]any{"corpus_dir": "rfcs"}, Sandbox: core.Sandbox{ReadOnlyDirs: []string{"data", "/abs"}}},
		Rewards: []Reward{{Source: "builtin:tokens", Params: map[string]any{"dataset": "d.jsonl"}}},
		LLM:     map[string]llm.Config{"default": {Cache: "cache"}},
	}
	r := c.Resolved()
	if r.Env.Source != "wasm:/proj/env.wasm" || r.Env.Params["corpus_dir"] != "/proj/rfcs" ||
		strings.Join(r.Env.Sandbox.ReadOnlyDirs, ",") != "/proj/data,/abs" ||
		r.Rewards[0].Params["dataset"] != "/proj/d.jsonl" || r.LLM["default"].Cache != "/proj/cache" {
		t.Fatalf("Resolved left relative paths: %+v", r)
	}
	if c.Env.Params["corpus_dir"] != "rfcs" || c.LLM["default"].Cache != "cache" {
		t.Fatalf("Resolved changed its receiver: %+v", c)
	}
}

func TestFindNearest(t *testing.T) {
	idx := newLineIndex([]byte("[env.params]\nsize = 8\n[[agents]]\ncount = 2\n[train]\n"))
	for key, want := range map[string]int{"env": 1, "env.params.size": 2, "agents": 3, "agents.0.llm": 3, "train.group_size": 5, "eval.seed": 0} {
		if got := idx.findNearest(key); got != want {
			t.Errorf("%s: line %d, want %d", key, got, want)
		}
	}
}

// A duration written as a bare number decodes as nanoseconds; the rules
// of llm.timeout and env.sandbox.call_timeout catch it at its line.
func TestBareNumberDurations(t *testing.T) {
	_, err := Load(write(t, good+"[llm.default]\ntimeout = 60\n"))
	wantErr(t, err, "llm.default.timeout", 20)
	if !strings.Contains(err.Error(), "write a unit") {
		t.Fatalf("the message should say how to write a duration: %v", err)
	}
	_, err = Load(write(t, strings.Replace(good, "size = 8\n", "size = 8\n[env.sandbox]\ncall_timeout = 5\n", 1)))
	wantErr(t, err, "env.sandbox.call_timeout", 10)
	if _, err := Load(write(t, good+"[llm.default]\ntimeout = \"60s\"\n")); err != nil {
		t.Fatal(err)
	}
}
