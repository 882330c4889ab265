package agentfile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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

// A duration written as a bare number (integer or float) would decode as
// nanoseconds: it is an error at its line (or in --set) for every duration
// setting, found in the settings' types, inline arrays of tables included;
// so is a string that is no duration.
func TestBareNumberDurations(t *testing.T) {
	for _, c := range []struct {
		text, key string
		line      int
		msg       string
	}{
		{good + "[llm.default]\ntimeout = 60\n", "llm.default.timeout", 20, `a duration needs a unit, e.g. "60ms" or "60s" (a bare number would be nanoseconds)`},
		{good + "[llm.default.sim]\nbase_latency = 800\n", "llm.default.sim.base_latency", 20, `a duration needs a unit, e.g. "800ms" or "800s" (a bare number would be nanoseconds)`},
		{good + "[llm.default.sim]\nbase_latency = 0.8\n", "llm.default.sim.base_latency", 20, `a duration needs a unit, e.g. "0.8ms" or "0.8s" (a bare number would be nanoseconds)`},
		{strings.Replace(good, "size = 8\n", "size = 8\n[env.sandbox]\ncall_timeout = 5\n", 1), "env.sandbox.call_timeout", 10, `e.g. "5ms" or "5s"`},
		{good + "[[rewards]]\nsource = \"builtin:tokens\"\nsandbox = { call_timeout = 5 }\n", "rewards.1.sandbox.call_timeout", 21, "a duration needs a unit"},
		{"rewards = [{source = \"builtin:return\", sandbox = {call_timeout = 5000000}}]\n" + strings.Replace(good, "[[rewards]]\nsource = \"builtin:return\"\n", "", 1), "rewards.0.sandbox.call_timeout", 1, `e.g. "5000000ms" or "5000000s"`},
		{good + "[llm.default]\ntimeout = \"60\"\n", "llm.default.timeout", 20, `invalid duration "60" (want e.g. "60s", "500ms")`},
	} {
		_, err := Load(write(t, c.text))
		wantErr(t, err, c.key, c.line)
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want %q", c.key, err, c.msg)
		}
	}
	if _, err := Load(write(t, good+"[llm.default]\ntimeout = \"60s\"\n[llm.default.sim]\nbase_latency = \"0s\"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(write(t, "rewards = [{source = \"builtin:return\", sandbox = {call_timeout = \"5s\"}}]\n"+strings.Replace(good, "[[rewards]]\nsource = \"builtin:return\"\n", "", 1))); err != nil {
		t.Fatal(err)
	}
	_, err := Load(write(t, good), "llm.default.timeout=60")
	if err == nil || err.Error() != `--set: llm.default.timeout: a duration needs a unit, e.g. "60ms" or "60s" (a bare number would be nanoseconds)` {
		t.Errorf("--set llm.default.timeout=60: %v", err)
	}
	if _, err := Load(write(t, good), "env.sandbox.call_timeout=5s"); err != nil {
		t.Errorf("--set env.sandbox.call_timeout=5s: %v", err)
	}
	// The rules of the components still hold: at least 1ms.
	_, err = Load(write(t, good+"[llm.default]\ntimeout = \"5ns\"\n"))
	wantErr(t, err, "llm.default.timeout", 20)
}

// TestDurationKeys checks that the duration check sees every
// time.Duration setting of Config, embedded and nested ones included.
func TestDurationKeys(t *testing.T) {
	var keys []string
	var walk func(typ reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		for name, ft := range tomlFields(typ) {
			for ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice {
				ft, name = ft.Elem(), name+".0"
			}
			switch {
			case ft == durationType:
				keys = append(keys, prefix+name)
			case ft.Kind() == reflect.Struct:
				walk(ft, prefix+name+".")
			}
		}
	}
	walk(configType, "")
	slices.Sort(keys)
	want := []string{"cluster.ack_wait", "cluster.progress_every", "cluster.rate_limit_pause", "cluster.result_ttl", "cluster.warn_after",
		"env.sandbox.call_timeout", "llm.0.sim.base_latency", "llm.0.timeout", "rewards.0.sandbox.call_timeout"}
	if !slices.Equal(keys, want) {
		t.Errorf("duration keys %v, want %v", keys, want)
	}
}

// A key that moved names its new place, in a file or in --set; only a run
// directory's config.toml (the text Encode writes, read by Load, Parse or
// LoadWithWarnings) is read as if it used the new key.
func TestMovedKeys(t *testing.T) {
	old := strings.Replace(good, "group_size = 4\n", "group_size = 4\nworkers = 3\nmax_steps = 50\n", 1)
	_, err := Load(write(t, old))
	wantErr(t, err, "train.workers", 19)
	if !strings.HasSuffix(err.Error(), "train.workers: moved to [rollout] workers") {
		t.Errorf("old key in the file: %v", err)
	}
	_, err = LoadWithWarnings(write(t, old), nil)
	wantErr(t, err, "train.workers", 19)
	_, err = Load(write(t, good), "train.workers=2")
	if err == nil || err.Error() != "--set: train.workers: moved to [rollout] workers" {
		t.Errorf("old key in --set: %v", err)
	}

	// A run directory's config.toml: the old keys one line further down.
	run := func(text string) string {
		return resolvedHeader + " (defaults filled, overrides applied, secrets removed).\n" + text
	}
	path := write(t, run(old))
	var warnings []string
	warn := func(msg string) { warnings = append(warnings, msg) }
	c, err := LoadWithWarnings(path, warn)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rollout.Workers != 3 || c.Rollout.MaxSteps != 50 {
		t.Errorf("old keys not read as [rollout]: %+v", c.Rollout)
	}
	if len(warnings) != 1 || warnings[0] != path+": read train.max_steps as rollout.max_steps, train.workers as rollout.workers (the run directory was written before they moved)" {
		t.Errorf("warnings %q", warnings)
	}
	if c, err := Load(path); err != nil || c.Rollout.Workers != 3 {
		t.Errorf("Load of a run directory's config.toml: %v, %+v", err, c.Rollout)
	}
	if c, err := Parse("config.toml", []byte(run(old))); err != nil || c.Rollout.Workers != 3 {
		t.Errorf("Parse of a run directory's config.toml: %v, %+v", err, c.Rollout)
	}
	// The moved value's errors point at its line; overrides are not
	// history.
	_, err = Load(write(t, run(strings.Replace(old, "workers = 3", "workers = -3", 1))))
	wantErr(t, err, "rollout.workers", 20)
	if _, err = Load(path, "train.workers=2"); err == nil || err.Error() != "--set: train.workers: moved to [rollout] workers" {
		t.Errorf("old key in --set of a run directory: %v", err)
	}
	_, err = Load(write(t, run(old+"[rollout]\nworkers = 2\n")))
	wantErr(t, err, "train.workers", 20)
	// A current run directory needs no warning.
	warnings = nil
	if _, err := LoadWithWarnings(write(t, run(good)), warn); err != nil || len(warnings) != 0 {
		t.Errorf("current config.toml: %v, warnings %q", err, warnings)
	}
}

// The hint of an unknown key lists the keys of its table, read from the
// settings' types: every table has one, [rollout] and [llm.NAME] included.
func TestUnknownKeyHints(t *testing.T) {
	for _, c := range []struct{ text, key, want string }{
		{good + "[rollout]\nworker = 2\n", "rollout.worker", "(known here: max_steps, workers)"},
		{good + "[rollouts]\nworkers = 2\n", "rollouts", "(known here: agents, budget, cluster, env, eval, llm, project, reward, rewards, rollout, telemetry, train)"},
		{good + "[llm.default]\nmodle = \"x\"\n", "llm.default.modle", "api_key_env, backend, base_url, cache, cache_mode, max_concurrency, max_retries, max_tokens, model, requests_per_minute, sim, temperature, timeout, tokens_per_minute)"},
		{strings.Replace(good, "group_size = 4", "group_size = 4\nlearning_rat = 1", 1), "train.learning_rat", "learning_rate"},
		{strings.Replace(good, "size = 8\n", "size = 8\n[env.sandbox]\nmemory = 5\n", 1), "env.sandbox.memory", "(known here: call_timeout, isolation, memory_limit_mib, read_only_dirs)"},
		{good + "[[rewards]]\nsource = \"builtin:tokens\"\nsha = \"\"\n", "rewards.sha", "(known here: params, sandbox, sha256, source)"},
	} {
		_, err := Load(write(t, c.text))
		var e *Error
		if !errors.As(err, &e) || e.Key != c.key || !strings.Contains(e.Msg, "unknown key") || !strings.Contains(e.Msg, c.want) {
			t.Errorf("%s: %v; want %q", c.key, err, c.want)
		}
	}
}
