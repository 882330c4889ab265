package main

// The templates of `troupe new`: a plugin's source, its build script and
// an agentfile that trains with it.

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

const cBuildTemplate = `#!/bin/sh
# Builds {{.Name}}.wasm, a troupe Wasm plugin (needs clang, lld, wasi-libc and
# the wasm32 compiler-rt builtins: Debian's clang lld wasi-libc
# libclang-rt-14-dev-wasm32).
set -eu
cd "$(dirname "$0")"
${CC:-clang} --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -o {{.Name}}.wasm {{.Name}}.c
`

// envAgentfileTemplate trains a policy on the scaffolded env.
const envAgentfileTemplate = `# Trains a team on the {{.Name}} env plugin. Build the plugin first
# (sh build.sh), then: troupe train -f agentfile.toml
# README.md's "agentfile.toml" section lists every key and its default.

[project]
name = "{{.Name}}"
seed = 1

[env]
source = "wasm:{{.Name}}.wasm"      # relative to this file
[env.params]{{if eq .Lang "go"}}
agents = 2{{end}}
work = 6

# The env reports makespan_s and reference_makespan_s (its spec's
# "metrics"), which the built-in makespan reward needs: speed = 1 −
# makespan/reference, 0 at one agent's pace, 0.5 when two share the work.
[[rewards]]
source = "builtin:makespan"

[reward.weights]
speed = 1.0

[train]
iterations = 30
tasks_per_iteration = 8
group_size = 8

[eval]
episodes = 50
`

// rewardAgentfileTemplate trains a policy on a built-in env scored by the
// scaffolded reward.
const rewardAgentfileTemplate = `# Trains a team on the built-in lbf env (level-based foraging), scored by
# the {{.Name}} reward plugin and the env's return. Build the plugin first
# (sh build.sh), then: troupe train -f agentfile.toml
# README.md's "agentfile.toml" section lists every key and its default.

[project]
name = "{{.Name}}"
seed = 1

[env]
source = "builtin:lbf"              # reports makespan_s and reference_makespan_s, which {{.Name}} needs

[[rewards]]
source = "wasm:{{.Name}}.wasm"      # relative to this file
[[rewards]]
source = "builtin:return"

[reward.weights]
speed = 0.5
return = 1.0

[train]
iterations = 30
tasks_per_iteration = 8
group_size = 8

[eval]
episodes = 50
`

const goEnvTemplate = `// Command {{.Name}} is a troupe env plugin compiled to Wasm with the Go
// guest kit. Build it with sh build.sh, check it with
// troupe inspect {{.Name}}.wasm, and train on it with
// troupe train -f agentfile.toml.
//
// The task: a team shares some units of work (between half and all of
// the "work" param, drawn from the episode's seed); at each step every
// agent either waits or does one unit. Replace it with yours.
package main

import (
	"errors"
	"fmt"
	"math/rand/v2"

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
	p              params
	spec           core.EnvSpec
	units, left, t int
	started        bool
}

func newEnv(m map[string]any) (core.Env, error) {
	p := params{Agents: 2, Work: 6}
	// Unknown keys and wrong types are errors that name the key.
	if err := core.DecodeParams(m, &p); err != nil {
		return nil, fmt.Errorf("{{.Name}}: %w", err)
	}
	if p.Agents < 1 || p.Agents > 64 {
		return nil, fmt.Errorf("{{.Name}}: params: key \"agents\": want 1..64, got %d", p.Agents)
	}
	if p.Work < 1 || p.Work > 1000 {
		return nil, fmt.Errorf("{{.Name}}: params: key \"work\": want 1..1000, got %d", p.Work)
	}
	e := &env{p: p}
	e.spec = core.EnvSpec{
		Name:        "{{.Name}}",
		ObsSize:     1,
		Decisions:   []core.DecisionSpec{{"{{"}}Name: "wait"}, {Name: "work"{{"}}"}},
		StateSize:   1,
		StepRewards: true,
		// The metrics every episode's last step reports; rewards that need
		// them (builtin:makespan needs the first two) are checked against
		// this list before training.
		Metrics:  []string{core.MetricMakespan, core.MetricReferenceMakespan, core.MetricTokens, core.MetricReferenceTokens},
		MaxSteps: 4 * p.Work,
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

// Reset starts an episode. All randomness comes from the seed, so the same
// seed and actions replay the same episode.
func (e *env) Reset(seed uint64) ([]core.Observation, error) {
	rng := rand.New(rand.NewPCG(seed, 0))
	e.units = (e.p.Work+1)/2 + rng.IntN(e.p.Work/2+1)
	e.left, e.t, e.started = e.units, 0, true
	return e.obs(), nil
}

func (e *env) Step(actions []core.Action) (core.StepResult, error) {
	if !e.started {
		return core.StepResult{}, errors.New("{{.Name}}: Step before Reset")
	}
	if len(actions) != e.p.Agents {
		return core.StepResult{}, fmt.Errorf("{{.Name}}: %d actions for %d agents", len(actions), e.p.Agents)
	}
	for i, a := range actions {
		if a.Decision < 0 || a.Decision >= len(e.spec.Decisions) {
			return core.StepResult{}, fmt.Errorf("{{.Name}}: agent %d: decision %d is not one of 0..%d", i, a.Decision, len(e.spec.Decisions)-1)
		}
	}
	rewards := make([]float64, e.p.Agents)
	for i, a := range actions {
		// "work" with nothing left (its mask forbids it) plays as "wait".
		if a.Decision == work && e.left > 0 {
			e.left--
			rewards[i] = 1 / float64(e.units)
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
			core.MetricReferenceMakespan: float64(e.units), // one agent, a unit a step
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
// guest kit. Build it with sh build.sh and train with it with
// troupe train -f agentfile.toml.
//
// It scores speed: the reference makespan over the team's makespan.
// Replace it with yours.
package main

import (
	"fmt"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/sdk/wasmguest"
)

// A c-shared module runs init functions but never main.
func init() {
	wasmguest.ServeReward(func(params map[string]any) (core.RewardFunc, error) {
		var p struct{}
		if err := core.DecodeParams(params, &p); err != nil {
			return nil, fmt.Errorf("{{.Name}}: %w", err)
		}
		return reward{}, nil
	})
}

func main() {}

type reward struct{}

func (reward) Name() string { return "{{.Name}}" }

func (reward) Components() []string { return []string{"speed"} }

// RequiredMetrics names the episode metrics Score needs: troupe checks
// before training that the env reports them (core.MetricReader).
func (reward) RequiredMetrics() []string {
	return []string{core.MetricMakespan, core.MetricReferenceMakespan}
}

func (r reward) Score(ep *core.Episode) (components, metrics map[string]float64, err error) {
	for _, m := range r.RequiredMetrics() {
		if _, ok := ep.Metrics[m]; !ok {
			return nil, nil, fmt.Errorf("{{.Name}}: the episode has no metric %q", m)
		}
	}
	speed := 0.0
	if m := ep.Metrics[core.MetricMakespan]; m > 0 {
		speed = ep.Metrics[core.MetricReferenceMakespan] / m
	}
	return map[string]float64{"speed": speed}, nil, nil
}
`

const cEnvTemplate = `/*
 * {{.Name}}.c: a troupe env plugin in C (see troupe_plugin.h and troupe's
 * sdk/ABI.md). Build it with sh build.sh and train on it with
 * troupe train -f agentfile.toml.
 *
 * The task: two agents share some units of work (between half and all of
 * the "work" param, drawn from the episode's seed); at each step each
 * agent either waits (decision 0) or does one unit (decision 1). Replace
 * it with yours.
 */
#define TROUPE_PLUGIN_IMPLEMENTATION
#include "troupe_plugin.h"
#include <stdio.h>

#define AGENTS 2
#define DECISIONS 2
#define WAIT 0
#define WORK 1

static long long work = 6; /* the "work" param */
static int units, left, t, started;

int32_t troupe_open(int32_t kind, int32_t params_len) {
    if (kind == TROUPE_OPEN_REWARD) return troupe_error(TROUPE_ERR_UNSUPPORTED, "{{.Name}} serves no reward function");
    /* Read the params before writing the reply, which overwrites them.
     * Unknown keys, wrong types and bytes that are not a JSON object are
     * errors that name the key. */
    troupe_params p;
    int32_t rc = troupe_params_begin(&p, params_len);
    while (rc == 0 && (rc = troupe_params_next(&p)) == 1) {
        if (troupe_params_key_is(&p, "work")) rc = troupe_params_int(&p, &work);
        else rc = troupe_params_unknown(&p);
    }
    if (rc < 0) return rc;
    if (work < 1 || work > 1000) return troupe_error(TROUPE_ERR_FAILED, "params: key \"work\": want 1..1000");
    /* The metrics every episode's last step reports; rewards that need
     * them (builtin:makespan needs the first two) are checked against this
     * list before training. */
    char spec[512];
    int n = snprintf(spec, sizeof spec,
        "{\"abi\":1,\"env\":{\"name\":\"{{.Name}}\",\"agents\":[\"agent_0\",\"agent_1\"],\"obs_size\":1,"
        "\"decisions\":[{\"name\":\"wait\"},{\"name\":\"work\"}],\"state_size\":1,\"step_rewards\":true,"
        "\"metrics\":[\"makespan_s\",\"reference_makespan_s\",\"tokens\",\"reference_tokens\"],\"max_steps\":%lld}}",
        4 * work);
    troupe_writer w = troupe_output();
    troupe_put_raw(&w, spec, (uint32_t)n);
    return troupe_finish(&w);
}

static void put_observations(troupe_writer *w) {
    uint8_t legal[DECISIONS] = {1, left > 0};
    troupe_put_obs_header(w, AGENTS, 1, DECISIONS);
    for (int i = 0; i < AGENTS; i++) {
        troupe_put_u32(w, TROUPE_OBS_HAS_MASK);
        troupe_put_f64(w, (double)left / (double)work);
        troupe_put_mask(w, legal, DECISIONS);
        troupe_put_cstr(w, "");
    }
}

/* splitmix64: all randomness comes from the seed, so the same seed and
 * actions replay the same episode. */
static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

int32_t troupe_reset(int64_t seed) {
    units = (int)((work + 1) / 2 + (long long)(splitmix64((uint64_t)seed) % (uint64_t)(work / 2 + 1)));
    left = units;
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
    troupe_action a[AGENTS];
    for (int i = 0; i < AGENTS; i++) troupe_get_action(&in, &a[i]);
    if (!troupe_at_end(&in)) return troupe_error(TROUPE_ERR_BAD_INPUT, "{{.Name}}: malformed joint action");
    for (int i = 0; i < AGENTS; i++) {
        if (a[i].decision < 0 || a[i].decision >= DECISIONS) {
            char msg[96];
            snprintf(msg, sizeof msg, "{{.Name}}: agent %d: decision %d is not one of 0..%d", i, (int)a[i].decision, DECISIONS - 1);
            return troupe_error(TROUPE_ERR_FAILED, msg);
        }
    }
    double rewards[AGENTS];
    for (int i = 0; i < AGENTS; i++) {
        rewards[i] = 0;
        /* "work" with nothing left (its mask forbids it) plays as "wait". */
        if (a[i].decision == WORK && left > 0) {
            left--;
            rewards[i] = 1.0 / units;
        }
    }
    t++;
    int terminated = left == 0, truncated = !terminated && t >= 4 * work;
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, TROUPE_STEP_HAS_REWARDS | (terminated ? TROUPE_STEP_TERMINATED : 0) |
                           (truncated ? TROUPE_STEP_TRUNCATED : 0));
    put_observations(&w);
    for (int i = 0; i < AGENTS; i++) troupe_put_f64(&w, rewards[i]);
    if (terminated || truncated) {
        started = 0;
        troupe_put_u32(&w, 4); /* metrics, sorted by name */
        troupe_put_cstr(&w, "makespan_s");
        troupe_put_f64(&w, t);
        troupe_put_cstr(&w, "reference_makespan_s"); /* one agent, a unit a step */
        troupe_put_f64(&w, units);
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
 * sdk/ABI.md). Build it with sh build.sh and train with it with
 * troupe train -f agentfile.toml.
 *
 * It scores speed: reference_makespan_s / makespan_s. Replace it with yours.
 */
#define TROUPE_PLUGIN_IMPLEMENTATION
#include "troupe_plugin.h"

int32_t troupe_open(int32_t kind, int32_t params_len) {
    if (kind == TROUPE_OPEN_ENV) return troupe_error(TROUPE_ERR_UNSUPPORTED, "{{.Name}} serves no env");
    /* It takes no params: any key is unknown, and bytes that are not a
     * JSON object are bad input. */
    troupe_params p;
    int32_t rc = troupe_params_begin(&p, params_len);
    while (rc == 0 && (rc = troupe_params_next(&p)) == 1) rc = troupe_params_unknown(&p);
    if (rc < 0) return rc;
    /* "metrics" names the episode metrics troupe_score needs: troupe checks
     * before training that the env reports them. */
    static const char spec[] = "{\"abi\":1,\"reward\":{\"name\":\"{{.Name}}\",\"components\":[\"speed\"],"
                               "\"metrics\":[\"makespan_s\",\"reference_makespan_s\"]}}";
    troupe_writer w = troupe_output();
    troupe_put_raw(&w, spec, sizeof spec - 1);
    return troupe_finish(&w);
}

static int name_is(const char *s, uint32_t n, const char *want) {
    return s && n == strlen(want) && memcmp(s, want, n) == 0;
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
    int have = 0;
    uint32_t metrics = troupe_get_u32(&in);
    for (uint32_t i = 0; i < metrics && !in.err; i++) {
        const char *name = troupe_get_str(&in, &n);
        double v = troupe_get_f64(&in);
        if (name_is(name, n, "makespan_s")) makespan = v, have |= 1;
        if (name_is(name, n, "reference_makespan_s")) reference = v, have |= 2;
    }
    if (in.err) return troupe_error(TROUPE_ERR_BAD_INPUT, "{{.Name}}: malformed episode");
    if (have != 3) return troupe_error(TROUPE_ERR_FAILED, "{{.Name}}: the episode lacks makespan_s or reference_makespan_s");
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
