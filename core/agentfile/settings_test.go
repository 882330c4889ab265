package agentfile_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/llm"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
	_ "github.com/troupe-dev/troupe/plugins/all"
)

// documentedKeys returns every leaf key of the agentfile block of
// README.md, dotted (arrays of tables indexed: "rewards.1.source"), with
// its documented value.
func documentedKeys(t *testing.T) map[string]any {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## agentfile.toml\n\n```toml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no ```toml block under \"## agentfile.toml\"")
	}
	var tree map[string]any
	if _, err := toml.Decode(string(m[1]), &tree); err != nil {
		t.Fatalf("README's agentfile block: %v", err)
	}
	keys := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(prefix+k+".", e)
			}
		case []map[string]any:
			for i, e := range v {
				walk(fmt.Sprintf("%s%d.", prefix, i), e)
			}
		default:
			keys[strings.TrimSuffix(prefix, ".")] = v
		}
	}
	walk("", tree)
	return keys
}

// otherValue returns a valid value different from the documented one, as
// a TOML value for --set and as what the component must then hold.
func otherValue(key string, doc any) (set string, want any) {
	switch key {
	case "env.source":
		return `"settest:writing"`, "settest:writing"
	case "agents.0.llm":
		return `"other"`, "model-of-other"
	case "rollout.max_steps":
		return "3", int64(3) // the writing env's episodes are longer: a limit that bites
	case "train.baseline":
		return `"rloo"`, "rloo"
	case "train.scale":
		return `"batch"`, "batch"
	case "train.credit":
		return `"independent"`, "independent"
	case "train.imitate":
		return `"sop"`, "sop" // a baseline the test's writing env offers
	case "train.branch_aggregate":
		return `"max"`, "max"
	case "train.gamma", "train.gae_lambda":
		return "0.5", 0.5 // in [0, 1]
	case "env.sandbox.isolation":
		return `"none"`, "none"
	case "llm.default.backend":
		return `"openai"`, "openai"
	case "llm.default.cache_mode":
		return `"record"`, "record"
	case "llm.default.api_key_env":
		return `"TROUPE_SETTINGS_TEST_KEY"`, "TROUPE_SETTINGS_TEST_KEY"
	case "llm.default.base_url":
		return `"http://127.0.0.1:9/v1"`, "http://127.0.0.1:9/v1"
	case "llm.default.cache":
		dir := filepath.Join(os.TempDir(), "troupe-settings-test-cache")
		return strconv.Quote(dir), dir
	case "telemetry.exporter":
		return `"otlp"`, "otlp"
	case "telemetry.protocol":
		return `"grpc"`, "grpc"
	case "telemetry.endpoint":
		return `"http://127.0.0.1:9"`, "http://127.0.0.1:9"
	case "cluster.nats":
		return `"nats://127.0.0.1:9"`, "nats://127.0.0.1:9"
	case "telemetry.prometheus":
		return `"127.0.0.1:0"`, "127.0.0.1:0"
	}
	if strings.HasSuffix(key, ".sha256") {
		sha := strings.Repeat("5a", 32)
		return strconv.Quote(sha), sha
	}
	if strings.HasPrefix(key, "rewards.") && strings.HasSuffix(key, ".source") {
		name := "settest:" + strings.TrimPrefix(doc.(string), "builtin:")
		return strconv.Quote(name), name
	}
	switch v := doc.(type) {
	case bool:
		return strconv.FormatBool(!v), !v
	case int64:
		return strconv.FormatInt(v+1, 10), v + 1
	case float64:
		return strconv.FormatFloat(v+0.05, 'g', -1, 64), v + 0.05
	case string:
		if d, err := time.ParseDuration(v); err == nil {
			d += 100 * time.Millisecond
			return strconv.Quote(d.String()), d
		}
		return strconv.Quote(v + "-other"), v + "-other"
	case []any:
		if len(v) == 0 {
			if strings.HasSuffix(key, "dirs") {
				return `["/tmp"]`, []string{"/tmp"}
			}
			return `["random"]`, []string{"random"}
		}
		var parts []string
		var want []int64
		for _, e := range v {
			parts = append(parts, strconv.FormatInt(e.(int64)+1, 10))
			want = append(want, e.(int64)+1)
		}
		return "[" + strings.Join(parts, ", ") + "]", want
	}
	return "", nil
}

// lookup follows a dotted key through structs (by toml tag, embedded
// structs flattened), maps and slices.
func lookup(v reflect.Value, key string) (reflect.Value, bool) {
	if key == "" {
		return v, true
	}
	part, rest, _ := strings.Cut(key, ".")
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if f.Anonymous && tag == "" {
				if got, ok := lookup(v.Field(i), key); ok {
					return got, true
				}
				continue
			}
			if tag == part {
				return lookup(v.Field(i), rest)
			}
		}
	case reflect.Map:
		e := v.MapIndex(reflect.ValueOf(part))
		if e.IsValid() {
			return lookup(e, rest)
		}
	case reflect.Slice:
		if i, err := strconv.Atoi(part); err == nil && i < v.Len() {
			return lookup(v.Index(i), rest)
		}
	}
	return reflect.Value{}, false
}

// holds reports whether v holds want.
func holds(v reflect.Value, want any) bool {
	for v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	switch w := want.(type) {
	case time.Duration:
		return v.Kind() == reflect.Int64 && time.Duration(v.Int()) == w
	case float64:
		return v.CanFloat() && v.Float() == w
	case int64:
		return (v.CanInt() && v.Int() == w) || (v.CanUint() && w >= 0 && v.Uint() == uint64(w))
	case bool:
		return v.Kind() == reflect.Bool && v.Bool() == w
	case string:
		return v.Kind() == reflect.String && v.String() == w
	}
	return fmt.Sprint(v.Interface()) == fmt.Sprint(want)
}

// recordingLoader loads "settest:NAME" as builtin:NAME and keeps the refs
// it was given, so a test can see what reached a loader.
type recordingLoader struct {
	mu   sync.Mutex
	refs map[string]core.SourceRef
}

func (l *recordingLoader) keep(kind string, ref core.SourceRef) core.SourceRef {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A non-builtin path is resolved against the agentfile's directory.
	ref.Path = filepath.Base(ref.Path)
	l.refs[kind+":"+ref.Path] = ref
	ref.Scheme = "builtin"
	return ref
}

func (l *recordingLoader) LoadEnv(ctx context.Context, ref core.SourceRef) (core.EnvSource, error) {
	return core.LoadEnv(ctx, l.keep("env", ref))
}

func (l *recordingLoader) LoadReward(ctx context.Context, ref core.SourceRef) (core.RewardFunc, error) {
	return core.LoadReward(ctx, l.keep("reward", ref))
}

var loader = &recordingLoader{refs: map[string]core.SourceRef{}}

func init() { core.RegisterLoader("settest", loader) }

// exempt are documented keys that configure no component.
var exempt = map[string]string{
	"agents.0.role":  "a label for people",
	"agents.0.count": "the team size is the env's; the count only checks it",
}

// TestEveryDocumentedKeyReachesItsComponent feeds every key of README's
// agentfile block through --set with a value other than the documented
// one and checks that the value is in the loaded Config and in what Build
// hands to the component that uses it.
func TestEveryDocumentedKeyReachesItsComponent(t *testing.T) {
	keys := documentedKeys(t)
	if len(keys) < 50 {
		t.Fatalf("found %d documented keys; is README's agentfile block complete?", len(keys))
	}
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("TROUPE_SETTINGS_TEST_KEY", "sk-test")
	dir := t.TempDir()
	path := filepath.Join(dir, "agentfile.toml")
	readme, _ := os.ReadFile(filepath.Join("..", "..", "README.md"))
	block := regexp.MustCompile("(?s)## agentfile.toml\n\n```toml\n(.*?)```").FindSubmatch(readme)[1]
	if err := os.WriteFile(path, block, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		if why, ok := exempt[key]; ok {
			t.Logf("%s: not checked (%s)", key, why)
			continue
		}
		set, want := otherValue(key, keys[key])
		if set == "" {
			t.Errorf("%s: no other value for %v (%T); extend otherValue", key, keys[key], keys[key])
			continue
		}
		overrides := []string{key + "=" + set}
		if k, ok := strings.CutPrefix(key, "llm.default."); ok && slices.Contains(openaiOnly, k) {
			overrides = append(overrides, `llm.default.backend="openai"`)
		}
		if strings.HasPrefix(key, "telemetry.") && key != "telemetry.exporter" && key != "telemetry.prometheus" {
			overrides = append(overrides, `telemetry.exporter="otlp"`)
		}
		if strings.HasPrefix(key, "env.") && key != "env.source" {
			overrides = append(overrides, `env.source="settest:writing"`)
		}
		if rest, ok := strings.CutPrefix(key, "rewards."); ok && !strings.HasSuffix(key, ".source") {
			// The reward's other keys reach its loader: the recording one.
			i, _, _ := strings.Cut(rest, ".")
			src := keys["rewards."+i+".source"].(string)
			overrides = append(overrides, fmt.Sprintf(`rewards.%s.source="settest:%s"`, i, strings.TrimPrefix(src, "builtin:")))
		}
		if key == "agents.0.llm" {
			overrides = append(overrides, `llm.other.model="model-of-other"`)
		}
		if key == "train.branch_aggregate" {
			overrides = append(overrides, "train.branch_partners=1") // max needs it
		}
		if strings.HasPrefix(key, "eval.") {
			// Evaluate plays them: random play on few episodes suffices.
			if key != "eval.policies" {
				overrides = append(overrides, `eval.policies=["random"]`)
			}
			if key != "eval.episodes" {
				overrides = append(overrides, `eval.episodes=2`)
			}
		}
		cfg, err := agentfile.Load(path, overrides...)
		if err != nil {
			t.Errorf("%s=%s: %v", key, set, err)
			continue
		}
		if key == "agents.0.llm" {
			// The config holds the table's name; the agent gets its model.
			if cfg.Agents[0].LLM != "other" {
				t.Errorf("%s=%s: the loaded config holds %q", key, set, cfg.Agents[0].LLM)
			}
		} else if got, ok := lookup(reflect.ValueOf(cfg), key); !ok || !holds(got, want) {
			t.Errorf("%s=%s: the loaded config holds %v, want %v", key, set, got, want)
			continue
		}
		built, err := cfg.Build(context.Background())
		if err != nil {
			t.Errorf("%s=%s: build: %v", key, set, err)
			continue
		}
		got, ok := reached(built, key)
		built.Close()
		if !ok || !holds(got, want) {
			t.Errorf("%s=%s: the component holds %v (found %v), want %v", key, set, got, ok, want)
		}
	}
}

// reached returns the value of key in the component that uses it: the
// trainer's settings in force, the evaluation's report, the rollout pool,
// the setup the workers read, the refs the loaders were given, the agents'
// LLMs.
func reached(b *agentfile.Built, key string) (reflect.Value, bool) {
	table, rest, _ := strings.Cut(key, ".")
	switch table {
	case "train":
		// The trainer's settings in force, read back from its optimizer
		// and policy.
		tr, err := trainer.New(b.Setup, b.Train)
		if err != nil {
			if rest == "credit" && strings.Contains(err.Error(), `credit = "independent"`) {
				// The trainer read it, and refused it for this env.
				return reflect.ValueOf("independent"), true
			}
			return reflect.ValueOf(err.Error()), false
		}
		defer tr.Close()
		return lookup(reflect.ValueOf(tr.Config()), rest)
	case "eval":
		rep, err := rollout.Evaluate(context.Background(), b.Setup, nil, b.Eval)
		if err != nil {
			return reflect.ValueOf(err.Error()), false
		}
		switch rest {
		case "episodes":
			return reflect.ValueOf(rep.Episodes), true
		case "seed":
			return reflect.ValueOf(rep.Seed), true
		case "sampled":
			return reflect.ValueOf(rep.Sampled), true
		case "policies":
			return reflect.ValueOf(slices.Sorted(maps.Keys(rep.Policies))), true
		}
	case "rollout":
		if rest == "workers" {
			p, err := rollout.NewPool(&b.Setup)
			if err != nil {
				return reflect.ValueOf(err.Error()), false
			}
			defer p.Close()
			return reflect.ValueOf(p.Workers()), true
		}
		// max_steps: an episode of an env whose spec sets no limit stops
		// there (the writing env sets its own).
		s := b.Setup
		src, err := core.NewEnvSource(func(map[string]any) (core.Env, error) { return endless{}, nil }, nil)
		if err != nil {
			return reflect.ValueOf(err.Error()), false
		}
		defer src.Close()
		// endless reports no metrics: a reward that needs none scores it.
		s.Env, s.Agents = src, nil
		s.Rewards, s.Weights = []core.RewardFunc{stepsReward{}}, map[string]float64{"steps": 1}
		res, _ := rollout.RunEpisode(context.Background(), s, nil, "random", 1, nil)
		if !res.Episode.Truncated {
			return reflect.ValueOf(fmt.Sprintf("an episode of %d steps, not truncated", res.Episode.Steps)), false
		}
		return reflect.ValueOf(res.Episode.Steps), true
	case "budget":
		// A budget of 1 token stops an episode at its first LLM call.
		res := playOne(b)
		if !res.Episode.BudgetStopped {
			return reflect.ValueOf(fmt.Sprintf("an episode of %d steps, not budget-stopped", res.Episode.Steps)), false
		}
		return lookup(reflect.ValueOf(b.Setup.Budget), rest)
	case "project":
		switch rest {
		case "name":
			return reflect.ValueOf(b.Setup.Name), true
		case "seed":
			return reflect.ValueOf(b.Setup.Seed), true
		}
	case "reward":
		w, ok := strings.CutPrefix(rest, "weights.")
		if v, found := b.Setup.Weights[w]; ok && found {
			return reflect.ValueOf(v), true
		}
	case "env":
		ref, ok := loader.refs["env:writing"]
		if !ok {
			return reflect.Value{}, false
		}
		if rest == "source" {
			return reflect.ValueOf("settest:" + ref.Path), true
		}
		if p, ok := strings.CutPrefix(rest, "params."); ok {
			return lookup(reflect.ValueOf(ref.Params), p)
		}
		if s, ok := strings.CutPrefix(rest, "sandbox."); ok {
			return lookup(reflect.ValueOf(ref.Sandbox), s)
		}
		if rest == "sha256" {
			return reflect.ValueOf(ref.SHA256), true
		}
	case "rewards":
		i, field, _ := strings.Cut(rest, ".")
		n, _ := strconv.Atoi(i)
		if n >= len(b.Setup.Rewards) {
			break
		}
		name := b.Setup.Rewards[n].Name()
		ref, ok := loader.refs["reward:"+name]
		switch {
		case !ok:
		case field == "source":
			return reflect.ValueOf("settest:" + name), true
		case field == "sha256":
			return reflect.ValueOf(ref.SHA256), true
		case strings.HasPrefix(field, "sandbox."):
			return lookup(reflect.ValueOf(ref.Sandbox), strings.TrimPrefix(field, "sandbox."))
		}
	case "llm":
		return reachedLLM(b, rest)
	case "telemetry":
		// The telemetry the setup's workers trace with.
		if !b.Setup.Telemetry.Enabled() {
			return reflect.ValueOf("telemetry off"), false
		}
		return lookup(reflect.ValueOf(b.Setup.Telemetry.Config()), rest)
	case "cluster":
		// The table the trainer's command connects with (cmd/troupe's
		// newTrainer; TestTrainOnWorkers runs it).
		return lookup(reflect.ValueOf(b.Cluster), rest)
	case "agents":
		if rest == "0.llm" && len(b.Setup.Agents) > 0 {
			return reflect.ValueOf(b.Setup.Agents[0].Config.Model), true
		}
	}
	return reflect.Value{}, false
}

// reachedLLM returns the value of an llm.default key in what the agent's
// LLM was built with: the sim backend's settings are the agent's, the
// others the openai backend's (the test builds one for them).
func reachedLLM(b *agentfile.Built, key string) (reflect.Value, bool) {
	rest, ok := strings.CutPrefix(key, "default.")
	if !ok || len(b.Setup.Agents) == 0 {
		return reflect.Value{}, false
	}
	a := b.Setup.Agents[0]
	if c, ok := a.Backend.(llm.Client); ok {
		return lookup(reflect.ValueOf(c.Config()), rest)
	}
	if strings.HasPrefix(rest, "sim.") {
		// The simulated LLM's latencies in an episode follow the model.
		res := playOne(b)
		m, u := a.Config.Sim, res.Episode.AgentUsage
		var got, want float64
		calls := res.Episode.Metrics[core.MetricLLMCalls]
		for _, x := range u {
			got += x.Latency.Seconds()
			want += float64(x.PromptTokens)/m.PrefillTPS + float64(x.CompletionTokens)/m.DecodeTPS
		}
		want += calls * m.Base.Seconds()
		if calls == 0 || math.Abs(got-want) > calls*1e-9 {
			return reflect.ValueOf(fmt.Sprintf("%v s of latency in %v calls; the model gives %v s", got, calls, want)), false
		}
	}
	return lookup(reflect.ValueOf(a.Config), rest)
}

// endless is an env whose episodes never end and whose spec sets no step
// limit.
type endless struct{}

func (endless) Spec() core.EnvSpec {
	return core.EnvSpec{Name: "endless", Agents: []string{"a"}, ObsSize: 1, Decisions: []core.DecisionSpec{{Name: "wait"}, {Name: "go"}}}
}
func (endless) Reset(uint64) ([]core.Observation, error) {
	return []core.Observation{{Features: []float64{0}}}, nil
}
func (endless) Step([]core.Action) (core.StepResult, error) {
	return core.StepResult{Observations: []core.Observation{{Features: []float64{0}}}}, nil
}
func (endless) State() []float64 { return nil }
func (endless) Close() error     { return nil }

// stepsReward scores an episode by its number of steps; it needs no
// metric.
type stepsReward struct{}

func (stepsReward) Name() string         { return "steps" }
func (stepsReward) Components() []string { return []string{"steps"} }
func (stepsReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	return map[string]float64{"steps": float64(ep.Steps)}, nil, nil
}

// playOne plays one episode of the single_agent baseline with the setup
// the workers get.
func playOne(b *agentfile.Built) rollout.EpisodeResult {
	// A truncated or budget-stopped writing episode may leave no
	// document, so its scoring may fail: the episode is what is read.
	res, _ := rollout.RunEpisode(context.Background(), b.Setup, nil, "single_agent", 1, nil)
	return res
}

// openaiOnly are the llm keys that configure the openai backend: the test
// sets backend = "openai" with them, so a backend is built to hold them.
var openaiOnly = []string{"base_url", "api_key_env", "max_concurrency", "requests_per_minute", "tokens_per_minute", "max_retries", "timeout", "cache", "cache_mode"}
