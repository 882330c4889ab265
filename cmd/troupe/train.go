package main

import (
	"cmp"
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
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/troupe-dev/troupe/cmd/troupe/internal/report"
	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/telemetry"
	"github.com/troupe-dev/troupe/core/trainer"
	"github.com/troupe-dev/troupe/internal/atomicfile"
)

func init() {
	commands["train"] = command{"train the team's policy with GRPO and evaluate it", runTrain}
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("train", "train [-f agentfile.toml] [--out DIR [--force]] [--set key=value]... [--resume DIR [--accept-changes]] [--no-eval] [--nats URL]", stdout, stderr)
	var pf projectFlags
	pf.register(fs)
	out := fs.String("out", "", "run directory: new or empty (default runs/NAME-TIME, a new directory)")
	force := fs.Bool("force", false, "with --out: if DIR holds an earlier run, move it whole to DIR.replaced-TIME and start an empty DIR (nothing is deleted)")
	resume := fs.String("resume", "", "continue the run in DIR from its checkpoint with its configuration (DIR/config.toml, or the latest DIR/config.after-N.toml) unless -f is given")
	accept := fs.Bool("accept-changes", false, "with --resume: accept settings that differ from the run's; they are recorded in DIR/"+trainer.ChangesFile+" and DIR/config.after-N.toml")
	noEval := fs.Bool("no-eval", false, "skip the final evaluation")
	nats := fs.String("nats", "", "play the episodes on troupe worker processes through the NATS server at `URL` (as --set cluster.nats=URL)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if *nats != "" {
		pf.sets = append(pf.sets, "cluster.nats="+strconv.Quote(*nats))
	}
	switch {
	case *resume != "" && *force:
		fmt.Fprintln(stderr, "troupe train: --force starts a new run; it cannot be used with --resume")
		return exitUsage
	case *resume != "" && *out != "" && filepath.Clean(*out) != filepath.Clean(*resume):
		fmt.Fprintln(stderr, "troupe train: --resume DIR continues the run in DIR; do not give another --out")
		return exitUsage
	case *force && *out == "":
		fmt.Fprintln(stderr, "troupe train: --force needs --out DIR (default directories are always new)")
		return exitUsage
	case *accept && *resume == "":
		fmt.Fprintln(stderr, "troupe train: --accept-changes needs --resume DIR")
		return exitUsage
	}
	if *resume != "" {
		*out = *resume
		if noRunDir(stderr, "troupe train: --resume "+*resume, *resume) {
			return exitUsage
		}
		if !given["f"] {
			pf.file = trainer.CurrentConfig(*resume)
		}
	}
	cfg, ok := pf.load(stderr)
	if !ok {
		return exitUsage
	}
	cfg = cfg.Resolved()
	rd, ok := openRunDir(cfg.Project.Name, *out, *resume != "", *force, stderr)
	if !ok {
		return exitUsage
	}
	*out = rd.Path
	fresh := *resume == ""
	// A directory created for a run that could not start is removed again.
	started := false
	defer func() {
		rd.Close()
		if rd.Created && !started {
			os.Remove(filepath.Join(rd.Path, trainer.LockFile))
			os.Remove(filepath.Join(rd.Path, telemetryFile))
			os.Remove(rd.Path) // only if empty
		}
	}()
	var changes []trainer.ConfigChange
	if !fresh {
		if changes, ok = resumeChanges(cfg, *resume, *accept, stderr); !ok {
			return exitUsage
		}
	}
	// The progress line also says what an LLM call waits for.
	prog := newProgress(stderr, cfg.Train.Iterations)
	watchRetries(&cfg, prog)
	closeTelemetry, ok := telemetryToRunDir(&cfg, rd.Path, stderr)
	if !ok {
		return exitRuntime
	}
	defer closeTelemetry() // after built.Close, which flushes into it
	built, ok := build(ctx, cfg, stderr)
	if !ok {
		return exitUsage
	}
	defer warnDroppedSpans(built, stderr) // after Close, which flushes
	defer built.Close()
	s := built.Setup
	conf, err := cfg.Encode()
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitRuntime
	}
	c, closeCluster, err := clusterClient(ctx, cfg, built, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitRuntime
	}
	defer closeCluster()
	tr, err := newTrainer(built, c)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitUsage
	}
	defer tr.Close()
	spec := tr.Spec()
	players := fmt.Sprintf("%d workers", s.Rollout.NumWorkers())
	if c != nil {
		players = "on the cluster at " + built.Cluster.NATS
	}
	fmt.Fprintf(stderr, "troupe: training %q on env %s (%d agents, %d decisions), %d iterations × %d tasks × %d rollouts, %s, LLM %s\n",
		cfg.Project.Name, spec.Name, spec.NumAgents(), len(spec.Decisions), built.Train.Iterations, built.Train.TasksPerIteration, built.Train.GroupSize, players, describeBackend(tr.Backend()))
	if built.Cluster.Enabled() {
		fmt.Fprintf(stderr, "troupe: episodes played by the workers of %s (start them with: troupe worker --nats URL)\n", built.Cluster.NATS)
	}
	fmt.Fprintf(stderr, "troupe: run directory %s\n", *out)
	if rd.MovedAside != "" {
		fmt.Fprintf(stderr, "troupe: --force: moved the earlier content of %s to %s\n", *out, rd.MovedAside)
	}
	prog.start = time.Now()
	started = true
	err = tr.Run(ctx, trainer.RunOptions{Out: *out, Resume: !fresh, Config: conf, Changes: changes, Progress: prog.update})
	prog.done()
	if errors.Is(err, trainer.ErrInterrupted) {
		if err != trainer.ErrInterrupted { // joined with the checkpoint's error
			fmt.Fprintf(stderr, "troupe: interrupted after iteration %d, and the checkpoint could not be saved: %v\n", tr.Iteration(), err)
			return exitRuntime
		}
		what := fmt.Sprintf("after iteration %d", tr.Iteration())
		if tr.Iteration() == 0 {
			what = "before the first iteration ended (the checkpoint holds the initial policy)"
		}
		fmt.Fprintf(stderr, "troupe: interrupted %s; the checkpoint is saved. Continue with:\n  troupe train --resume %s\n", what, *out)
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
	code := exitOK
	evalNote := ""
	if !*noEval {
		fmt.Fprintf(stderr, "troupe: evaluating on %d held-out seeds …\n", built.Eval.Episodes)
		e := built.Eval
		ectx, progress := prog.evalProgress(ctx, e.Episodes)
		e.Progress = progress
		r, err := evaluate(ectx, s, c, tr.Policy(), e)
		prog.done() // a waiting status of the evaluation's LLM calls
		switch {
		case err != nil && ctx.Err() != nil:
			// Training finished and its policy is saved: the report says
			// so, and how to run the evaluation.
			evalCmd := fmt.Sprintf("troupe eval -f %s --policy %s", trainer.CurrentConfig(*out), filepath.Join(*out, "policy.safetensors"))
			evalNote = "The final evaluation was interrupted; training finished and the policy is saved. Evaluate it with:\n\n    " + evalCmd + "\n"
			fmt.Fprintf(stderr, "troupe: evaluation interrupted; the policy is saved at %s. Evaluate it with:\n  %s\n", filepath.Join(*out, "policy.safetensors"), evalCmd)
			code = exitRuntime
		case err != nil:
			fmt.Fprintf(stderr, "troupe: eval: %v\n", err)
			return exitRuntime
		default:
			rep = &r
			if err := writeJSON(filepath.Join(*out, "eval.json"), r); err != nil {
				fmt.Fprintf(stderr, "troupe: %v\n", err)
				return exitRuntime
			}
			r.WriteTable(stdout)
		}
	}
	if err := writeReport(*out, cfg.Project.Name, rep, evalNote); err != nil {
		fmt.Fprintf(stderr, "troupe: report: %v\n", err)
		return exitRuntime
	}
	fmt.Fprintf(stderr, "troupe: wrote %s and %s\n", filepath.Join(*out, "report.md"), filepath.Join(*out, "curves.png"))
	return code
}

// openRunDir takes the run directory: dir, or a new runs/NAME-TIME when
// dir is "". Errors are printed; ok false means exit 2.
func openRunDir(project, dir string, resume, force bool, stderr io.Writer) (*trainer.RunDir, bool) {
	mode := trainer.FreshRun
	switch {
	case resume:
		mode = trainer.ResumeRun
	case force:
		mode = trainer.ForceFreshRun
	}
	created := false
	if dir == "" {
		d, err := trainer.MakeUniqueDir(filepath.Join("runs", sanitize(project)), time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "troupe: %v\n", err)
			return nil, false
		}
		dir, created = d, true
	}
	rd, err := trainer.OpenRunDir(dir, mode)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return nil, false
	}
	rd.Created = rd.Created || created
	return rd, true
}

// resumeChanges compares cfg with the configuration the run in dir uses
// (trainer.CurrentConfig). Changes other than resumeFreeKeys need accept;
// ok false means exit 2 (printed).
func resumeChanges(cfg agentfile.Config, dir string, accept bool, stderr io.Writer) ([]trainer.ConfigChange, bool) {
	path := trainer.CurrentConfig(dir)
	// Moved keys were warned about when cfg was loaded (if it is this file).
	run, err := agentfile.LoadWithWarnings(path, func(string) {})
	if err != nil {
		fmt.Fprintf(stderr, "troupe: --resume: %v\n", err)
		return nil, false
	}
	changes, err := configChanges(run, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: --resume: comparing with %s: %v\n", path, err)
		return nil, false
	}
	var refused []trainer.ConfigChange
	for _, c := range changes {
		if !resumeFreeKeys[c.Key] {
			refused = append(refused, c)
		}
	}
	if len(refused) > 0 && !accept {
		fmt.Fprintf(stderr, "troupe: --resume: these settings differ from %s, the run's configuration so far:\n%sResume with the run's settings, or give --accept-changes to apply these from the next iteration (they are recorded in %s).\n",
			path, describeChanges(refused), filepath.Join(dir, trainer.ChangesFile))
		return nil, false
	}
	if len(changes) > 0 {
		fmt.Fprintf(stderr, "troupe: --resume: changed settings, recorded in %s:\n%s", filepath.Join(dir, trainer.ChangesFile), describeChanges(changes))
	}
	return changes, true
}

// writeReport writes report.md and curves.png; note, if any, is added to
// report.md as its evaluation section.
func writeReport(dir, project string, rep *rollout.EvalReport, note string) error {
	if err := report.Write(dir, project, rep); err != nil {
		return err
	}
	if note == "" {
		return nil
	}
	path := filepath.Join(dir, "report.md")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, []byte("## Evaluation\n\n"+note)...), 0o644)
}

// describeBackend labels a backend name for people: the simulated LLM is
// always said to be one, and replayed completions too.
func describeBackend(name string) string {
	if strings.Contains(name, "sim") {
		return name + " (simulated LLM: results are simulations)"
	}
	if name == "replay" {
		return name + " (recorded completions of real LLMs, replayed: no LLM is called)"
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

// progress prints one status per iteration, and what an LLM call is
// waiting for while it waits (see retrying): a live line on a terminal,
// plain lines otherwise. It is safe for concurrent use.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	start time.Time
	first int

	mu sync.Mutex
	// line is the last iteration's status; printed that something was.
	line    string
	printed bool
	// retries, rateLimited and serverErrors count the LLM retries seen;
	// quietUntil and announcedUntil pace the waiting status (retrying).
	retries, rateLimited, serverErrors int
	quietUntil, announcedUntil         time.Time
	// evalBegan is when the evaluation started, evalShown when its live
	// line was last drawn; evalDone of evalTotal policies are done, and
	// evalEpisodes episodes of evalPer per policy.
	evalBegan, evalShown                       time.Time
	evalDone, evalTotal, evalPer, evalEpisodes int
}

func newProgress(w io.Writer, total int) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &progress{w: w, tty: tty, total: total, start: time.Now(), first: -1}
}

func (p *progress) update(st trainer.IterationStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first < 0 {
		p.first = st.Iteration - 1
	}
	done := st.Iteration - p.first
	eta := time.Duration(float64(time.Since(p.start)) / float64(done) * float64(p.total-st.Iteration)).Round(time.Second)
	var comps []string
	for _, k := range slices.Sorted(maps.Keys(st.Components)) {
		comps = append(comps, fmt.Sprintf("%s %.3f", k, st.Components[k]))
	}
	line := fmt.Sprintf("iter %d/%d  reward %.4f ±%.3f  %s  kl %.4f  steps/s %.0f  failed %d%s  ETA %s",
		st.Iteration, p.total, st.RewardMean, st.RewardStd, strings.Join(comps, "  "), st.KL, st.StepsPerSec, st.FailedEpisodes, trafficText(st.LLMTraffic), eta)
	p.line, p.printed = line, true
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// evalStep is an evaluation's progress by policy (rollout.Eval.Progress):
// which policy's episodes are done, how many of the total, and the time
// left at the pace so far. A line each, also when stderr is not a
// terminal.
func (p *progress) evalStep(policy string, done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evalDone, p.evalTotal = done, total
	if done == 0 {
		return
	}
	p.evalLine(fmt.Sprintf("eval %d/%d policies (%s done)", done, total, policy), true)
}

// evalEpisode is an evaluation's progress by episode
// (rollout.WithEpisodeDone): on a terminal, the live line says how far the
// current policy is, at most ten times a second; elsewhere nothing (the
// policy lines suffice in a log).
func (p *progress) evalEpisode() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evalEpisodes++
	if !p.tty || time.Since(p.evalShown) < 100*time.Millisecond || p.evalTotal == 0 {
		return
	}
	p.evalShown = time.Now()
	inPolicy := p.evalEpisodes - p.evalDone*p.evalPer
	p.evalLine(fmt.Sprintf("eval %d/%d policies, the next at %d/%d episodes", p.evalDone, p.evalTotal, inPolicy, p.evalPer), false)
}

// evalLine shows an evaluation status with the time it has taken and the
// time left at its pace in episodes; final says the line stays (a
// policy's end) rather than being redrawn. p.mu is held.
func (p *progress) evalLine(status string, final bool) {
	elapsed := time.Since(p.evalBegan)
	all := p.evalTotal * p.evalPer
	eta := "?"
	if p.evalEpisodes > 0 && all > 0 {
		eta = time.Duration(float64(elapsed) / float64(p.evalEpisodes) * float64(max(0, all-p.evalEpisodes))).Round(time.Second).String()
	}
	line := fmt.Sprintf("%s  %s  ETA %s", status, elapsed.Round(time.Second), eta)
	p.line, p.printed = line, true
	switch {
	case p.tty:
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	case final:
		fmt.Fprintln(p.w, line)
	}
}

// evalProgress prepares an evaluation of episodes episodes per policy that
// starts now: it returns ctx with the per-episode hook and the
// rollout.Eval.Progress callback.
func (p *progress) evalProgress(ctx context.Context, episodes int) (context.Context, func(string, int, int)) {
	p.mu.Lock()
	p.evalBegan, p.evalShown, p.evalDone, p.evalTotal, p.evalPer, p.evalEpisodes = time.Now(), time.Time{}, 0, 0, episodes, 0
	p.mu.Unlock()
	return rollout.WithEpisodeDone(ctx, p.evalEpisode), p.evalStep
}

// evalPolicies returns how many policies the current evaluation has
// finished, and of how many (0 before it has begun).
func (p *progress) evalPolicies() (done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.evalDone, p.evalTotal
}

// done ends the live line on a terminal.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.printed {
		fmt.Fprintln(p.w)
	}
	p.printed = false
}

// telemetryFile is the run directory's file of the stdout exporter's spans
// and metrics, one JSON object a line.
const telemetryFile = "telemetry.jsonl"

// telemetryToRunDir points the stdout exporter of cfg's [telemetry], if it
// is the one chosen, at the run directory's telemetry.jsonl (appended to
// on resume), so that its JSON is not mixed into the terminal's progress
// line. The returned function closes the file.
func telemetryToRunDir(cfg *agentfile.Config, dir string, stderr io.Writer) (func(), bool) {
	if cfg.Telemetry.Exporter != telemetry.ExporterStdout || cfg.Telemetry.Output != nil {
		return func() {}, true
	}
	path := filepath.Join(dir, telemetryFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: telemetry: %v\n", err)
		return nil, false
	}
	cfg.Telemetry.Output = f
	return func() {
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "troupe: telemetry: %s: %v\n", path, err)
		}
	}, true
}

// warnDroppedSpans says, once the telemetry is shut down, how many spans
// its queue dropped, if any: a trace with holes should not pass for whole.
func warnDroppedSpans(built *agentfile.Built, stderr io.Writer) {
	if n := built.Setup.Telemetry.DroppedSpans(); n > 0 {
		fmt.Fprintf(stderr, "troupe: telemetry: %d spans were dropped because the span queue was full; raise $%s (now %s)\n",
			n, telemetry.EnvSpanQueueSize, cmp.Or(os.Getenv(telemetry.EnvSpanQueueSize), fmt.Sprint(telemetry.DefaultSpanQueueSize)))
	}
}
