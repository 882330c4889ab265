package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"runtime/metrics"
	"sort"
	"time"

	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/grpo"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
)

// TrainRow is the training throughput of one env with one worker count.
type TrainRow struct {
	Env       string `json:"env"`
	Agentfile string `json:"agentfile"` // as given
	// Workers is rollout.workers; GOMAXPROCS was set to the same number, so
	// "1 worker" is one core for everything (rollouts and the update).
	Workers    int     `json:"workers"`
	Iterations int     `json:"iterations"` // timed iterations (after one warm-up)
	EnvSteps   int64   `json:"env_steps"`
	Decisions  int     `json:"decisions"` // trained decisions (more than one legal choice)
	Episodes   int     `json:"episodes"`
	WallS      float64 `json:"wall_s"`
	// EnvStepsPerSec and DecisionsPerSec are over whole iterations
	// (rollouts, scoring, advantages and the GRPO update).
	EnvStepsPerSec  float64 `json:"env_steps_per_sec"`
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	// UpdateS is the wall time of one GRPO update, re-measured on the last
	// iteration's batch with the same GOMAXPROCS; RolloutS is the rest of
	// an iteration's mean wall time (rollouts, scoring, advantages).
	UpdateS  float64 `json:"update_s"`
	RolloutS float64 `json:"rollout_s"`
	// CPUS is the process's CPU time (user + system) over the timed
	// iterations; CPUS ÷ WallS is the cores kept busy (at most Workers;
	// less when waiting on each other or when other processes hold the
	// cores).
	CPUS float64 `json:"cpu_s"`
	// PUtilization is the fraction of GOMAXPROCS × wall time in which the
	// Go scheduler had a goroutine to run (runtime/metrics
	// /cpu/classes/idle): below 1 when workers wait for each other (a
	// serial phase, the last episodes of an iteration), whatever other
	// processes do. GCFraction is the share of it spent in the collector.
	PUtilization float64 `json:"p_utilization"`
	GCFraction   float64 `json:"gc_fraction"`
	// Scaling (rows with more than one worker) is the median over the
	// timed iterations of (1-worker time ÷ this row's time) for the same
	// iteration: both trainers run the same iterations, interleaved, so
	// each pair saw about the same machine load.
	Scaling float64 `json:"scaling,omitempty"`
	// RewardMean of the last timed iteration: identical for every worker
	// count (training is deterministic), a check that both did the same
	// work.
	RewardMean float64 `json:"reward_mean"`
	Load1      float64 `json:"load1"`

	iterS []float64 // wall time of each timed iteration
}

// TrainEnvs are the training section's default agentfiles, relative to the
// repository root.
var TrainEnvs = []struct{ Env, Agentfile string }{
	{"lbf", "examples/lbf/agentfile.toml"},
	{"writing", "agentfile.toml"},
}

// trainerRun is one trainer being measured.
type trainerRun struct {
	workers int
	built   *agentfile.Built
	tr      *trainer.Trainer
	opt     grpo.Config
	row     TrainRow
	last    []rollout.EpisodeResult
}

func openTrainer(ctx context.Context, path string, workers int, overrides []string) (*trainerRun, error) {
	cfg, err := agentfile.Load(path, append([]string{fmt.Sprintf("rollout.workers=%d", workers)}, overrides...)...)
	if err != nil {
		return nil, err
	}
	built, err := cfg.Build(ctx)
	if err != nil {
		return nil, err
	}
	s := built.Setup
	s.Logger = quietLogger()
	tr, err := trainer.New(s, built.Train)
	if err != nil {
		built.Close()
		return nil, err
	}
	return &trainerRun{workers: workers, built: built, tr: tr, opt: built.Train.Config,
		row: TrainRow{Env: tr.Spec().Name, Workers: workers, Load1: load1()}}, nil
}

func (r *trainerRun) close() {
	r.tr.Close()
	r.built.Close()
}

// step runs one iteration with GOMAXPROCS = workers; timed iterations are
// added to the row.
func (r *trainerRun) step(ctx context.Context, timed bool) error {
	defer gomaxprocs(r.workers)()
	sched0 := readSchedCPU()
	cpu0, _ := cpuTime()
	began := time.Now()
	st, results, err := r.tr.Step(ctx)
	wall := time.Since(began).Seconds()
	cpu1, _ := cpuTime()
	if err != nil || !timed {
		return err
	}
	d := readSchedCPU().sub(sched0)
	r.row.Iterations++
	r.row.iterS = append(r.row.iterS, wall)
	r.row.WallS += wall
	r.row.CPUS += (cpu1 - cpu0).Seconds()
	r.row.PUtilization += d.total - d.idle // busy; normalized in finish
	r.row.GCFraction += d.gc
	r.row.EnvSteps += iterSteps(results)
	r.row.Decisions += st.Decisions
	r.row.Episodes += st.Episodes
	r.row.RewardMean = st.RewardMean
	r.last = results
	return nil
}

// finish turns the sums into rates and times the update.
func (r *trainerRun) finish() error {
	row := &r.row
	busy, gc := row.PUtilization, row.GCFraction
	row.PUtilization, row.GCFraction = 0, 0
	if total := row.WallS * float64(r.workers); total > 0 {
		row.PUtilization = min(1, busy/total)
	}
	if busy > 0 {
		row.GCFraction = gc / busy
	}
	if row.WallS > 0 {
		row.EnvStepsPerSec = float64(row.EnvSteps) / row.WallS
		row.DecisionsPerSec = float64(row.Decisions) / row.WallS
	}
	defer gomaxprocs(r.workers)()
	upd, err := timeUpdate(r.tr, r.opt, r.last)
	if err != nil {
		return err
	}
	row.UpdateS = upd
	if row.Iterations > 0 {
		row.RolloutS = row.WallS/float64(row.Iterations) - upd
	}
	return nil
}

// MeasureScaling loads the agentfile once per worker count (rollout.workers
// = w, GOMAXPROCS = w while that trainer runs), runs one untimed warm-up
// iteration on each, then iters timed iterations, interleaved: iteration
// k of every trainer, then iteration k+1. Training is deterministic, so
// iteration k is the same work for every worker count. Rows come in the
// order of workers; the first must be 1.
func MeasureScaling(ctx context.Context, path string, workers []int, iters int, overrides ...string) ([]TrainRow, error) {
	runs := make([]*trainerRun, 0, len(workers))
	defer func() {
		for _, r := range runs {
			r.close()
		}
	}()
	for _, w := range workers {
		r, err := openTrainer(ctx, path, w, overrides)
		if err != nil {
			return nil, fmt.Errorf("workers=%d: %w", w, err)
		}
		runs = append(runs, r)
		if err := r.step(ctx, false); err != nil {
			return nil, fmt.Errorf("workers=%d: warm-up iteration: %w", w, err)
		}
	}
	for range iters {
		for _, r := range runs {
			if err := r.step(ctx, true); err != nil {
				return nil, fmt.Errorf("workers=%d: %w", r.workers, err)
			}
		}
	}
	rows := make([]TrainRow, len(runs))
	for i, r := range runs {
		if err := r.finish(); err != nil {
			return nil, fmt.Errorf("workers=%d: update: %w", r.workers, err)
		}
		if i > 0 && runs[0].workers == 1 {
			ratios := make([]float64, len(r.row.iterS))
			for k, t := range r.row.iterS {
				ratios[k] = runs[0].row.iterS[k] / t
			}
			sort.Float64s(ratios)
			r.row.Scaling = ratios[len(ratios)/2]
			if len(ratios)%2 == 0 {
				r.row.Scaling = (ratios[len(ratios)/2-1] + ratios[len(ratios)/2]) / 2
			}
		}
		rows[i] = r.row
	}
	return rows, nil
}

// schedCPU is the Go runtime's estimate of CPU time by class (seconds of
// GOMAXPROCS × wall time).
type schedCPU struct{ total, idle, gc float64 }

// readSchedCPU forces a collection first: the runtime updates these
// metrics only when a GC cycle completes.
func readSchedCPU() schedCPU {
	goruntime.GC()
	ms := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(ms)
	v := func(i int) float64 {
		if ms[i].Value.Kind() == metrics.KindFloat64 {
			return ms[i].Value.Float64()
		}
		return 0
	}
	return schedCPU{total: v(0), idle: v(1), gc: v(2)}
}

func (a schedCPU) sub(b schedCPU) schedCPU {
	return schedCPU{total: a.total - b.total, idle: a.idle - b.idle, gc: a.gc - b.gc}
}

// iterSteps counts the env steps of an iteration's non-failed episodes.
func iterSteps(results []rollout.EpisodeResult) int64 {
	var n int64
	for _, r := range results {
		if !r.Failed {
			n += int64(r.Episode.Steps)
		}
	}
	return n
}

// timeUpdate times one GRPO update on the decisions of results (with their
// advantages) on a copy of the trainer's policy.
func timeUpdate(tr *trainer.Trainer, cfg grpo.Config, results []rollout.EpisodeResult) (float64, error) {
	var batch []grpo.Decision
	for _, r := range results {
		if r.Failed {
			continue
		}
		for _, d := range r.Decisions {
			batch = append(batch, grpo.Decision{Agent: d.Agent, Obs: d.Features, Mask: d.Mask, Action: d.Action, LogpOld: d.Logp, Advantage: r.Advantages[d.Agent]})
		}
	}
	if len(batch) == 0 {
		return 0, nil
	}
	opt, err := grpo.NewOptimizer(tr.Policy().Clone(), cfg)
	if err != nil {
		return 0, err
	}
	began := time.Now()
	if _, err := opt.Update(batch, rand.New(rand.NewPCG(1, 2))); err != nil {
		return 0, err
	}
	return time.Since(began).Seconds(), nil
}

func runTrain(ctx context.Context, o *Options) ([]TrainRow, []Skip, error) {
	var rows []TrainRow
	var skips []Skip
	iters := o.pick(2, 6)
	paths := o.TrainAgentfiles
	if len(paths) == 0 {
		for _, e := range TrainEnvs {
			paths = append(paths, e.Agentfile)
		}
	}
	for _, path := range paths {
		if err := ctx.Err(); err != nil {
			return rows, skips, err
		}
		if err := agentfileExists(path, "--train"); err != nil {
			skips = append(skips, Skip{Section: "training", Row: path, Reason: err.Error()})
			continue
		}
		var over []string
		if o.Quick {
			// A smaller iteration keeps --quick quick; the rates stay
			// comparable.
			over = []string{"train.tasks_per_iteration=4"}
		}
		rs, err := MeasureScaling(ctx, path, []int{1, 2}, iters, over...)
		if err != nil {
			if ctx.Err() != nil {
				return rows, skips, ctx.Err()
			}
			skips = append(skips, Skip{Section: "training", Row: path, Reason: err.Error(), Failed: true})
			continue
		}
		for _, row := range rs {
			row.Agentfile = path
			o.logf("training %-8s workers=%d %9.0f env steps/s %9.0f decisions/s  iteration %.2fs (update %.2fs)  cpu/wall %.2f  P busy %.0f%% (GC %.0f%%)  scaling ×%.2f  load %.1f",
				row.Env, row.Workers, row.EnvStepsPerSec, row.DecisionsPerSec, row.WallS/float64(row.Iterations), row.UpdateS,
				row.CPUS/row.WallS, 100*row.PUtilization, 100*row.GCFraction, row.Scaling, row.Load1)
			rows = append(rows, row)
		}
	}
	return rows, skips, nil
}
