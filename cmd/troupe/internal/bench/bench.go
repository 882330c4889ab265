// Package bench is troupe's performance suite, as ordinary Go code that
// both `troupe bench` and the package's Go benchmarks call: env steps
// in-process, through Wasm and through go-plugin; policy forward and
// backward passes against a measured dot-product peak; GRPO training
// throughput with one and two workers; LLM orchestration overhead with 256
// calls in flight; and the wall time until `troupe train` on the root
// agentfile first meets the writing targets.
//
// Nothing here builds code or needs a source checkout: the Wasm and
// go-plugin rows measure plugin files the caller passes in [Options.Plugins]
// (scripts/bench.sh builds them), and the training and time-to-target
// sections read agentfiles, by default the project's own from the current
// directory.
//
// Every figure carries what it is judged by (a Check) and the machine it
// ran on, including the load average, since the numbers of a shared
// machine are noisy.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	_ "github.com/troupe-dev/troupe/plugins/all" // the agentfiles may name any built-in or plugin
)

// Sections of the suite, in the order they run.
const (
	SectionStep   = "step"
	SectionPolicy = "policy"
	SectionTrain  = "train"
	SectionLLM    = "llm"
	SectionTarget = "target"
)

// AllSections lists every section in run order.
var AllSections = []string{SectionStep, SectionPolicy, SectionTrain, SectionLLM, SectionTarget}

// Options configure a run of the suite.
type Options struct {
	// Quick runs a short version (about 30 s): shorter timed runs, one
	// repetition, fewer training iterations, no time-to-target run.
	Quick bool
	// Sections limits the run to these sections (empty: all).
	Sections []string
	// Plugins are the plugin builds the step section measures the envs
	// through; a path with none is listed in Report.Skipped.
	Plugins []Plugin
	// TrainAgentfiles are the agentfiles of the training section; empty
	// means those of TrainEnvs, relative to the current directory.
	TrainAgentfiles []string
	// TargetAgentfile is the agentfile of the time-to-target run; empty
	// means TargetAgentfile (the default project) in the current directory.
	TargetAgentfile string
	// Log, if set, receives one progress line per measurement.
	Log io.Writer
	// StepTime is the minimum timed duration of one micro-benchmark run;
	// zero means 1 s (200 ms with Quick).
	StepTime time.Duration
	// TargetTimeout bounds the time-to-target run; zero means 15 minutes.
	TargetTimeout time.Duration
}

func (o *Options) dur() time.Duration {
	switch {
	case o.StepTime > 0:
		return o.StepTime
	case o.Quick:
		return 200 * time.Millisecond
	}
	return time.Second
}

// pick returns quick when o.Quick, else full.
func (o *Options) pick(quick, full int) int {
	if o.Quick {
		return quick
	}
	return full
}

func (o *Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "bench: "+format+"\n", args...)
	}
}

func (o *Options) wants(section string) bool {
	if len(o.Sections) == 0 {
		return section != SectionTarget || !o.Quick
	}
	return slices.Contains(o.Sections, section)
}

// ErrUnknownSection is returned by Run for a section name it does not know.
var ErrUnknownSection = errors.New("unknown section")

// ErrUnknownPlugin is returned by Run for a Plugin of an env or a path that
// the step comparison does not have.
var ErrUnknownPlugin = errors.New("no step workload for plugin")

// Plugin is a plugin build of one of the step comparison's envs: the env's
// Go source compiled to Wasm (PathWasm), its C port compiled to Wasm
// (PathWasmC), or a go-plugin binary serving it (PathGRPC).
type Plugin struct {
	Env  string // "lbf" or "writing"
	Path string // PathWasm, PathWasmC or PathGRPC
	File string
}

// checkPlugins returns an error wrapping ErrUnknownPlugin for a plugin the
// step comparison has no row for, or for a second plugin of the same row.
func checkPlugins(ps []Plugin) error {
	seen := map[string]bool{}
	for _, p := range ps {
		paths, ok := stepPaths[p.Env]
		if !ok || p.Path == PathInProcess || !slices.Contains(paths, p.Path) {
			return fmt.Errorf("%w %s: env %q through %q (have %s)", ErrUnknownPlugin, p.File, p.Env, p.Path, pluginRows())
		}
		key := pluginKey(p.Path, p.Env)
		if seen[key] {
			return fmt.Errorf("%w %s: a second %s plugin of %s", ErrUnknownPlugin, p.File, p.Path, p.Env)
		}
		seen[key] = true
	}
	return nil
}

// Skip records a row that could not be measured, and why. Failed is set
// when the row was asked for (an in-process env, a plugin given, an
// agentfile found) and its measurement failed: that is a failed check, not
// a row left out.
type Skip struct {
	Section string `json:"section"`
	Row     string `json:"row"`
	Reason  string `json:"reason"`
	Failed  bool   `json:"failed,omitempty"`
}

// Check is one "done when" criterion: a measured value against its bound.
type Check struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Op is "<=", "<" or ">=": Value Op Bound must hold; or OpRan, for a
	// row that failed to run (never passes; Value and Bound unused).
	Op    string  `json:"op"`
	Bound float64 `json:"bound"`
	Unit  string  `json:"unit,omitempty"`
	Pass  bool    `json:"pass"`
}

// OpRan is the Op of the check that a row asked for was measured.
const OpRan = "ran"

// The bounds of the checks that come from the project's design figures
// (DESIGN.md §7, "Figures we hold ourselves to").
const (
	// MaxWasmCRatio bounds a Wasm env step with a C guest against the
	// same env's in-process step.
	MaxWasmCRatio = 1.2
	// MaxLLMCPUUs bounds the process CPU per LLM call of the openai
	// backend above that of a bare net/http client on the same server, in µs.
	MaxLLMCPUUs = 20
	// MinLLMFractionOfIdeal bounds the openai backend's throughput against
	// the ideal (in flight ÷ the server's latency).
	MinLLMFractionOfIdeal = 0.95
)

func newCheck(name string, value float64, op string, bound float64, unit string) Check {
	c := Check{Name: name, Value: value, Op: op, Bound: bound, Unit: unit}
	switch op {
	case "<=":
		c.Pass = value <= bound
	case "<":
		c.Pass = value < bound
	case ">=":
		c.Pass = value >= bound
	}
	return c
}

// Report is the suite's result, as `troupe bench --json` prints it.
type Report struct {
	Machine  Machine       `json:"machine"`
	Quick    bool          `json:"quick"`
	Sections []string      `json:"sections"`
	Step     []StepRow     `json:"env_step,omitempty"`
	Policy   *PolicyResult `json:"policy,omitempty"`
	Training []TrainRow    `json:"training,omitempty"`
	LLM      []LLMResult   `json:"llm,omitempty"`
	Target   *TargetResult `json:"time_to_target,omitempty"`
	Skipped  []Skip        `json:"skipped,omitempty"`
	Checks   []Check       `json:"checks"`
	WallS    float64       `json:"wall_s"`
}

// Run runs the selected sections and returns the report. Rows that cannot
// be measured here (no plugin given, a plugin that does not load, a missing
// agentfile) are listed in Report.Skipped; the error is kept for bad
// Options, cancellation and failures of the measured code itself.
func Run(ctx context.Context, o Options) (rep Report, err error) {
	start := time.Now()
	rep = Report{Machine: describeMachine(), Quick: o.Quick}
	for _, s := range o.Sections {
		if !slices.Contains(AllSections, s) {
			return rep, fmt.Errorf("%w %q (have %s)", ErrUnknownSection, s, strings.Join(AllSections, ", "))
		}
	}
	for _, s := range AllSections {
		if o.wants(s) {
			rep.Sections = append(rep.Sections, s)
		}
	}
	if err := checkPlugins(o.Plugins); err != nil {
		return rep, err
	}
	o.logf("machine: %s, %d cores, %s, load %v", rep.Machine.CPU, rep.Machine.Cores, rep.Machine.GoVersion, rep.Machine.LoadStart)
	defer func() {
		rep.Machine.LoadEnd = LoadAverage()
		rep.WallS = time.Since(start).Seconds()
		rep.Checks = rep.checks()
	}()

	if o.wants(SectionStep) {
		rows, skips, err := runStep(ctx, &o)
		rep.Step, rep.Skipped = rows, append(rep.Skipped, skips...)
		if err != nil {
			return rep, err
		}
	}
	if o.wants(SectionPolicy) {
		p, err := runPolicy(ctx, &o)
		if err != nil {
			return rep, err
		}
		rep.Policy = &p
	}
	if o.wants(SectionTrain) {
		rows, skips, err := runTrain(ctx, &o)
		rep.Training, rep.Skipped = rows, append(rep.Skipped, skips...)
		if err != nil {
			return rep, err
		}
	}
	if o.wants(SectionLLM) {
		r, err := runLLM(ctx, &o)
		rep.LLM = r
		if err != nil {
			return rep, err
		}
	}
	if o.wants(SectionTarget) {
		path := cmp.Or(o.TargetAgentfile, TargetAgentfile)
		if err := agentfileExists(path, "--target"); err != nil {
			rep.Skipped = append(rep.Skipped, Skip{Section: "time to target", Row: path, Reason: err.Error()})
		} else {
			r, err := runTarget(ctx, &o, path)
			if err != nil {
				return rep, err
			}
			rep.Target = &r
		}
	}
	return rep, nil
}

// agentfileExists returns nil when the agentfile at path exists, else an
// error that says how to name another (flag is troupe bench's flag for it).
func agentfileExists(path, flag string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%v (run from the troupe repository, or pass %s FILE)", err, flag)
	}
	return nil
}

// checks judges the report against issue 7's "done when" figures.
// Failed returns the checks that did not pass.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Pass {
			out = append(out, c)
		}
	}
	return out
}

func (r *Report) checks() []Check {
	var cs []Check
	// A row that was asked for and failed to run fails the suite: a
	// measurement must not quietly drop out of the table.
	for _, s := range r.Skipped {
		if s.Failed {
			cs = append(cs, Check{Name: fmt.Sprintf("%s %s ran (skipped above: it failed)", s.Section, s.Row), Op: OpRan})
		}
	}
	// The bounds are the project's design figures (DESIGN.md §7). The
	// Wasm figure judges the ABI and the host, so it is taken with a C
	// guest; a Go guest adds Go's Wasm code generation (several times
	// slower than native code, 250 ns per allocation), which the table
	// reports without judging.
	for _, row := range r.Step {
		if row.Path == PathWasmC && row.Ratio > 0 {
			cs = append(cs, newCheck(fmt.Sprintf("%s: Wasm step (C guest) ÷ in-process step", row.Env), row.Ratio, "<=", MaxWasmCRatio, "×"))
		}
	}
	for _, l := range r.LLM {
		if l.Arrivals != ArrivalsStaggered {
			continue // the synchronized burst is reported, not judged
		}
		if l.CPUUsPerCall > 0 && l.RawCPUUsPerCall > 0 {
			cs = append(cs, newCheck(fmt.Sprintf("LLM: CPU per call above a bare net/http client, %d in flight", l.InFlight), l.CPUUsPerCall-l.RawCPUUsPerCall, "<=", MaxLLMCPUUs, "µs"))
		}
		cs = append(cs, newCheck(fmt.Sprintf("LLM: throughput ÷ ideal (%d ÷ %.0f ms)", l.InFlight, l.LatencyMs), l.FractionOfIdeal, ">=", MinLLMFractionOfIdeal, ""))
	}
	for _, t := range r.Training {
		if t.Workers == 2 && t.Scaling > 0 {
			cs = append(cs, newCheck(fmt.Sprintf("training %s: 2-worker ÷ 1-worker env steps/s", t.Env), t.Scaling, ">=", 1.6, "×"))
		}
	}
	if t := r.Target; t != nil {
		v := t.TrainWallS
		if !t.Reached {
			v = -1
		}
		c := newCheck(fmt.Sprintf("writing targets (consistency ≥ %.3g, speedup ≥ %.3g) reached by troupe train", t.TargetConsistency, t.TargetSpeedup), v, "<", 300, "s")
		c.Pass = c.Pass && t.Reached
		cs = append(cs, c)
	}
	return cs
}

// gomaxprocs sets GOMAXPROCS to n and returns a func restoring it.
func gomaxprocs(n int) func() {
	old := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(old) }
}
