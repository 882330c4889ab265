package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"text/template"

	"github.com/troupe-dev/troupe/sdk"
)

// troupeModule is the module path of troupe itself.
const troupeModule = "github.com/troupe-dev/troupe"

func init() {
	commands["new"] = command{"scaffold a Wasm env or reward plugin in Go or C", runNew}
}

var scaffoldName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func runNew(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("new", "new env|reward NAME [--lang go|c] [--dir DIR] [--troupe-root PATH]", stderr)
	lang := fs.String("lang", "go", "plugin language: go or c")
	dir := fs.String("dir", "", "directory to create (default ./NAME)")
	root := fs.String("troupe-root", "", "troupe checkout for the Go plugin's replace directive (default: the one this binary was built from)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if len(pos) != 2 || (pos[0] != "env" && pos[0] != "reward") {
		fmt.Fprintln(stderr, "troupe new: want a kind (env or reward) and a name")
		fs.Usage()
		return exitUsage
	}
	kind, name := pos[0], pos[1]
	if !scaffoldName.MatchString(name) {
		fmt.Fprintf(stderr, "troupe new: name %q: want lower-case letters, digits and underscores, starting with a letter\n", name)
		return exitUsage
	}
	if *lang != "go" && *lang != "c" {
		fmt.Fprintf(stderr, "troupe new: --lang %q: want go or c\n", *lang)
		return exitUsage
	}
	if *dir == "" {
		*dir = name
	}
	if _, err := os.Stat(*dir); err == nil {
		fmt.Fprintf(stderr, "troupe new: %s already exists\n", *dir)
		return exitUsage
	}
	files, err := scaffold(kind, name, *lang, *root)
	if err != nil {
		fmt.Fprintln(stderr, "troupe new:", err)
		return exitUsage
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(stderr, "troupe new:", err)
		return exitRuntime
	}
	for _, f := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f.name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(*dir, f.name), f.data, mode); err != nil {
			fmt.Fprintln(stderr, "troupe new:", err)
			return exitRuntime
		}
		fmt.Fprintln(stdout, filepath.Join(*dir, f.name))
	}
	fmt.Fprintf(stdout, "\nbuild it with: sh %s\nthen load it with source = \"wasm:%s\"\n",
		filepath.Join(*dir, "build.sh"), filepath.Join(*dir, name+".wasm"))
	return exitOK
}

type scaffoldFile struct {
	name string
	data []byte
}

type scaffoldData struct {
	Name, Kind string
	// For Go: the require and replace lines of go.mod and the go version.
	GoVersion, Require, Replace string
}

// scaffold returns the files of a new plugin.
func scaffold(kind, name, lang, root string) ([]scaffoldFile, error) {
	d := scaffoldData{Name: name, Kind: kind}
	var files []scaffoldFile
	add := func(file, tmpl string) error {
		t, err := template.New(file).Parse(tmpl)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, d); err != nil {
			return err
		}
		files = append(files, scaffoldFile{file, b.Bytes()})
		return nil
	}
	var err error
	switch lang {
	case "go":
		var goSum []byte
		d.GoVersion, d.Require, d.Replace, goSum, err = goModuleLines(root)
		if err != nil {
			return nil, err
		}
		if err = add("go.mod", goModTemplate); err != nil {
			return nil, err
		}
		if goSum != nil {
			files = append(files, scaffoldFile{"go.sum", goSum})
		}
		src := goEnvTemplate
		if kind == "reward" {
			src = goRewardTemplate
		}
		if err = add("main.go", src); err != nil {
			return nil, err
		}
		err = add("build.sh", goBuildTemplate)
	case "c":
		src := cEnvTemplate
		if kind == "reward" {
			src = cRewardTemplate
		}
		if err = add(name+".c", src); err != nil {
			return nil, err
		}
		files = append(files, scaffoldFile{"troupe_plugin.h", sdk.CHeader()})
		err = add("build.sh", cBuildTemplate)
	}
	if err != nil {
		return nil, err
	}
	return files, nil
}

// goModuleLines decides how the generated go.mod finds troupe: a replace
// directive to root (the --troupe-root flag, else the checkout this binary
// was built from, found through its source paths), else the version this
// binary was built as.
func goModuleLines(root string) (goVersion, require, replace string, goSum []byte, err error) {
	if root == "" {
		root = sourceRoot()
	}
	if root != "" {
		abs, err := filepath.Abs(root)
		if err != nil {
			return "", "", "", nil, err
		}
		gomod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
		if err != nil {
			return "", "", "", nil, fmt.Errorf("--troupe-root %s: %w", root, err)
		}
		mod, ver := modLine(gomod, "module"), modLine(gomod, "go")
		if mod != troupeModule {
			return "", "", "", nil, fmt.Errorf("--troupe-root %s: go.mod declares module %q, not %s", root, mod, troupeModule)
		}
		sum, _ := os.ReadFile(filepath.Join(abs, "go.sum"))
		return ver, troupeModule + " v0.0.0-00010101000000-000000000000", troupeModule + " => " + abs, sum, nil
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == troupeModule && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.GoVersion, "go"), troupeModule + " " + bi.Main.Version, "", nil, nil
	}
	return "", "", "", nil, errors.New("cannot tell where the troupe module is: pass --troupe-root with the path of a troupe checkout")
}

// sourceRoot returns the troupe checkout this binary was compiled from, if
// its sources are still there (not with -trimpath).
func sourceRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || modLine(gomod, "module") != troupeModule {
		return ""
	}
	return root
}

// modLine returns the argument of the first go.mod line starting with
// directive.
func modLine(gomod []byte, directive string) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), directive+" "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

const goModTemplate = `module example.com/{{.Name}}

go {{.GoVersion}}

require {{.Require}}
{{if .Replace}}
replace {{.Replace}}
{{end}}`

const goBuildTemplate = `#!/bin/sh
# Builds {{.Name}}.wasm, a troupe Wasm plugin.
set -eu
cd "$(dirname "$0")"
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o {{.Name}}.wasm .
`

const goEnvTemplate = `// Command {{.Name}} is a troupe env plugin compiled to Wasm with the Go
// guest kit. Build it with sh build.sh, check it with
// troupe inspect {{.Name}}.wasm, and use it from an agentfile:
//
//	[env]
//	source = "wasm:{{.Name}}.wasm"
//	[env.params]
//	agents = 2
//	work = 6
//
// The task: a team shares some units of work; at each step every agent
// either waits or does one unit. Replace it with yours.
package main

import (
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/sdk/wasmguest"
)

// A c-shared module runs init functions but never main.
func init() { wasmguest.ServeEnv(newEnv) }

func main() {}

// Decisions.
const (
	wait = iota
	work
)

type params struct {
	Agents int ` + "`json:\"agents\"`" + `
	Work   int ` + "`json:\"work\"`" + `
}

type env struct {
	p       params
	spec    core.EnvSpec
	left, t int
	started bool
}

func newEnv(m map[string]any) (core.Env, error) {
	p := params{Agents: 2, Work: 6}
	if err := core.DecodeParams(m, &p); err != nil {
		return nil, fmt.Errorf("{{.Name}}: %w", err)
	}
	if p.Agents < 1 || p.Work < 1 {
		return nil, errors.New("{{.Name}}: params: agents and work must be positive")
	}
	e := &env{p: p}
	e.spec = core.EnvSpec{
		Name:        "{{.Name}}",
		ObsSize:     1,
		Decisions:   []core.DecisionSpec{{"{{"}}Name: "wait"}, {Name: "work"{{"}}"}},
		StateSize:   1,
		StepRewards: true,
		Metrics:     []string{core.MetricMakespan, core.MetricReferenceMakespan, core.MetricTokens, core.MetricReferenceTokens},
		MaxSteps:    4 * p.Work,
	}
	for i := range p.Agents {
		e.spec.Agents = append(e.spec.Agents, fmt.Sprintf("agent_%d", i))
	}
	return e, nil
}

func (e *env) Spec() core.EnvSpec { return e.spec }

func (e *env) obs() []core.Observation {
	obs := make([]core.Observation, e.p.Agents)
	for i := range obs {
		obs[i] = core.Observation{
			Features: []float64{float64(e.left) / float64(e.p.Work)},
			Mask:     []bool{true, e.left > 0},
			Text:     fmt.Sprintf("%d units of work left.", e.left),
		}
	}
	return obs
}

func (e *env) Reset(seed uint64) ([]core.Observation, error) {
	e.left, e.t, e.started = e.p.Work, 0, true
	return e.obs(), nil
}

func (e *env) Step(actions []core.Action) (core.StepResult, error) {
	if !e.started {
		return core.StepResult{}, errors.New("{{.Name}}: Step before Reset")
	}
	if len(actions) != e.p.Agents {
		return core.StepResult{}, fmt.Errorf("{{.Name}}: %d actions for %d agents", len(actions), e.p.Agents)
	}
	rewards := make([]float64, e.p.Agents)
	for i, a := range actions {
		if a.Decision == work && e.left > 0 {
			e.left--
			rewards[i] = 1 / float64(e.p.Work)
		}
	}
	e.t++
	res := core.StepResult{Observations: e.obs(), Rewards: rewards}
	res.Terminated = e.left == 0
	res.Truncated = !res.Terminated && e.t >= e.spec.MaxSteps
	if res.Done() {
		e.started = false
		res.Metrics = map[string]float64{
			core.MetricMakespan:          float64(e.t),
			core.MetricReferenceMakespan: float64(e.p.Work),
			core.MetricTokens:            0,
			core.MetricReferenceTokens:   0,
		}
	}
	return res, nil
}

func (e *env) State() []float64 { return []float64{float64(e.left)} }

func (e *env) Close() error { return nil }
`

const goRewardTemplate = `// Command {{.Name}} is a troupe reward plugin compiled to Wasm with the Go
// guest kit. Build it with sh build.sh and use it from an agentfile:
//
//	[[rewards]]
//	source = "wasm:{{.Name}}.wasm"
//
// It scores speed: the reference makespan over the team's makespan.
// Replace it with yours.
package main

import (
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/sdk/wasmguest"
)

// A c-shared module runs init functions but never main.
func init() {
	wasmguest.ServeReward(func(params map[string]any) (core.RewardFunc, error) {
		var p struct{}
		if err := core.DecodeParams(params, &p); err != nil {
			return nil, err
		}
		return reward{}, nil
	})
}

func main() {}

type reward struct{}

func (reward) Name() string { return "{{.Name}}" }

func (reward) Components() []string { return []string{"speed"} }

func (reward) Score(ep *core.Episode) (components, metrics map[string]float64, err error) {
	speed := 0.0
	if m := ep.Metrics[core.MetricMakespan]; m > 0 {
		speed = ep.Metrics[core.MetricReferenceMakespan] / m
	}
	return map[string]float64{"speed": speed}, nil, nil
}
`

const cBuildTemplate = `#!/bin/sh
# Builds {{.Name}}.wasm, a troupe Wasm plugin (needs clang, lld, wasi-libc and
# the wasm32 compiler-rt builtins: Debian's clang lld wasi-libc
# libclang-rt-14-dev-wasm32).
set -eu
cd "$(dirname "$0")"
${CC:-clang} --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -o {{.Name}}.wasm {{.Name}}.c
`

const cEnvTemplate = `/*
 * {{.Name}}.c: a troupe env plugin in C (see troupe_plugin.h and troupe's
 * sdk/ABI.md). Build it with sh build.sh and use it from an agentfile:
 *
 *   [env]
 *   source = "wasm:{{.Name}}.wasm"
 *
 * The task: two agents share WORK units of work; at each step each agent
 * either waits (decision 0) or does one unit (decision 1). Replace it with
 * yours.
 */
#define TROUPE_PLUGIN_IMPLEMENTATION
#include "troupe_plugin.h"

#define AGENTS 2
#define WORK 6
#define MAX_STEPS (4 * WORK)

static int left, t, started;

int32_t troupe_open(int32_t kind, int32_t params_len) {
    if (kind == TROUPE_OPEN_REWARD) return troupe_error(TROUPE_ERR_UNSUPPORTED, "{{.Name}} serves no reward function");
    if (params_len > 2) return troupe_error(TROUPE_ERR_FAILED, "{{.Name}}: takes no params");
    static const char spec[] =
        "{\"abi\":1,\"env\":{\"name\":\"{{.Name}}\",\"agents\":[\"agent_0\",\"agent_1\"],\"obs_size\":1,"
        "\"decisions\":[{\"name\":\"wait\"},{\"name\":\"work\"}],\"state_size\":1,\"step_rewards\":true,"
        "\"metrics\":[\"makespan_s\",\"reference_makespan_s\",\"tokens\",\"reference_tokens\"],\"max_steps\":24}}";
    troupe_writer w = troupe_output();
    troupe_put_raw(&w, spec, sizeof spec - 1);
    return troupe_finish(&w);
}

static void put_observations(troupe_writer *w) {
    uint8_t legal[2] = {1, left > 0};
    troupe_put_obs_header(w, AGENTS, 1, 2);
    for (int i = 0; i < AGENTS; i++) {
        troupe_put_u32(w, TROUPE_OBS_HAS_MASK);
        troupe_put_f64(w, (double)left / WORK);
        troupe_put_mask(w, legal, 2);
        troupe_put_cstr(w, "");
    }
}

int32_t troupe_reset(int64_t seed) {
    (void)seed;
    left = WORK;
    t = 0;
    started = 1;
    troupe_writer w = troupe_output();
    put_observations(&w);
    return troupe_finish(&w);
}

int32_t troupe_step(int32_t len) {
    if (!started) return troupe_error(TROUPE_ERR_BAD_STATE, "{{.Name}}: step before reset");
    troupe_reader in = troupe_input(len);
    if (troupe_get_u32(&in) != AGENTS) return troupe_error(TROUPE_ERR_FAILED, "{{.Name}}: want one action per agent");
    double rewards[AGENTS];
    for (int i = 0; i < AGENTS; i++) {
        troupe_action a;
        troupe_get_action(&in, &a);
        rewards[i] = 0;
        if (a.decision == 1 && left > 0) {
            left--;
            rewards[i] = 1.0 / WORK;
        }
    }
    if (!troupe_at_end(&in)) return troupe_error(TROUPE_ERR_BAD_INPUT, "{{.Name}}: malformed joint action");
    t++;
    int terminated = left == 0, truncated = !terminated && t >= MAX_STEPS;
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, TROUPE_STEP_HAS_REWARDS | (terminated ? TROUPE_STEP_TERMINATED : 0) |
                           (truncated ? TROUPE_STEP_TRUNCATED : 0));
    put_observations(&w);
    for (int i = 0; i < AGENTS; i++) troupe_put_f64(&w, rewards[i]);
    if (terminated || truncated) {
        started = 0;
        troupe_put_u32(&w, 4);
        troupe_put_cstr(&w, "makespan_s");
        troupe_put_f64(&w, t);
        troupe_put_cstr(&w, "reference_makespan_s");
        troupe_put_f64(&w, WORK);
        troupe_put_cstr(&w, "reference_tokens");
        troupe_put_f64(&w, 0);
        troupe_put_cstr(&w, "tokens");
        troupe_put_f64(&w, 0);
    } else {
        troupe_put_u32(&w, 0);
    }
    troupe_put_u32(&w, 0); /* artifacts */
    return troupe_finish(&w);
}

int32_t troupe_state(void) {
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, 1);
    troupe_put_f64(&w, left);
    return troupe_finish(&w);
}

int32_t troupe_close(void) { return 0; }
`

const cRewardTemplate = `/*
 * {{.Name}}.c: a troupe reward plugin in C (see troupe_plugin.h and troupe's
 * sdk/ABI.md). Build it with sh build.sh and use it from an agentfile:
 *
 *   [[rewards]]
 *   source = "wasm:{{.Name}}.wasm"
 *
 * It scores speed: reference_makespan_s / makespan_s. Replace it with yours.
 */
#define TROUPE_PLUGIN_IMPLEMENTATION
#include "troupe_plugin.h"

int32_t troupe_open(int32_t kind, int32_t params_len) {
    if (kind == TROUPE_OPEN_ENV) return troupe_error(TROUPE_ERR_UNSUPPORTED, "{{.Name}} serves no env");
    if (params_len > 2) return troupe_error(TROUPE_ERR_FAILED, "{{.Name}}: takes no params");
    static const char spec[] = "{\"abi\":1,\"reward\":{\"name\":\"{{.Name}}\",\"components\":[\"speed\"]}}";
    troupe_writer w = troupe_output();
    troupe_put_raw(&w, spec, sizeof spec - 1);
    return troupe_finish(&w);
}

static int name_is(const char *s, uint32_t n, const char *want) {
    return n == strlen(want) && memcmp(s, want, n) == 0;
}

int32_t troupe_score(int32_t len) {
    troupe_reader in = troupe_input(len);
    uint32_t n;
    troupe_get_str(&in, &n); /* env name */
    troupe_get_u64(&in);     /* seed */
    troupe_get_u32(&in);     /* steps */
    troupe_get_u32(&in);     /* flags */
    uint32_t returns = troupe_get_u32(&in);
    for (uint32_t i = 0; i < returns && !in.err; i++) troupe_get_f64(&in);
    uint32_t usages = troupe_get_u32(&in);
    for (uint32_t i = 0; i < usages && !in.err; i++) {
        troupe_get_i64(&in);
        troupe_get_i64(&in);
        troupe_get_i64(&in);
        troupe_get_str(&in, &n);
    }
    double makespan = 0, reference = 0;
    uint32_t metrics = troupe_get_u32(&in);
    for (uint32_t i = 0; i < metrics && !in.err; i++) {
        const char *name = troupe_get_str(&in, &n);
        double v = troupe_get_f64(&in);
        if (name && name_is(name, n, "makespan_s")) makespan = v;
        if (name && name_is(name, n, "reference_makespan_s")) reference = v;
    }
    if (in.err) return troupe_error(TROUPE_ERR_BAD_INPUT, "{{.Name}}: malformed episode");
    /* The artifacts that follow are not needed. */
    double speed = makespan > 0 ? reference / makespan : 0;
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, 1);
    troupe_put_cstr(&w, "speed");
    troupe_put_f64(&w, speed);
    troupe_put_u32(&w, 0); /* no extra metrics */
    return troupe_finish(&w);
}
`
