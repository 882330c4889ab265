package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as aligned text tables, one per section,
// followed by the skipped rows and the checks.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	m := r.Machine
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	fmt.Fprintf(w, "troupe bench (%s) on %s, %d cores, GOMAXPROCS %d, %s %s/%s\n", mode, m.CPU, m.Cores, m.GOMAXPROCS, m.GoVersion, m.OS, m.Arch)
	fmt.Fprintf(w, "load average at start %s, at end %s; %.1f s\n", loads(m.LoadStart), loads(m.LoadEnd), r.WallS)

	if len(r.Step) > 0 {
		fmt.Fprintln(w, "\nenv step (one joint step; resets excluded; ratio = ÷ in-process)")
		p("env\tpath\tns/step\tallocs/step\tB/step\tratio\tload\t\n")
		for _, s := range r.Step {
			p("%s\t%s\t%.0f\t%.1f\t%.0f\t%.2f×\t%.1f\t\n", s.Env, s.Path, s.NsPerStep, s.AllocsPerStep, s.BytesPerStep, s.Ratio, s.Load1)
		}
		tw.Flush()
		fmt.Fprintln(w, "  wasm: the env's Go source through sdk/wasmguest; wasm-c: the same env in C (examples/c-lbf).")
		fmt.Fprintf(w, "  The ≤ %g× check (DESIGN.md §7) is on wasm-c (the ABI and the host); Go guests pay for Go's Wasm code generation.\n", MaxWasmCRatio)
	}
	if pr := r.Policy; pr != nil {
		c := pr.Config
		fmt.Fprintf(w, "\npolicy: MLP %d→%v→%d (obs %d + %d-agent one-hot, shared), %.0f flops/row forward, %.0f backward; one core\n",
			c.InputSize(), c.Hidden, c.NumDecisions, c.ObsSize, c.NumAgents, pr.FwdFlops, pr.BwdFlops)
		for _, d := range pr.Dot {
			fmt.Fprintf(w, "  plain Go %s (length %d): %.2f GFLOP/s\n", d.Name, d.Length, d.GFLOPS)
		}
		fmt.Fprintf(w, "  peak (best dot loop): %.2f GFLOP/s\n", pr.PeakGFLOPS)
		p("pass\tbatch\tdecisions/s\tGFLOP/s\t%% of peak\tallocs/call\t\n")
		for _, row := range pr.Rows {
			p("%s\t%d\t%.0f\t%.2f\t%.0f%%\t%.1f\t\n", row.Pass, row.Batch, row.DecisionsPerSec, row.GFLOPS, row.PctOfPeak, row.AllocsPerOp)
		}
		tw.Flush()
		for _, pr := range pr.Parallel {
			fmt.Fprintf(w, "  %s on %d cores at once: %.2f× one core (the machine's parallel ceiling for this loop)\n", pr.Name, pr.Goroutines, pr.Scaling)
		}
	}
	if len(r.Training) > 0 {
		fmt.Fprintln(w, "\ntraining (full GRPO iterations; workers = GOMAXPROCS; scaling = ÷ 1 worker)")
		p("env\tworkers\titerations\tenv steps/s\tdecisions/s\ts/iteration\tupdate s\tcpu/wall\tP busy\tGC\tscaling\treward\tload\t\n")
		for _, t := range r.Training {
			sc := "-"
			if t.Scaling > 0 {
				sc = fmt.Sprintf("%.2f×", t.Scaling)
			}
			p("%s\t%d\t%d\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.0f%%\t%.0f%%\t%s\t%.4f\t%.1f\t\n", t.Env, t.Workers, t.Iterations, t.EnvStepsPerSec, t.DecisionsPerSec,
				t.WallS/float64(max(1, t.Iterations)), t.UpdateS, t.CPUS/max(t.WallS, 1e-9), 100*t.PUtilization, 100*t.GCFraction, sc, t.RewardMean, t.Load1)
		}
		tw.Flush()
	}
	if len(r.LLM) > 0 {
		l0 := r.LLM[0]
		fmt.Fprintf(w, "\nLLM orchestration: openai backend, %d closed-loop callers, in-process server with %.0f ms latency, %.1f s windows\n", l0.InFlight, l0.LatencyMs, l0.WindowS)
		p("what")
		for _, l := range r.LLM {
			p("\t%s", l.Arrivals)
		}
		p("\t\n")
		row := func(name string, f func(l LLMResult) string) {
			p("%s", name)
			for _, l := range r.LLM {
				p("\t%s", f(l))
			}
			p("\t\n")
		}
		row("Chat calls measured", func(l LLMResult) string { return fmt.Sprint(l.Calls) })
		row("mean Chat latency", func(l LLMResult) string { return fmt.Sprintf("%.2f ms", l.ChatMs) })
		row("mean bare net/http latency", func(l LLMResult) string { return fmt.Sprintf("%.2f ms", l.RawMs) })
		row("overhead per call (Chat − bare)", func(l LLMResult) string { return fmt.Sprintf("%.0f µs", l.OverheadUs) })
		row("overhead per call (Chat − server latency)", func(l LLMResult) string { return fmt.Sprintf("%.0f µs", l.OverheadVsLatencyUs) })
		row("throughput", func(l LLMResult) string { return fmt.Sprintf("%.0f calls/s", l.CallsPerSec) })
		row("ideal (in flight ÷ latency)", func(l LLMResult) string { return fmt.Sprintf("%.0f calls/s", l.IdealCallsPerSec) })
		row("fraction of ideal", func(l LLMResult) string { return fmt.Sprintf("%.1f%%", 100*l.FractionOfIdeal) })
		row("bare client, fraction of ideal", func(l LLMResult) string { return fmt.Sprintf("%.1f%%", 100*l.RawFractionOfIdeal) })
		row("CPU per call, Chat / bare", func(l LLMResult) string { return fmt.Sprintf("%.0f / %.0f µs", l.CPUUsPerCall, l.RawCPUUsPerCall) })
		row("allocations per call, Chat / bare / framework", func(l LLMResult) string {
			return fmt.Sprintf("%.0f / %.0f / %.0f", l.ChatAllocsPerCall, l.RawAllocsPerCall, l.AllocsPerCall)
		})
		row("load", func(l LLMResult) string { return fmt.Sprintf("%.1f", l.Load1) })
		tw.Flush()
	}
	if t := r.Target; t != nil {
		fmt.Fprintf(w, "\ntime to target: troupe train on %s (%d workers) until consistency ≥ %.3g and speedup ≥ %.3g on %d eval seeds, evaluated every %d iterations\n",
			t.Agentfile, t.Workers, t.TargetConsistency, t.TargetSpeedup, t.EvalEpisodes, t.EvalEvery)
		p("iteration\ttraining s\tconsistency\tspeedup\tfailed\t\n")
		for _, h := range t.History {
			p("%d\t%.1f\t%.4f\t%.2f\t%d/%d\t\n", h.Iteration, h.TrainWallS, h.Consistency, h.Speedup, h.FailedEpisodes, h.Episodes)
		}
		tw.Flush()
		if t.Reached {
			fmt.Fprintf(w, "  reached at iteration %d after %.1f s of training (%.1f s with the suite's evaluations)\n", t.Iterations, t.TrainWallS, t.TotalWallS)
		} else {
			fmt.Fprintf(w, "  NOT reached in %d iterations (%.1f s of training)\n", t.Iterations, t.TrainWallS)
			if t.NotReachedForFailures {
				fmt.Fprintf(w, "  (the means met the targets at some evaluation, but episodes failed there: a target is reached only with every episode scored)\n")
			}
		}
		if t.ReferenceFailedEpisodes > 0 {
			fmt.Fprintf(w, "  the reference baseline failed %d of %d episodes; its mean makespan is over the others\n", t.ReferenceFailedEpisodes, t.EvalEpisodes)
		}
		if c := t.Confirm; c != nil {
			fmt.Fprintf(w, "  on the agentfile's %d eval seeds: consistency %.4f, speedup %.2f, %d failed\n", c.Episodes, c.Consistency, c.Speedup, c.FailedEpisodes)
		}
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintln(w, "\nskipped")
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "  %s / %s: %s\n", s.Section, s.Row, oneLine(s.Reason))
		}
	}
	if len(r.Checks) > 0 {
		fmt.Fprintln(w, "\nchecks")
		for _, c := range r.Checks {
			mark := "FAIL"
			if c.Pass {
				mark = "ok  "
			}
			fmt.Fprintf(w, "  %s %s\n", mark, c)
		}
	}
	return tw.Flush()
}

// String is the check as the table and troupe bench's errors print it:
// "name: value op bound", or the name alone for an OpRan check.
func (c Check) String() string {
	if c.Op == OpRan {
		return c.Name
	}
	return fmt.Sprintf("%s: %s %s %s", c.Name, num(c.Value, c.Unit), c.Op, num(c.Bound, c.Unit))
}

func num(v float64, unit string) string {
	switch unit {
	case "":
		return fmt.Sprintf("%.3g", v)
	case "×":
		return fmt.Sprintf("%.2f×", v)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

func loads(l []float64) string {
	if l == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2])
}

// oneLine shortens a multi-line reason (a compiler's output) to its first
// line.
func oneLine(s string) string {
	first, rest, ok := strings.Cut(s, "\n")
	if ok && strings.TrimSpace(rest) != "" {
		return first + " …"
	}
	return first
}
