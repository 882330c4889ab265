package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/envs/writing"
	grpcplugin "github.com/troupe-dev/troupe/plugins/grpc"
	"github.com/troupe-dev/troupe/plugins/wasm"
)

// The paths an env is stepped through.
const (
	PathInProcess = "in-process"
	// PathWasm is the env's own Go source compiled to Wasm with the guest
	// kit (sdk/wasmguest).
	PathWasm = "wasm"
	// PathWasmC is the env ported to C (examples/c-lbf) through the same
	// Wasm host: the cost of the ABI and the host without Go's Wasm code
	// generation.
	PathWasmC = "wasm-c"
	PathGRPC  = "go-plugin"
)

// stepPaths lists the paths each env is measured through, in table order.
var stepPaths = map[string][]string{
	lbf.Name:     {PathInProcess, PathWasm, PathWasmC, PathGRPC},
	writing.Name: {PathInProcess, PathWasm, PathGRPC},
}

// pluginKey names env through a plugin path as troupe bench's flags do:
// "wasm/lbf", "wasm-c/lbf", "grpc/writing".
func pluginKey(path, env string) string {
	if path == PathGRPC {
		return "grpc/" + env
	}
	return path + "/" + env
}

// pluginRows lists the plugin rows of the comparison, for errors.
func pluginRows() string {
	var rows []string
	for _, env := range stepEnvs {
		for _, path := range stepPaths[env] {
			if path != PathInProcess {
				rows = append(rows, env+" "+path)
			}
		}
	}
	return strings.Join(rows, ", ")
}

// pluginScheme is the SourceRef scheme of a plugin path.
func pluginScheme(path string) string {
	if path == PathGRPC {
		return "grpc"
	}
	return "wasm"
}

// StepRow is one line of the env-step comparison.
type StepRow struct {
	Env  string `json:"env"`
	Path string `json:"path"` // in-process, wasm, wasm-c or go-plugin
	// NsPerStep is the mean time of one joint Step (resets excluded).
	NsPerStep     float64 `json:"ns_per_step"`
	AllocsPerStep float64 `json:"allocs_per_step"`
	BytesPerStep  float64 `json:"bytes_per_step"`
	// Ratio is NsPerStep ÷ the in-process NsPerStep of the same env.
	Ratio float64 `json:"ratio"`
	Steps int     `json:"steps"` // steps in the measured run
	Load1 float64 `json:"load1"` // 1-minute load average before the row
}

// LBFStepParams are the LBF params of the step comparison: the default
// Foraging-8x8-2p-2f-coop task with episodes long enough that resets are
// rare.
func LBFStepParams() map[string]any { return map[string]any{"max_steps": 100000} }

// WritingStepParams are the writing params of the step comparison: the
// root agentfile's team of five writers.
func WritingStepParams() map[string]any { return map[string]any{"writers": 5} }

// LBFStepWorkload steps env (an LBF env with LBFStepParams) with a fixed
// sequence of 4096 random joint actions, the same for every path. When an
// episode ends the next is reset with the timer stopped.
func LBFStepWorkload(env core.Env) (Workload, error) {
	const nActs = 4096
	n := env.Spec().NumAgents()
	rng := rand.New(rand.NewPCG(1, 2))
	acts := make([][]core.Action, nActs)
	for i := range acts {
		acts[i] = make([]core.Action, n)
		for j := range acts[i] {
			acts[i][j].Decision = rng.IntN(lbf.NumActions)
		}
	}
	seed := uint64(0)
	if _, err := env.Reset(seed); err != nil {
		return nil, err
	}
	i := 0
	return func(t Timer, n int) error {
		for range n {
			res, err := env.Step(acts[i%nActs])
			if err != nil {
				return fmt.Errorf("lbf step %d: %w", i, err)
			}
			i++
			if res.Done() {
				t.StopTimer()
				seed++
				_, err := env.Reset(seed)
				t.StartTimer()
				if err != nil {
					return err
				}
			}
		}
		return nil
	}, nil
}

// Trajectory is one recorded episode: its seed and every joint action,
// texts included.
type Trajectory struct {
	Seed    uint64
	Actions [][]core.Action
}

// RecordWritingTrajectories plays episodes of the in-process writing env
// (params WritingStepParams) with its baseline policies in turn, the text
// of every text decision written by the env's own sim surrogate, as the
// runtime's sim LLM would.
func RecordWritingTrajectories(episodes int) ([]Trajectory, error) {
	e, err := writing.New(WritingStepParams())
	if err != nil {
		return nil, err
	}
	spec := e.Spec()
	if len(spec.Baselines) == 0 {
		return nil, fmt.Errorf("writing env offers no baselines")
	}
	out := make([]Trajectory, 0, episodes)
	for ep := range episodes {
		seed := uint64(1000 + ep)
		pol, err := e.Baseline(spec.Baselines[ep%len(spec.Baselines)])
		if err != nil {
			return nil, err
		}
		obs, err := e.Reset(seed)
		if err != nil {
			return nil, err
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		tr := Trajectory{Seed: seed}
		for step := 0; ; step++ {
			if spec.MaxSteps > 0 && step >= spec.MaxSteps {
				return nil, fmt.Errorf("writing baseline %s did not finish seed %d in %d steps", spec.Baselines[ep%len(spec.Baselines)], seed, step)
			}
			dec, err := pol.Act(obs)
			if err != nil {
				return nil, fmt.Errorf("writing baseline %s: seed %d: step %d: %w", spec.Baselines[ep%len(spec.Baselines)], seed, step, err)
			}
			acts := make([]core.Action, len(dec))
			for i, d := range dec {
				acts[i].Decision = d
				if spec.Decisions[d].NeedsText {
					c, err := e.Simulate(i, d, e.Prompt(i, d), rng)
					if err != nil {
						return nil, err
					}
					acts[i].Text = c.Text
					acts[i].Usage = core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens,
						Latency: e.Latency(i, c.PromptTokens, c.CompletionTokens), Backend: "sim"}
				}
			}
			res, err := e.Step(acts)
			if err != nil {
				return nil, err
			}
			tr.Actions = append(tr.Actions, acts)
			if res.Done() {
				break
			}
			obs = res.Observations
		}
		out = append(out, tr)
	}
	return out, nil
}

// ReplayWorkload replays the trajectories on env, cycling through them;
// each Reset is untimed. As the runtime does, a step builds the prompt of
// every decision that needs text before it steps (an env may reserve the
// prompt's target then, as writing does), so the timed step is the
// prompts and the step. A replay that ends earlier or later than its
// recording is an error (the env is not the same env).
func ReplayWorkload(env core.Env, trs []Trajectory) Workload {
	e, k := 0, 0
	decisions := env.Spec().Decisions
	prompter, _ := core.PrompterOf(env) // as the runtime finds it: only if the spec declares CapPrompt
	return func(t Timer, n int) error {
		for range n {
			tr := &trs[e]
			if k == 0 {
				t.StopTimer()
				_, err := env.Reset(tr.Seed)
				t.StartTimer()
				if err != nil {
					return err
				}
			}
			if prompter != nil {
				for i, a := range tr.Actions[k] {
					if a.Decision >= 0 && a.Decision < len(decisions) && decisions[a.Decision].NeedsText {
						prompter.Prompt(i, a.Decision)
					}
				}
			}
			res, err := env.Step(tr.Actions[k])
			if err != nil {
				return fmt.Errorf("replay seed %d step %d: %w", tr.Seed, k, err)
			}
			k++
			if res.Done() != (k == len(tr.Actions)) {
				return fmt.Errorf("replay seed %d diverged from its recording at step %d", tr.Seed, k)
			}
			if k == len(tr.Actions) {
				e, k = (e+1)%len(trs), 0
			}
		}
		return nil
	}
}

// openPlugin loads a plugin env of scheme "wasm" or "grpc" and opens one
// instance; closing the returned func releases both.
// wl is the Wasm loader (its compilation cache is the user's default, so
// a second run does not compile again).
func openPlugin(ctx context.Context, wl *wasm.Loader, scheme, path string, params map[string]any) (core.Env, func(), error) {
	ref := core.SourceRef{Scheme: scheme, Path: path, Params: params}
	var src core.EnvSource
	var err error
	switch scheme {
	case "wasm":
		src, err = wl.LoadEnv(ctx, ref)
	case "grpc":
		src, err = (&grpcplugin.Loader{Logger: quietLogger()}).LoadEnv(ctx, ref)
	default:
		return nil, nil, fmt.Errorf("unknown plugin scheme %q", scheme)
	}
	if err != nil {
		return nil, nil, err
	}
	env, err := src.Open()
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	return env, func() { env.Close(); src.Close() }, nil
}

// quietLogger discards plugin output (the suite reports errors itself).
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openStepEnv opens env name (with its step-comparison params) through
// path; file is the plugin for the plugin paths. Closing the returned func
// releases the env and its plugin.
func openStepEnv(ctx context.Context, wl *wasm.Loader, name, path, file string) (core.Env, func(), error) {
	params := LBFStepParams()
	if name == writing.Name {
		params = WritingStepParams()
	}
	if path != PathInProcess {
		return openPlugin(ctx, wl, pluginScheme(path), file, params)
	}
	var env core.Env
	var err error
	if name == lbf.Name {
		env, err = lbf.New(params)
	} else {
		env, err = writing.New(params)
	}
	if err != nil {
		return nil, nil, err
	}
	return env, func() { env.Close() }, nil
}

// stepWorkload is the step comparison's workload on env name: LBF's fixed
// random actions, or writing's recorded trajectories trs.
func stepWorkload(name string, env core.Env, trs []Trajectory) (Workload, error) {
	if name == lbf.Name {
		return LBFStepWorkload(env)
	}
	return ReplayWorkload(env, trs), nil
}

// stepEnvs are the envs of the comparison, in table order.
var stepEnvs = []string{lbf.Name, writing.Name}

// runStep measures every env in-process and through every plugin in
// o.Plugins; a path with no plugin, or whose plugin does not load, is
// skipped with the reason in skips.
func runStep(ctx context.Context, o *Options) ([]StepRow, []Skip, error) {
	var rows []StepRow
	var skips []Skip
	files := map[string]string{}
	for _, p := range o.Plugins {
		files[pluginKey(p.Path, p.Env)] = p.File
	}
	trs, err := RecordWritingTrajectories(o.pick(6, 24))
	if err != nil {
		return nil, nil, fmt.Errorf("recording writing trajectories: %w", err)
	}
	wl := wasm.NewLoader(wasm.Options{Logger: quietLogger()})
	defer wl.Close(context.Background())
	for _, name := range stepEnvs {
		var native float64
		for _, path := range stepPaths[name] {
			if err := ctx.Err(); err != nil {
				return rows, skips, err
			}
			row := StepRow{Env: name, Path: path, Load1: load1()}
			file := ""
			if path != PathInProcess {
				key := pluginKey(path, name)
				var ok bool
				if file, ok = files[key]; !ok {
					flag, _, _ := strings.Cut(key, "/")
					reason := fmt.Sprintf("no plugin given (troupe bench --%s %s=FILE; scripts/bench.sh builds them)", flag, name)
					skips = append(skips, Skip{Section: "env step", Row: name + " " + path, Reason: reason})
					continue
				}
			}
			env, closeEnv, err := openStepEnv(ctx, wl, name, path, file)
			if err != nil {
				skips = append(skips, Skip{Section: "env step", Row: name + " " + path, Reason: err.Error(), Failed: true})
				continue
			}
			w, err := stepWorkload(name, env, trs)
			var t Timing
			if err == nil {
				t, err = MeasureMedian(o.dur(), o.pick(1, 3), w)
			}
			closeEnv()
			if err != nil {
				skips = append(skips, Skip{Section: "env step", Row: name + " " + path, Reason: err.Error(), Failed: true})
				continue
			}
			row.NsPerStep, row.AllocsPerStep, row.BytesPerStep, row.Steps = t.NsPerOp(), t.AllocsPerOp(), t.BytesPerOp(), t.N
			if path == PathInProcess {
				native = row.NsPerStep
			}
			if native > 0 {
				row.Ratio = row.NsPerStep / native
			}
			o.logf("env step %-8s %-10s %10.0f ns/step  %6.1f allocs/step  ×%.2f", name, path, row.NsPerStep, row.AllocsPerStep, row.Ratio)
			rows = append(rows, row)
		}
	}
	return rows, skips, nil
}
