package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/troupe-dev/troupe/cmd/troupe/internal/report"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
	"github.com/troupe-dev/troupe/internal/atomicfile"
)

func init() {
	commands["train"] = command{"train the team's policy with GRPO and evaluate it", runTrain}
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("train", "train [-f agentfile.toml] [--out DIR] [--set key=value]... [--resume DIR] [--no-eval]", stderr)
	var pf projectFlags
	pf.register(fs)
	out := fs.String("out", "", "run directory (default runs/NAME-TIME)")
	resume := fs.String("resume", "", "continue the run in DIR from its checkpoint (uses DIR/config.toml unless -f is given)")
	noEval := fs.Bool("no-eval", false, "skip the final evaluation")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	fileGiven := false
	fs.Visit(func(f *flag.Flag) { fileGiven = fileGiven || f.Name == "f" })
	if *resume != "" {
		*out = *resume
		if !fileGiven {
			pf.file = filepath.Join(*resume, "config.toml")
		}
	}
	cfg, ok := pf.load(stderr)
	if !ok {
		return exitUsage
	}
	cfg = cfg.Resolved()
	if *out == "" {
		*out = filepath.Join("runs", fmt.Sprintf("%s-%s", sanitize(cfg.Project.Name), time.Now().Format("20060102-150405")))
	}
	built, ok := build(ctx, cfg, stderr)
	if !ok {
		return exitUsage
	}
	defer built.Close()
	s := built.Setup
	tr, err := trainer.New(s, built.Train)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitUsage
	}
	defer tr.Close()
	conf, err := cfg.Encode()
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitRuntime
	}
	spec := tr.Spec()
	fmt.Fprintf(stderr, "troupe: training %q on env %s (%d agents, %d decisions), %d iterations × %d tasks × %d rollouts, %d workers, LLM %s\n",
		cfg.Project.Name, spec.Name, spec.NumAgents(), len(spec.Decisions), built.Train.Iterations, built.Train.TasksPerIteration, built.Train.GroupSize, s.Rollout.NumWorkers(), describeBackend(tr.Backend()))
	fmt.Fprintf(stderr, "troupe: run directory %s\n", *out)
	prog := newProgress(stderr, built.Train.Iterations)
	err = tr.Run(ctx, trainer.RunOptions{Out: *out, Resume: *resume != "", Config: conf, Progress: prog.update})
	prog.done()
	if errors.Is(err, trainer.ErrInterrupted) {
		fmt.Fprintf(stderr, "troupe: interrupted after iteration %d; the checkpoint is saved. Continue with:\n  troupe train --resume %s\n", tr.Iteration(), *out)
		return exitRuntime
	}
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitRuntime
	}
	fmt.Fprintf(stderr, "troupe: trained %d iterations in %s; policy at %s\n", tr.Iteration(), time.Since(prog.start).Round(time.Second), filepath.Join(*out, "policy.safetensors"))
	// The evaluation opens workers of its own: end the trainer's first, so
	// that W workers (W plugin processes) run at a time, not 2W.
	tr.Close()
	var rep *rollout.EvalReport
	if !*noEval {
		fmt.Fprintf(stderr, "troupe: evaluating on %d held-out seeds …\n", built.Eval.Episodes)
		r, err := rollout.Evaluate(ctx, s, tr.Policy(), built.Eval)
		if err != nil {
			fmt.Fprintf(stderr, "troupe: eval: %v\n", err)
			return exitRuntime
		}
		rep = &r
		if err := writeJSON(filepath.Join(*out, "eval.json"), r); err != nil {
			fmt.Fprintf(stderr, "troupe: %v\n", err)
			return exitRuntime
		}
		r.WriteTable(stdout)
	}
	if err := report.Write(*out, cfg.Project.Name, rep); err != nil {
		fmt.Fprintf(stderr, "troupe: report: %v\n", err)
		return exitRuntime
	}
	fmt.Fprintf(stderr, "troupe: wrote %s and %s\n", filepath.Join(*out, "report.md"), filepath.Join(*out, "curves.png"))
	return exitOK
}

// describeBackend labels a backend name for people: the simulated LLM is
// always said to be one.
func describeBackend(name string) string {
	if strings.Contains(name, "sim") {
		return name + " (simulated LLM: results are simulations)"
	}
	return name
}

func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, s)
	if s == "" {
		return "run"
	}
	return s
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}

// progress prints one status per iteration: a live line on a terminal,
// plain lines otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	start time.Time
	first int
}

func newProgress(w io.Writer, total int) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &progress{w: w, tty: tty, total: total, start: time.Now(), first: -1}
}

func (p *progress) update(st trainer.IterationStats) {
	if p.first < 0 {
		p.first = st.Iteration - 1
	}
	done := st.Iteration - p.first
	eta := time.Duration(float64(time.Since(p.start)) / float64(done) * float64(p.total-st.Iteration)).Round(time.Second)
	var comps []string
	for _, k := range slices.Sorted(maps.Keys(st.Components)) {
		comps = append(comps, fmt.Sprintf("%s %.3f", k, st.Components[k]))
	}
	line := fmt.Sprintf("iter %d/%d  reward %.4f ±%.3f  %s  kl %.4f  steps/s %.0f  failed %d  ETA %s",
		st.Iteration, p.total, st.RewardMean, st.RewardStd, strings.Join(comps, "  "), st.KL, st.StepsPerSec, st.FailedEpisodes, eta)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progress) done() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
