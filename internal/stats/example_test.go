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
