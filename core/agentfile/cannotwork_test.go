package agentfile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/rollout"
)

// loadAndBuild loads text as an agentfile and builds it, returning the
// first error as an *agentfile.Error.
func loadAndBuild(t *testing.T, text string) *agentfile.Error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentfile.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := agentfile.Load(path)
	if err == nil {
		var built *agentfile.Built
		if built, err = cfg.Build(context.Background()); err == nil {
			built.Close()
			return nil
		}
	}
	var e *agentfile.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v: want an *agentfile.Error", err)
	}
	return e
}

// Settings that parse but cannot work are errors at load that name the
// file, the line and the key, before any episode is played.
func TestSettingsThatCannotWork(t *testing.T) {
	const matrix = `[env]
source = "builtin:matrix"
[[rewards]]
source = "builtin:return"
[[rewards]]
source = "builtin:makespan"
[reward.weights]
return = RETURN
speed = 0.0
[train]
group_size = GROUP
`
	file := func(ret, group string) string {
		return strings.NewReplacer("RETURN", ret, "GROUP", group).Replace(matrix)
	}
	for _, c := range []struct {
		name, text string
		key        string // "" = valid
		line       int
		want       string
	}{
		{"valid", file("1.0", "8"), "", 0, ""},
		{"overflowing weight", file("1e308", "8"), "reward.weights.return", 8, "at most 1e+06"},
		{"large negative weight", file("-2e6", "8"), "reward.weights.return", 8, "at most 1e+06"},
		{"largest weight", file("-1e6", "8"), "", 0, ""},
		{"nan weight", file("nan", "8"), "reward.weights.return", 8, "not a finite number"},
		{"every weight 0", file("0.0", "8"), "reward.weights", 7, "every weight is 0"},
		{"group of one", file("1.0", "1"), "train.group_size", 11, "always flat"},
		{"huge group", file("1.0", "100000"), "train.group_size", 11, "at most 1024"},
		{
			"a rate limit of the writing env's params",
			"[env]\nsource = \"builtin:writing\"\n[env.params]\nrate_limits = [{requests_per_minute = 5, tokens_per_minute = -5}]\n" +
				"[[rewards]]\nsource = \"builtin:makespan\"\n[reward.weights]\nspeed = 1.0\n",
			"env", 1, `params: key "rate_limits" [0]: tokens_per_minute: must be 0 (unlimited) or positive, got -5`,
		},
		{
			"a reward's metric the env does not report",
			strings.NewReplacer("builtin:makespan", "builtin:coding.pass_rate", "speed = 0.0", "quality = 1.0").Replace(file("1.0", "8")),
			"rewards.1", 5, `reward coding.pass_rate needs the episode metric "pass_rate", which env matrix does not report`,
		},
	} {
		e := loadAndBuild(t, c.text)
		if c.key == "" {
			if e != nil {
				t.Errorf("%s: %v, want it valid", c.name, e)
			}
			continue
		}
		if e == nil || e.Key != c.key || e.Line != c.line || filepath.Base(e.File) != "agentfile.toml" || !strings.Contains(e.Msg, c.want) {
			t.Errorf("%s: %v; want agentfile.toml:%d: %s: …%s…", c.name, e, c.line, c.key, c.want)
		}
	}
}

// The built-in rewards of the issue that failed every episode of an env
// lacking their metrics now fail at load, naming the reward's table and
// the missing metric.
func TestRequiredMetricsOfTheWritingEnv(t *testing.T) {
	const text = `[env]
source = "builtin:writing"
[[rewards]]
source = "builtin:writing.consistency"
[[rewards]]
source = "builtin:return"
[reward.weights]
quality = 1.0
return = 1.0
`
	e := loadAndBuild(t, text)
	if e == nil || e.Key != "rewards.1" || e.Line != 5 || !strings.Contains(e.Msg, `"return"`) || !strings.Contains(e.Msg, "env writing") {
		t.Fatalf("%v; want agentfile.toml:5: rewards.1: … metric \"return\" … env writing", e)
	}
}

// rollout.max_steps cuts the episodes of an env that sets its own limit
// too (lbf's is 50): it is the one runtime setting of an episode's length.
func TestMaxStepsCutsEveryEnv(t *testing.T) {
	const text = `[env]
source = "builtin:lbf"
[[rewards]]
source = "builtin:return"
[reward.weights]
return = 1.0
[rollout]
max_steps = 3
`
	path := filepath.Join(t.TempDir(), "agentfile.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := agentfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	built, err := cfg.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer built.Close()
	if n := built.Setup.Env.Spec().MaxSteps; n != 50 {
		t.Fatalf("lbf's own limit is %d, the test wants 50", n)
	}
	res, err := rollout.RunEpisode(context.Background(), built.Setup, nil, "random", 1, nil)
	if err != nil || res.Failed || res.Episode.Steps != 3 || !res.Episode.Truncated || !res.StepLimited {
		t.Fatalf("err %v, failed %v (%s), %d steps, truncated %v, step-limited %v; want a scored episode cut at 3 steps",
			err, res.Failed, res.Reason, res.Episode.Steps, res.Episode.Truncated, res.StepLimited)
	}
}

// A reward without [rewards.sandbox] settings runs with [env.sandbox]'s,
// and a run directory's config.toml shows the limits in force: the
// loader's defaults (the Wasm loader's 256 MiB and 5 s) instead of 0.
func TestRewardSandboxAndFilledDefaults(t *testing.T) {
	const text = `[env]
source = "wasm:env.wasm"
[env.sandbox]
call_timeout = "7s"
[[rewards]]
source = "wasm:inherits.wasm"
[[rewards]]
source = "wasm:own.wasm"
[rewards.sandbox]
memory_limit_mib = 64
[[rewards]]
source = "grpc:plugin"
[reward.weights]
quality = 1.0
`
	cfg, err := agentfile.Parse("agentfile.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Resolved()
	for _, c := range []struct {
		what string
		got  core.Sandbox
		mem  int
		call time.Duration
	}{
		{"env", r.Env.Sandbox, 256, 7 * time.Second},
		{"reward without a sandbox", r.Rewards[0].Sandbox, 256, 7 * time.Second},
		{"reward with its own", r.Rewards[1].Sandbox, 64, 5 * time.Second},
		{"grpc reward without a sandbox", r.Rewards[2].Sandbox, 0, 7 * time.Second},
	} {
		if c.got.MemoryLimitMiB != c.mem || c.got.CallTimeout != c.call {
			t.Errorf("%s: %d MiB, %v; want %d MiB, %v", c.what, c.got.MemoryLimitMiB, c.got.CallTimeout, c.mem, c.call)
		}
	}
	enc, err := agentfile.Parse("agentfile.toml", []byte(strings.Replace(text, "call_timeout = \"7s\"\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := enc.Resolved().Encode()
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "memory_limit_mib = 256") || !strings.Contains(s, `call_timeout = "5s"`) || strings.Contains(s, `call_timeout = "0s"`) {
		t.Errorf("config.toml does not show the filled defaults:\n%s", s)
	}
	// Build hands the inherited sandbox to the reward's loader.
	built := buildWith(t, `[env]
source = "builtin:matrix"
[env.sandbox]
call_timeout = "7s"
[[rewards]]
source = "settest:return"
[reward.weights]
return = 1.0
`)
	built.Close()
	if got := loader.refs["reward:return"].Sandbox.CallTimeout; got != 7*time.Second {
		t.Errorf("the reward's loader got call_timeout %v, want [env.sandbox]'s 7s", got)
	}
}

func buildWith(t *testing.T, text string) *agentfile.Built {
	t.Helper()
	cfg, err := agentfile.Parse("agentfile.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A sha256 pin on a built-in (nothing to pin) or one that is not 64 hex
// digits is an error at its line.
func TestSHA256ThatCannotWork(t *testing.T) {
	const text = `[env]
source = "ENV"
sha256 = "ENVSHA"
[[rewards]]
source = "wasm:r.wasm"
sha256 = "REWARDSHA"
[reward.weights]
quality = 1.0
`
	good := strings.Repeat("ab", 32)
	for _, c := range []struct {
		env, envSHA, rewardSHA string
		key                    string
		line                   int
		want                   string
	}{
		{"wasm:e.wasm", good, good, "", 0, ""},
		{"builtin:matrix", good, "", "env.sha256", 3, "builtin:matrix has no file to pin"},
		{"wasm:e.wasm", "", "abc", "rewards.0.sha256", 6, `"abc" is not 64 hex digits`},
		{"wasm:e.wasm", "", strings.Repeat("g", 64), "rewards.0.sha256", 6, "not 64 hex digits"},
	} {
		_, err := agentfile.Parse("agentfile.toml", []byte(strings.NewReplacer("ENVSHA", c.envSHA, "REWARDSHA", c.rewardSHA, "ENV", c.env).Replace(text)))
		if c.key == "" {
			if err != nil {
				t.Errorf("%s %q %q: %v", c.env, c.envSHA, c.rewardSHA, err)
			}
			continue
		}
		var e *agentfile.Error
		if !errors.As(err, &e) || e.Key != c.key || e.Line != c.line || !strings.Contains(e.Msg, c.want) {
			t.Errorf("%s %q %q: %v; want agentfile.toml:%d: %s: …%s…", c.env, c.envSHA, c.rewardSHA, err, c.line, c.key, c.want)
		}
	}
}

// Isolation is [env.sandbox]'s alone: in [rewards.sandbox] it is an error,
// and a reward that takes [env.sandbox]'s limits does not take it, so a
// run directory's config.toml loads again.
func TestRewardSandboxIsolation(t *testing.T) {
	const text = `[env]
source = "builtin:matrix"
[env.sandbox]
isolation = "none"
call_timeout = "2s"
[[rewards]]
source = "builtin:return"
[reward.weights]
return = 1.0
`
	cfg, err := agentfile.Parse("agentfile.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Resolved()
	if sb := r.Rewards[0].Sandbox; sb.Isolation != "" || sb.CallTimeout != 2*time.Second {
		t.Fatalf("the reward's sandbox %+v; want [env.sandbox]'s call_timeout and no isolation", sb)
	}
	enc, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agentfile.Parse("config.toml", enc); err != nil {
		t.Fatalf("the resolved configuration does not load: %v", err)
	}
	_, err = agentfile.Parse("agentfile.toml", []byte(text+"[rewards.sandbox]\nisolation = \"full\"\n"))
	var e *agentfile.Error
	if !errors.As(err, &e) || e.Key != "rewards.0.sandbox.isolation" || e.Line != 11 {
		t.Fatalf("%v; want agentfile.toml:11: rewards.0.sandbox.isolation", err)
	}
}

// An error about a table whose value an override set inside it names the
// override too: the env reports its params' errors about [env].
func TestOverrideInsideTableNamed(t *testing.T) {
	text := "[env]\nsource = \"builtin:matrix\"\n[env.params]\ngame = \"climbing\"\n[[rewards]]\nsource = \"builtin:return\"\n[reward.weights]\nreturn = 1.0\n"
	for _, c := range []struct {
		overrides []string
		want      string // "" = no mention of --set
	}{
		{[]string{"env.params.game=nope"}, " (with --set env.params.game=nope)"},
		{[]string{"env.params.game=nope", "train.iterations=3", "env.params.x=1"}, " (with --set env.params.game=nope, --set env.params.x=1)"},
		{nil, ""},
	} {
		if c.overrides == nil {
			text = strings.Replace(text, `"climbing"`, `"nope"`, 1)
		}
		path := filepath.Join(t.TempDir(), "agentfile.toml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := agentfile.Load(path, c.overrides...)
		if err == nil {
			var built *agentfile.Built
			if built, err = cfg.Build(context.Background()); err == nil {
				built.Close()
			}
		}
		var e *agentfile.Error
		if !errors.As(err, &e) || e.Key != "env" || e.Line != 1 {
			t.Fatalf("%v: want an error about env at line 1, got %v", c.overrides, err)
		}
		if got := strings.Contains(e.Msg, "--set"); got != (c.want != "") || !strings.HasSuffix(e.Msg, c.want) {
			t.Errorf("%v: %q, want it to end %q", c.overrides, e.Msg, c.want)
		}
	}
}
