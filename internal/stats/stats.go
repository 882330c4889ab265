// Package stats computes what an evaluation reports: means, 95 %
// percentile-bootstrap confidence intervals of a mean, of the paired
// difference of two policies played on the same seeds (resampling seeds,
// or whole clusters of seeds: the task instances they played), and of a
// ratio of means; and the small regressions the measurements fit to ask
// what predicts an outcome (FitLinear, FitLogistic, AUC).
//
// Conventions, shared by every function:
//   - NaN marks a missing value (an episode that failed): it is skipped by
//     [Mean], drops its pair in [PairedDiffCI] and is skipped, per side, in
//     [RatioCI]. Callers put NaN where an episode produced no figure, so
//     the sample keeps one slot per seed and pairs stay aligned.
//   - The intervals are percentile-bootstrap intervals: the sample is
//     resampled with replacement [Resamples] times, the statistic computed
//     on each resample, and the interval is the 2.5th and 97.5th
//     percentiles of those values (linear interpolation between order
//     statistics). A resample on which the statistic is undefined (NaN:
//     only missing values drawn, or a ratio's denominator is 0) is left out.
//   - Deterministic: the resamples come from a PCG generator with a fixed
//     seed, so the same data give the same interval on every run and
//     platform.
package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Level is the confidence level of every interval of this package.
const Level = 0.95

// Resamples is the number of bootstrap resamples behind every interval of
// the package-level functions. With 4000 resamples the Monte-Carlo error
// of a 95 % percentile endpoint is about ±0.0025 in probability
// (√(0.025·0.975/4000)), small next to the sampling error the interval
// reports; an interval of a mean over 100 episodes takes about 5 ms
// (BenchmarkBootstrapCI100).
const Resamples = 4000

// seed fixes the resampling generator (any constant would do; this one is
// "troupe" in ASCII).
const seed = 0x74726f757065

// Interval is a confidence interval [Lo, Hi].
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// HalfWidth returns (Hi − Lo) / 2, the "±" a table shows. Percentile
// intervals need not be symmetric around the mean; Lo and Hi are exact.
func (iv Interval) HalfWidth() float64 { return (iv.Hi - iv.Lo) / 2 }

// Contains reports whether Lo ≤ x ≤ Hi.
func (iv Interval) Contains(x float64) bool { return iv.Lo <= x && x <= iv.Hi }

// Defined reports whether both ends are numbers (an interval of an empty
// sample is not).
func (iv Interval) Defined() bool { return !math.IsNaN(iv.Lo) && !math.IsNaN(iv.Hi) }

// String formats the interval as "[lo, hi]" with 4 decimals.
func (iv Interval) String() string { return fmt.Sprintf("[%.4f, %.4f]", iv.Lo, iv.Hi) }

var undefined = Interval{math.NaN(), math.NaN()}

// MarshalJSON writes {"lo": …, "hi": …}, with null for an undefined (NaN)
// end, which JSON cannot hold as a number.
func (iv Interval) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Lo *float64 `json:"lo"`
		Hi *float64 `json:"hi"`
	}{NumberOrNull(iv.Lo), NumberOrNull(iv.Hi)})
}

// UnmarshalJSON reads what MarshalJSON writes (null as NaN).
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var v struct {
		Lo, Hi *float64
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*iv = Interval{Lo: math.NaN(), Hi: math.NaN()}
	if v.Lo != nil {
		iv.Lo = *v.Lo
	}
	if v.Hi != nil {
		iv.Hi = *v.Hi
	}
	return nil
}

// NumberOrNull returns &x, or nil when x is NaN or infinite, for JSON
// fields that must hold a number or null.
func NumberOrNull(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// Mean returns the mean of the values of xs that are not NaN, and NaN when
// there are none.
func Mean(xs []float64) float64 {
	sum, n := 0.0, 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Count returns how many values of xs are not NaN.
func Count(xs []float64) int {
	n := 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			n++
		}
	}
	return n
}

// Bootstrap is a percentile bootstrap: the number of resamples and the
// seed of the generator that draws them. The package-level functions use
// [Default]; a Bootstrap with other settings serves tests and callers
// that need more resamples.
type Bootstrap struct {
	Resamples int
	Seed      uint64
}

// Default is the bootstrap of the package-level functions.
var Default = Bootstrap{Resamples: Resamples, Seed: seed}

// Interval resamples the indices 0..n−1 with replacement b.Resamples
// times, computes stat on each resample's indices and returns the 95 %
// percentile interval of the results (resamples where stat is NaN left
// out). It is the primitive the other functions build on: stat sees one
// resample of the seeds, so several samples indexed by seed (two
// policies, a ratio's numerator and denominator) are resampled together.
// The interval is undefined (NaN) when n is 0 or every resample is.
func (b Bootstrap) Interval(n int, stat func(idx []int) float64) Interval {
	if n <= 0 || b.Resamples <= 0 {
		return undefined
	}
	rng := rand.New(rand.NewPCG(b.Seed, uint64(n)))
	idx := make([]int, n)
	vals := make([]float64, 0, b.Resamples)
	for range b.Resamples {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		if v := stat(idx); !math.IsNaN(v) {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return undefined
	}
	slices.Sort(vals)
	alpha := (1 - Level) / 2
	return Interval{Lo: quantile(vals, alpha), Hi: quantile(vals, 1-alpha)}
}

// quantile returns the p-quantile of sorted by linear interpolation
// between the order statistics at (len−1)·p (Hyndman & Fan type 7, the
// default of R and NumPy).
func quantile(sorted []float64, p float64) float64 {
	h := float64(len(sorted)-1) * p
	lo := int(math.Floor(h))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// MeanCI returns the 95 % percentile-bootstrap interval of the mean of xs
// (NaN values are missing: they stay in the resampled slots and are
// skipped by the mean, so a resample carries as many failures as chance
// gives it).
func (b Bootstrap) MeanCI(xs []float64) Interval {
	if Count(xs) == 0 {
		return undefined
	}
	return b.Interval(len(xs), func(idx []int) float64 { return meanAt(xs, idx) })
}

func meanAt(xs []float64, idx []int) float64 {
	sum, n := 0.0, 0
	for _, i := range idx {
		if x := xs[i]; !math.IsNaN(x) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Diff is the paired difference a − b of two samples on the same seeds.
type Diff struct {
	// Mean is the mean of a[i] − b[i] over the pairs.
	Mean float64 `json:"mean"`
	// CI95 is its 95 % percentile-bootstrap interval, resampling pairs.
	CI95 Interval `json:"ci95"`
	// Pairs counts the seeds where both values are present; Excluded the
	// seeds where either is missing (NaN: an episode that failed in
	// either policy), which are left out of Mean and CI95.
	Pairs    int `json:"pairs"`
	Excluded int `json:"excluded"`
	// Clusters counts the clusters of the pairs ([Bootstrap.PairedDiffByCluster]);
	// 0 for a difference resampled by seed.
	Clusters int `json:"clusters,omitempty"`
}

// PairedDiff returns the paired difference a − b: the per-seed
// differences a[i] − b[i] over the seeds where neither is NaN, their mean
// and its bootstrap interval (pairs resampled, so what the two samples
// share through the seed cancels). It panics if a and b differ in length.
func (b Bootstrap) PairedDiff(x, y []float64) Diff {
	if len(x) != len(y) {
		panic(fmt.Sprintf("stats: PairedDiff of samples of lengths %d and %d (want one value per seed in both)", len(x), len(y)))
	}
	out, d := pairedMean(x, y)
	if len(d) > 0 {
		out.CI95 = b.MeanCI(d)
	}
	return out
}

// pairedMean returns the Diff of x − y without its interval, and the
// per-seed differences of the pairs.
func pairedMean(x, y []float64) (Diff, []float64) {
	var d []float64
	for i := range x {
		if !math.IsNaN(x[i]) && !math.IsNaN(y[i]) {
			d = append(d, x[i]-y[i])
		}
	}
	return Diff{Mean: Mean(d), Pairs: len(d), Excluded: len(x) - len(d), CI95: undefined}, d
}

// PairedDiffByCluster is [Bootstrap.PairedDiff] with the seeds grouped
// into clusters: cluster[i] names the cluster of seed i (in evaluations,
// the task instance the seed plays: the document, the class). The mean is
// that of PairedDiff; the interval resamples whole clusters with
// replacement (each drawn cluster brings all its pairs, and the statistic
// is the mean difference over the pairs drawn), so it answers "would the
// difference hold on other instances of the task?" rather than "on other
// seeds of these instances?", and it is wider when the difference depends
// on the instance. Clusters counts the clusters with a pair. The interval
// is undefined (NaN) when a pair's cluster is NaN or there are fewer than
// two clusters; with few clusters (under about 20) a percentile interval
// is too narrow, so read it as a lower bound on the uncertainty. It
// panics if the three samples differ in length.
func (b Bootstrap) PairedDiffByCluster(x, y, cluster []float64) Diff {
	if len(x) != len(y) || len(x) != len(cluster) {
		panic(fmt.Sprintf("stats: PairedDiffByCluster of samples of lengths %d, %d and %d clusters (want one value per seed in each)", len(x), len(y), len(cluster)))
	}
	out, _ := pairedMean(x, y)
	// sums[k] and counts[k]: cluster k's summed differences and pairs.
	index := map[float64]int{}
	var sums, counts []float64
	for i := range x {
		if math.IsNaN(x[i]) || math.IsNaN(y[i]) {
			continue
		}
		if math.IsNaN(cluster[i]) {
			out.Clusters = 0
			return out
		}
		k, ok := index[cluster[i]]
		if !ok {
			k = len(sums)
			index[cluster[i]] = k
			sums, counts = append(sums, 0), append(counts, 0)
		}
		sums[k] += x[i] - y[i]
		counts[k]++
	}
	out.Clusters = len(sums)
	if len(sums) < 2 {
		return out
	}
	out.CI95 = b.Interval(len(sums), func(idx []int) float64 {
		s, n := 0.0, 0.0
		for _, k := range idx {
			s += sums[k]
			n += counts[k]
		}
		return s / n
	})
	return out
}

// Ratio returns Mean(num) / Mean(den) and the 95 % bootstrap interval of
// that ratio of means, with num[i] and den[i] measured on the same seed i
// and resampled together (each side's mean skips its own NaN values). The
// estimate is NaN when either side has no value or Mean(den) is 0. It
// panics if num and den differ in length.
func (b Bootstrap) Ratio(num, den []float64) (float64, Interval) {
	if len(num) != len(den) {
		panic(fmt.Sprintf("stats: Ratio of samples of lengths %d and %d (want one value per seed in both)", len(num), len(den)))
	}
	r := ratio(Mean(num), Mean(den))
	if math.IsNaN(r) {
		return r, undefined
	}
	return r, b.Interval(len(num), func(idx []int) float64 { return ratio(meanAt(num, idx), meanAt(den, idx)) })
}

func ratio(n, d float64) float64 {
	if d == 0 || math.IsNaN(n) || math.IsNaN(d) {
		return math.NaN()
	}
	return n / d
}

// BootstrapCI returns the 95 % percentile-bootstrap interval of the mean
// of xs with [Default] (NaN values are missing; see the package doc).
func BootstrapCI(xs []float64) Interval { return Default.MeanCI(xs) }

// PairedDiffCI returns the paired difference a − b on the same seeds with
// its 95 % interval, with [Default] (see [Bootstrap.PairedDiff]).
func PairedDiffCI(a, b []float64) Diff { return Default.PairedDiff(a, b) }

// PairedDiffByClusterCI returns the paired difference a − b with its 95 %
// interval over clusters, with [Default] (see
// [Bootstrap.PairedDiffByCluster]).
func PairedDiffByClusterCI(a, b, cluster []float64) Diff {
	return Default.PairedDiffByCluster(a, b, cluster)
}

// RatioCI returns Mean(num) / Mean(den) with its 95 % interval, with
// [Default] (see [Bootstrap.Ratio]).
func RatioCI(num, den []float64) (float64, Interval) { return Default.Ratio(num, den) }
