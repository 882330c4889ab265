// Package report turns a run directory's metrics.jsonl and evaluation into
// report.md and curves.png (learning curves drawn with gonum/plot).
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
	"github.com/troupe-dev/troupe/internal/stats"
)

// ReadMetrics reads a metrics.jsonl file. A line that does not parse is an
// error naming the file and line.
func ReadMetrics(path string) ([]trainer.IterationStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []trainer.IterationStats
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var st trainer.IterationStats
		if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, st)
	}
	return out, sc.Err()
}

// Write reads dir/metrics.jsonl and writes dir/curves.png and dir/report.md.
// eval may be nil (no evaluation was run).
func Write(dir, project string, eval *rollout.EvalReport) error {
	stats, err := ReadMetrics(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		return err
	}
	if err := Curves(filepath.Join(dir, "curves.png"), stats); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(Markdown(project, stats, eval)), 0o644)
}

var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
}

// Curves draws the joint reward and each component per iteration, one
// panel each, into a PNG file.
func Curves(path string, stats []trainer.IterationStats) error {
	series := []string{"reward"}
	comps := map[string]bool{}
	for _, s := range stats {
		for k := range s.Components {
			comps[k] = true
		}
	}
	var names []string
	for k := range comps {
		names = append(names, k)
	}
	sort.Strings(names)
	series = append(series, names...)
	const w = 5 * vg.Inch
	h := vg.Length(2.2*float64(len(series))) * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(series), Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	for i, name := range series {
		p := plot.New()
		p.Title.Text = name
		p.X.Label.Text = "iteration"
		pts := make(plotter.XYs, 0, len(stats))
		for _, s := range stats {
			y := s.RewardMean
			if name != "reward" {
				y = s.Components[name]
			}
			pts = append(pts, plotter.XY{X: float64(s.Iteration), Y: y})
		}
		if len(pts) == 0 {
			pts = append(pts, plotter.XY{})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		p.Add(l, plotter.NewGrid())
		p.Draw(tiles.At(dc, 0, i))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Markdown renders the report: the training summary, the evaluation
// table with 95 % intervals and the best baseline marked, the trained
// policy against the best baseline, and its paired differences to every
// policy.
func Markdown(project string, history []trainer.IterationStats, eval *rollout.EvalReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Troupe run report: %s\n\n", project)
	if len(history) > 0 {
		first, last := history[0], history[len(history)-1]
		fmt.Fprintf(&b, "LLM backend: **%s**%s.\n\n", last.Backend, simNote(last.Backend))
		fmt.Fprintf(&b, "Training: %d iterations, %d environment steps, %.0f s of wall time.\n\n", last.Iteration, last.EnvSteps, last.WallS)
		if im := first.Imitation; im != nil {
			fmt.Fprintf(&b, "Warm start: the policy first imitated the baseline `%s` (%d episodes, %d failed, %d decisions; loss %.3f → %.3f nats, agreement %.3f), so compare it with that baseline below.\n\n",
				im.Baseline, im.Episodes, im.FailedEpisodes, im.Decisions, im.LossBefore, im.LossAfter, im.Agreement)
		}
		fmt.Fprintf(&b, "| | first iteration | last iteration |\n|---|---:|---:|\n")
		fmt.Fprintf(&b, "| joint reward | %.4f | %.4f |\n", first.RewardMean, last.RewardMean)
		for _, k := range slices.Sorted(maps.Keys(last.Components)) {
			fmt.Fprintf(&b, "| %s | %.4f | %.4f |\n", k, first.Components[k], last.Components[k])
		}
		fmt.Fprintf(&b, "| KL to reference | %.4f | %.4f |\n| entropy | %.4f | %.4f |\n| failed episodes | %d | %d |\n\n",
			first.KL, last.KL, first.Entropy, last.Entropy, first.FailedEpisodes, last.FailedEpisodes)
		var traffic core.Traffic
		for _, st := range history {
			traffic = traffic.Add(st.LLMTraffic)
		}
		if traffic.Requests > 0 {
			fmt.Fprintf(&b, "LLM traffic during training (all iterations, failed episodes included): %d requests, %d retries, %d responses 429 (rate limited), %d responses 5xx, %d timeouts, %.0f s spent waiting for retries and rate limits.\n\n",
				traffic.Requests, traffic.Retries, traffic.RateLimited, traffic.ServerErrors, traffic.Timeouts, traffic.WaitSeconds)
		}
		b.WriteString("![learning curves](curves.png)\n\n")
	}
	if eval != nil {
		fmt.Fprintf(&b, "## Evaluation\n\n%d episodes per policy on held-out seeds (eval seed %d), env `%s`, LLM backend **%s**%s.\n\n",
			eval.Episodes, eval.Seed, eval.Env, eval.Backend, simNote(eval.Backend))
		ms := map[string]bool{}
		traffic := core.Traffic{}.Metrics() // in their own table below
		for _, p := range eval.Policies {
			for k := range p.Metrics {
				if _, isTraffic := traffic[k]; !isTraffic && !strings.Contains(k, ".") && !strings.HasPrefix(k, "reference_") {
					ms[k] = true
				}
			}
		}
		mets := slices.Sorted(maps.Keys(ms))
		fmt.Fprintf(&b, "Each figure is the mean ± the half-width of its 95 %% bootstrap interval over the episodes (%d resamples; `eval.json` has the exact ends). Failed episodes are left out of the means and counted in `failed`; episodes cut at the step limit or a token budget are scored.\n\n", stats.Resamples)
		head, rows := eval.Table(mets)
		writeMarkdownTable(&b, head, rows)
		if len(eval.OutsideTask) > 0 {
			fmt.Fprintf(&b, "\n`%s`: outside the task (does not play the task as posed, e.g. swaps in a model the drawn team may not have); never the best baseline.\n", rollout.OutsideMark)
		}
		if best := eval.BestBaseline; best != "" {
			fmt.Fprintf(&b, "\n`%s%s`: the best baseline (highest mean joint reward).\n", best, rollout.BestMark)
			if d, ok := eval.Paired[best]; ok {
				fmt.Fprintf(&b, "\n**grpo − %s** (best baseline), paired on %d seeds: joint reward %s (95 %% interval)", best, d.Pairs, rollout.DiffCell("%.4f", d.Reward))
				switch {
				case d.Reward.CI95.Lo > 0:
					b.WriteString(": the trained policy is better.\n")
				case d.Reward.CI95.Hi < 0:
					b.WriteString(": the trained policy is worse.\n")
				default:
					b.WriteString(": the interval holds 0, so these episodes do not tell the two apart.\n")
				}
				if t := d.RewardByTask; t != nil {
					fmt.Fprintf(&b, "Over the %d task instances (documents, classes) the seeds played, resampled whole, its interval is %s: whether the difference would hold on other instances.\n",
						t.Tasks, rollout.DiffCell("%.4f", t.Difference))
				}
			}
		}
		if head, rows := eval.PairedTable(mets); len(rows) > 0 {
			b.WriteString("\nPaired differences of the trained policy to every other policy on the same seeds: mean [95 % paired-bootstrap interval]; a seed where either episode failed is excluded.\n\n")
			writeMarkdownTable(&b, head, rows)
		}
		if head, rows := eval.TrafficTable(); len(rows) > 0 {
			b.WriteString("\nLLM traffic per policy: totals over its episodes, failed ones included (`wait_s`: seconds spent waiting for retries and rate limits).\n\n")
			writeMarkdownTable(&b, head, rows)
		}
		if eval.Reference != "" {
			fmt.Fprintf(&b, "\n`speedup` = mean makespan of `%s` ÷ mean makespan of the policy, on the same seeds.\n", eval.Reference)
		}
	}
	return b.String()
}

func writeMarkdownTable(b *strings.Builder, head []string, rows [][]string) {
	fmt.Fprintf(b, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, row := range rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(row, " | "))
	}
}

func simNote(backend string) string {
	if strings.Contains(backend, "sim") {
		return " (the offline simulated LLM: texts come from the task's surrogate and times are virtual)"
	}
	return ""
}
