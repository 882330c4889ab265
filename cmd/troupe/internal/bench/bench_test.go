package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/envs/writing"
	"github.com/troupe-dev/troupe/internal/testenv"
	"github.com/troupe-dev/troupe/plugins/wasm"
)

func TestMeasureGrowsUntilDuration(t *testing.T) {
	calls := 0
	w := func(_ Timer, n int) error {
		calls++
		time.Sleep(time.Duration(n) * 50 * time.Microsecond)
		return nil
	}
	tm, err := Measure(20*time.Millisecond, w)
	if err != nil {
		t.Fatal(err)
	}
	if tm.Elapsed < 20*time.Millisecond {
		t.Errorf("last run lasted %s, want at least 20ms", tm.Elapsed)
	}
	if calls < 2 || tm.N < 2 {
		t.Errorf("%d runs, last with n=%d: Measure did not grow n", calls, tm.N)
	}
	if ns := tm.NsPerOp(); ns < 50e3 {
		t.Errorf("%.0f ns/op, but every op sleeps 50µs", ns)
	}
}

func TestMeasureExcludesStoppedTimeAndAllocations(t *testing.T) {
	var keep [][]byte
	w := func(tm Timer, n int) error {
		for range n {
			tm.StopTimer()
			time.Sleep(time.Millisecond)
			keep = append(keep, make([]byte, 1024)) // not counted
			tm.StartTimer()
		}
		return nil
	}
	tm, err := runOnce(w, 20)
	if err != nil {
		t.Fatal(err)
	}
	if testenv.Timing() && tm.Elapsed > 10*time.Millisecond {
		t.Errorf("timed %s, but all the sleeping (20ms) was with the timer stopped", tm.Elapsed)
	}
	if tm.AllocsPerOp() >= 1 {
		t.Errorf("%.1f allocs/op counted, but every allocation was with the timer stopped", tm.AllocsPerOp())
	}
	_ = keep

	boom := errors.New("boom")
	if _, err := Measure(time.Second, func(Timer, int) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Measure returned %v, want the workload's error", err)
	}
}

func TestFlopsCountsEveryLayer(t *testing.T) {
	c := policy.Config{ObsSize: 3, NumDecisions: 2, NumAgents: 2, Hidden: []int{4}, Shared: true}
	// Layers 5→4 and 4→2 (the input is obs 3 + a 2-agent one-hot).
	fwd, bwd := Flops(c)
	if fwd != 2*(5*4+4*2) {
		t.Errorf("forward flops %v, want %v", fwd, 2*(5*4+4*2))
	}
	if bwd != 2*(5*4+4*2)+2*(4*2) {
		t.Errorf("backward flops %v, want %v", bwd, 2*(5*4+4*2)+2*(4*2))
	}
}

func TestDotWorkloadsAgree(t *testing.T) {
	var got []float64
	for _, acc := range []int{1, 4, 8} {
		if err := DotWorkload(64, acc)(nil, 1); err != nil {
			t.Fatal(err)
		}
		got = append(got, math.Float64frombits(dotSink.Load()))
	}
	for i, v := range got {
		if d := v - got[0]; d > 1e-9 || d < -1e-9 {
			t.Errorf("dot with accumulator variant %d = %v, want %v", i, v, got[0])
		}
	}
}

func TestWritingReplayMatchesAndDetectsDivergence(t *testing.T) {
	env, err := writing.New(WritingStepParams())
	if err != nil {
		t.Fatal(err)
	}
	// One episode of every baseline (the recording cycles through them),
	// each replayed twice: read_deps's used to diverge when the replay
	// stepped without building the prompts the recording had built.
	n := len(env.Spec().Baselines) + 1
	trs, err := RecordWritingTrajectories(n)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, tr := range trs {
		steps += len(tr.Actions)
	}
	if err := ReplayWorkload(env, trs)(&stopwatch{}, 2*steps); err != nil {
		t.Fatalf("replaying the recordings on the same env: %v", err)
	}
	cut := []Trajectory{{Seed: trs[0].Seed, Actions: trs[0].Actions[:len(trs[0].Actions)-1]}}
	if err := ReplayWorkload(env, cut)(&stopwatch{}, len(cut[0].Actions)); err == nil || !strings.Contains(err.Error(), "diverged") {
		t.Errorf("replaying a recording cut short: err = %v, want a divergence", err)
	}
}

func TestLBFStepWorkloadRuns(t *testing.T) {
	env, err := lbf.New(LBFStepParams())
	if err != nil {
		t.Fatal(err)
	}
	w, err := LBFStepWorkload(env)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := runOnce(w, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if tm.N != 10000 || tm.Elapsed <= 0 {
		t.Errorf("timing %+v", tm)
	}
}

func TestChecks(t *testing.T) {
	r := Report{
		// The design figures' edges: 1.2× passes and 1.21× fails; 20 µs of
		// CPU above the bare client passes and 21 fails; 95 % of ideal
		// passes and 94 % fails. Go guests (PathWasm) and the synchronized
		// burst are reported, not judged; CPU not reported (0) is not judged.
		Step: []StepRow{{Env: "lbf", Path: PathInProcess, Ratio: 1}, {Env: "lbf", Path: PathWasmC, Ratio: 1.2}, {Env: "lbf", Path: PathWasm, Ratio: 12},
			{Env: "writing", Path: PathWasmC, Ratio: 1.21}, {Env: "writing", Path: PathWasm, Ratio: 1.2}},
		LLM: []LLMResult{{Arrivals: ArrivalsStaggered, InFlight: 256, LatencyMs: 50, CPUUsPerCall: 120, RawCPUUsPerCall: 100, FractionOfIdeal: 0.95},
			{Arrivals: ArrivalsStaggered, InFlight: 64, LatencyMs: 50, CPUUsPerCall: 121, RawCPUUsPerCall: 100, FractionOfIdeal: 0.94},
			{Arrivals: ArrivalsStaggered, InFlight: 16, LatencyMs: 50, FractionOfIdeal: 0.99},
			{Arrivals: ArrivalsSynchronized, InFlight: 256, LatencyMs: 50, CPUUsPerCall: 500, RawCPUUsPerCall: 100, FractionOfIdeal: 0.5}},
		Training: []TrainRow{{Env: "lbf", Workers: 1}, {Env: "lbf", Workers: 2, Scaling: 1.7}},
		Target:   &TargetResult{TargetConsistency: 0.987, TargetSpeedup: 3, Reached: false, TrainWallS: 10},
		// A row with no plugin given is left out; one that failed to run
		// fails the suite (first among the checks).
		Skipped: []Skip{{Section: "env step", Row: "lbf go-plugin", Reason: "no plugin given"},
			{Section: "env step", Row: "writing in-process", Reason: "replay diverged", Failed: true}},
	}
	want := []bool{false, true, false, true, true, false, false, true, true, false}
	cs := r.checks()
	if len(cs) != len(want) {
		t.Fatalf("%d checks, want %d: %+v", len(cs), len(want), cs)
	}
	for i, c := range cs {
		if c.Pass != want[i] {
			t.Errorf("check %q (value %v %s %v): pass = %v, want %v", c.Name, c.Value, c.Op, c.Bound, c.Pass, want[i])
		}
	}
}

// TestQuickSubset runs a tiny part of the suite end to end: the policy
// section with very short timings and the LLM section with few callers.
func TestQuickSubset(t *testing.T) {
	ctx := context.Background()
	var log bytes.Buffer
	rep, err := Run(ctx, Options{Quick: true, Sections: []string{SectionPolicy}, StepTime: 2 * time.Millisecond, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Policy
	if p == nil || p.PeakGFLOPS <= 0 || len(p.Rows) != 1+2*len(PolicyBatches) {
		t.Fatalf("policy section %+v", p)
	}
	for _, row := range p.Rows {
		if row.DecisionsPerSec <= 0 || row.GFLOPS <= 0 {
			t.Errorf("row %+v has no throughput", row)
		}
		// AllocsPerOp counts the whole process's allocations during the
		// timed calls: with this short StepTime a batch-1024 row times one
		// call, and anything else the test binary runs meanwhile lands in
		// it. That the passes allocate nothing is core/policy's
		// TestPassesDoNotAllocate; here the column must only be there.
		if math.IsNaN(row.AllocsPerOp) || row.AllocsPerOp < 0 {
			t.Errorf("%s batch %d: allocs/op %v", row.Pass, row.Batch, row.AllocsPerOp)
		}
	}
	if !strings.Contains(log.String(), "forward+backward") {
		t.Errorf("progress log misses the policy rows:\n%s", log.String())
	}

	l, err := MeasureLLM(ctx, ArrivalsStaggered, 16, 1, 20*time.Millisecond, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// 16 callers × 100 ms ÷ 20 ms: at most about 80 calls end in the
	// window, each after the server's 20 ms; how many do depends on the
	// machine's load.
	if l.Calls < 1 || l.Calls > 90 || l.ChatMs < 20 || l.RawMs < 20 || l.FractionOfIdeal <= 0 || l.FractionOfIdeal > 1.1 {
		t.Errorf("llm result %+v", l)
	}
	if testenv.Timing() && (l.Calls < 40 || l.FractionOfIdeal <= 0.4) {
		t.Errorf("llm result %+v: fewer than half the ideal calls", l)
	}
	if _, err := MeasureLLM(ctx, "poisson", 16, 1, 20*time.Millisecond, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "poisson") {
		t.Errorf("unknown arrivals: err = %v", err)
	}
	rep.LLM = []LLMResult{l}
	rep.Checks = rep.checks()
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"policy: MLP", "peak (best dot loop)", "LLM orchestration", "fraction of ideal", "checks"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table misses %q:\n%s", want, table.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Policy == nil || len(back.Policy.Rows) != len(p.Rows) {
		t.Errorf("JSON round trip: %v, %+v", err, back.Policy)
	}
}

func TestRunRejectsUnknownSectionAndPlugin(t *testing.T) {
	_, err := Run(context.Background(), Options{Sections: []string{"warp"}})
	if !errors.Is(err, ErrUnknownSection) || !strings.Contains(err.Error(), "warp") {
		t.Errorf("err = %v, want ErrUnknownSection naming the section", err)
	}
	for _, p := range [][]Plugin{
		{{Env: "writing", Path: PathWasmC, File: "w.wasm"}}, // writing has no C port
		{{Env: "matrix", Path: PathWasm, File: "m.wasm"}},
		{{Env: "lbf", Path: PathInProcess, File: "l"}},
		{{Env: "lbf", Path: PathGRPC, File: "a"}, {Env: "lbf", Path: PathGRPC, File: "b"}},
	} {
		_, err := Run(context.Background(), Options{Sections: []string{SectionPolicy}, Plugins: p})
		if !errors.Is(err, ErrUnknownPlugin) || !strings.Contains(err.Error(), p[len(p)-1].File) {
			t.Errorf("plugins %+v: err = %v, want ErrUnknownPlugin naming the file", p, err)
		}
	}
}

// TestStepSectionMeasuresThePluginsGiven runs the step section with one
// plugin (LBF's Go guest): it gets a row, and every other plugin path is
// skipped with the flag that would measure it.
func TestStepSectionMeasuresThePluginsGiven(t *testing.T) {
	file := pluginFile(t, "wasm/lbf")
	rep, err := Run(context.Background(), Options{Quick: true, Sections: []string{SectionStep}, StepTime: time.Millisecond,
		Plugins: []Plugin{{Env: lbf.Name, Path: PathWasm, File: file}}})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range rep.Step {
		rows = append(rows, r.Env+" "+r.Path)
		if r.NsPerStep <= 0 || r.Ratio <= 0 {
			t.Errorf("row %+v has no timing", r)
		}
	}
	if want := "lbf in-process,lbf wasm,writing in-process"; strings.Join(rows, ",") != want {
		t.Errorf("rows %v, want %s", rows, want)
	}
	want := map[string]string{"lbf wasm-c": "--wasm-c lbf=FILE", "lbf go-plugin": "--grpc lbf=FILE", "writing wasm": "--wasm writing=FILE", "writing go-plugin": "--grpc writing=FILE"}
	for _, s := range rep.Skipped {
		if flag, ok := want[s.Row]; !ok || !strings.Contains(s.Reason, flag) {
			t.Errorf("skipped %q: %s; want the reason to name %q", s.Row, s.Reason, flag)
		}
		delete(want, s.Row)
	}
	if len(want) > 0 {
		t.Errorf("not skipped: %v", want)
	}
}

func TestMissingAgentfilesAreSkipped(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "agentfile.toml")
	rep, err := Run(context.Background(), Options{Sections: []string{SectionTrain, SectionTarget}, TrainAgentfiles: []string{missing}, TargetAgentfile: missing})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Training) != 0 || rep.Target != nil || len(rep.Skipped) != 2 {
		t.Fatalf("report %+v, want both sections skipped", rep)
	}
	for i, flag := range []string{"--train", "--target"} {
		if s := rep.Skipped[i]; s.Row != missing || !strings.Contains(s.Reason, "no such file") || !strings.Contains(s.Reason, flag) {
			t.Errorf("skip %+v: want the file, the reason and %s", s, flag)
		}
	}
}

// --- Go benchmarks: the same workloads, for go test -bench and benchstat.

func benchWorkload(b *testing.B, w Workload, err error) {
	if err != nil {
		b.Fatal(err)
	}
	if err := w(b, 1); err != nil { // warm up the workload's buffers
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if err := w(b, b.N); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEnvStep is one joint step of LBF and writing in-process,
// through Wasm (Go guests, and LBF's C port) and through go-plugin
// (plugins are built on first use, as scripts/bench.sh builds them).
//
//	go test -run '^$' -bench EnvStep -count 6 ./cmd/troupe/internal/bench/ | benchstat -
func BenchmarkEnvStep(b *testing.B) {
	trs, err := RecordWritingTrajectories(24)
	if err != nil {
		b.Fatal(err)
	}
	l := wasm.NewLoader(wasm.Options{Logger: quietLogger()})
	defer l.Close(context.Background())
	for _, name := range stepEnvs {
		for _, path := range stepPaths[name] {
			b.Run(name+"/"+path, func(b *testing.B) {
				file := ""
				if path != PathInProcess {
					file = pluginFile(b, pluginKey(path, name))
				}
				env, closeEnv, err := openStepEnv(context.Background(), l, name, path, file)
				if err != nil {
					b.Fatal(err)
				}
				defer closeEnv()
				w, err := stepWorkload(name, env, trs)
				benchWorkload(b, w, err)
			})
		}
	}
}

// BenchmarkPolicy is the default project's MLP: the rollout path
// (logprobs), batched forward and forward+backward; compare GFLOP/s with
// BenchmarkDot.
func BenchmarkPolicy(b *testing.B) {
	cfg, err := DefaultPolicyConfig()
	if err != nil {
		b.Fatal(err)
	}
	p, err := policy.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	fwd, bwd := Flops(cfg)
	report := func(b *testing.B, m int, flops float64) {
		s := b.Elapsed().Seconds()
		b.ReportMetric(float64(b.N*m)/s, "decisions/s")
		b.ReportMetric(float64(b.N*m)*flops/s/1e9, "GFLOP/s")
	}
	b.Run("logprobs", func(b *testing.B) {
		benchWorkload(b, LogProbsWorkload(p), nil)
		report(b, 1, fwd)
	})
	for _, m := range PolicyBatches {
		b.Run("forward/batch="+itoa(m), func(b *testing.B) {
			benchWorkload(b, ForwardWorkload(p, m), nil)
			report(b, m, fwd)
		})
	}
	for _, m := range PolicyBatches {
		b.Run("forward+backward/batch="+itoa(m), func(b *testing.B) {
			benchWorkload(b, ForwardBackwardWorkload(p, m), nil)
			report(b, m, fwd+bwd)
		})
	}
}

// BenchmarkDot is the plain Go dot-product loop (length 256) with 1, 4
// and 8 accumulators: the single-core reference for BenchmarkPolicy.
func BenchmarkDot(b *testing.B) {
	for _, acc := range []int{1, 4, 8} {
		b.Run("acc="+itoa(acc), func(b *testing.B) {
			benchWorkload(b, DotWorkload(256, acc), nil)
			b.ReportMetric(float64(b.N)*2*256/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkTrainIteration is one full GRPO iteration on the LBF example
// and on the root agentfile (writing, sim), with rollout.workers =
// GOMAXPROCS: run it with -cpu 1,2 for the scaling.
//
//	go test -run '^$' -bench TrainIteration -cpu 1,2 -count 3 ./cmd/troupe/internal/bench/
func BenchmarkTrainIteration(b *testing.B) {
	for _, e := range TrainEnvs {
		b.Run(e.Env, func(b *testing.B) {
			rows, err := MeasureScaling(context.Background(), filepath.Join(moduleRoot, e.Agentfile), []int{runtime.GOMAXPROCS(0)}, b.N)
			if err != nil {
				b.Fatal(err)
			}
			row := rows[0]
			// MeasureScaling timed the iterations itself (after a warm-up).
			b.ReportMetric(row.WallS/float64(b.N)*1e9, "ns/op")
			b.ReportMetric(row.EnvStepsPerSec, "env-steps/s")
			b.ReportMetric(row.DecisionsPerSec, "decisions/s")
			b.ReportMetric(row.UpdateS, "update-s")
		})
	}
}

// BenchmarkLLMInFlight256 is the openai backend with 256 calls in flight
// (staggered arrivals) against an in-process server with 50 ms latency,
// measured over 2 s windows (see MeasureLLM).
func BenchmarkLLMInFlight256(b *testing.B) {
	r, err := MeasureLLM(context.Background(), ArrivalsStaggered, 256, b.N, 50*time.Millisecond, 2*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.OverheadUs, "overhead-us/call")
	b.ReportMetric(r.ChatMs, "chat-ms/call")
	b.ReportMetric(r.CallsPerSec, "calls/s")
	b.ReportMetric(100*r.FractionOfIdeal, "pct-of-ideal")
	b.ReportMetric(r.CPUUsPerCall, "cpu-us/call")
	b.ReportMetric(r.AllocsPerCall, "framework-allocs/call")
}

func itoa(n int) string { return strconv.Itoa(n) }

const climbingAgentfile = `[project]
name = "climb"
seed = 1
[env]
source = "builtin:matrix"
[env.params]
game = "climbing"
[[rewards]]
source = "builtin:return"
[reward.weights]
return = 1.0
[train]
iterations = 50
tasks_per_iteration = 8
group_size = 4
`

func TestMeasureScalingRunsTheSameIterations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentfile.toml")
	if err := os.WriteFile(path, []byte(climbingAgentfile), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := MeasureScaling(context.Background(), path, []int{1, 2}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Workers != 1 || rows[1].Workers != 2 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Iterations != 3 || r.Episodes != 3*8*4 || r.EnvSteps == 0 || r.WallS <= 0 || r.EnvStepsPerSec <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	if rows[0].EnvSteps != rows[1].EnvSteps || rows[0].RewardMean != rows[1].RewardMean {
		t.Errorf("1 and 2 workers did different work: steps %d vs %d, reward %v vs %v", rows[0].EnvSteps, rows[1].EnvSteps, rows[0].RewardMean, rows[1].RewardMean)
	}
	if rows[0].Scaling != 0 || rows[1].Scaling <= 0 {
		t.Errorf("scaling %v, %v; want 0 for the 1-worker row and a ratio for the other", rows[0].Scaling, rows[1].Scaling)
	}
	if runtime.GOMAXPROCS(0) != runtime.NumCPU() && os.Getenv("GOMAXPROCS") == "" {
		t.Errorf("GOMAXPROCS left at %d", runtime.GOMAXPROCS(0))
	}
}
