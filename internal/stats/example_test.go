package stats_test

import (
	"fmt"
	"math"

	"github.com/troupe-dev/troupe/internal/stats"
)

// A table row of a benchmark: two policies' scores on the same five seeds,
// the trained one's third episode failed (NaN).
func Example() {
	trained := []float64{0.92, 0.88, math.NaN(), 0.95, 0.90}
	rule := []float64{0.85, 0.80, 0.70, 0.91, 0.86}
	fmt.Printf("trained %.3f %v (%d of %d scored)\n", stats.Mean(trained), stats.BootstrapCI(trained), stats.Count(trained), len(trained))
	fmt.Printf("rule    %.3f %v\n", stats.Mean(rule), stats.BootstrapCI(rule))
	d := stats.PairedDiffCI(trained, rule)
	fmt.Printf("trained − rule %+.3f %v on %d pairs (%d excluded)\n", d.Mean, d.CI95, d.Pairs, d.Excluded)
	// Output:
	// trained 0.912 [0.8867, 0.9381] (4 of 5 scored)
	// rule    0.824 [0.7598, 0.8780]
	// trained − rule +0.057 [0.0400, 0.0750] on 4 pairs (1 excluded)
}

// Eight seeds that play four documents, two seeds each: the trained policy
// gains on documents 1 and 2 and loses on 3 and 4. By seed the gain looks
// certain; resampling whole documents says it may not hold on others.
func ExamplePairedDiffByClusterCI() {
	trained := []float64{0.95, 0.96, 0.94, 0.95, 0.80, 0.81, 0.89, 0.90}
	rule := []float64{0.85, 0.85, 0.86, 0.85, 0.82, 0.83, 0.90, 0.90}
	document := []float64{1, 1, 2, 2, 3, 3, 4, 4}
	bySeed := stats.PairedDiffCI(trained, rule)
	byDoc := stats.PairedDiffByClusterCI(trained, rule, document)
	fmt.Printf("by seed     %+.4f %v\n", bySeed.Mean, bySeed.CI95)
	fmt.Printf("by document %+.4f %v over %d documents\n", byDoc.Mean, byDoc.CI95, byDoc.Clusters)
	// Output:
	// by seed     +0.0425 [0.0025, 0.0825]
	// by document +0.0425 [-0.0125, 0.0975] over 4 documents
}

// Does a signal predict an outcome on data it was not fitted on? Fit on
// the first rows, score the others: the measurements behind BENCHMARKS'
// "what predicts …" tables do this with every feature an agent sees.
func ExampleFitLogistic() {
	// One feature (how many examples failed) and whether the hidden test
	// passed, for eight versions of methods.
	failed := []float64{0, 0, 1, 2, 0, 1, 3, 0}
	passed := []bool{true, true, false, false, true, true, false, false}
	var rows [][]float64
	for _, f := range failed {
		rows = append(rows, []float64{f})
	}
	design := stats.NewDesign(rows[:4]) // fitted on the first four
	var fit [][]float64
	for _, r := range rows[:4] {
		fit = append(fit, design.Row(r))
	}
	w := stats.FitLogistic(fit, passed[:4], 1)
	var scores []float64
	for _, r := range rows[4:] {
		scores = append(scores, stats.Dot(w, design.Row(r)))
	}
	// Of the four (passing, failing) pairs, the passing version scores
	// higher in two and ties in one (no failed example either way).
	fmt.Printf("AUC on the other four: %.3f\n", stats.AUC(scores, passed[4:]))
	// Output:
	// AUC on the other four: 0.625
}
