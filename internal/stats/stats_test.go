package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The bootstrap distribution of the mean of {0,0,0,0,1} is K/5 with
// K ~ Binomial(5, 1/5): P(K=0) = 0.32768 ≥ 0.025, so the 2.5th percentile
// is 0; P(K≤2) = 0.94208 < 0.975 ≤ P(K≤3) = 0.99328, so the 97.5th is 3/5.
func TestBootstrapCIBinomialClosedForm(t *testing.T) {
	iv := BootstrapCI([]float64{0, 0, 0, 0, 1})
	if iv.Lo != 0 || iv.Hi != 0.6 {
		t.Fatalf("CI of the mean of {0,0,0,0,1} = %v, want [0, 0.6] (binomial quantiles)", iv)
	}
	if got := Mean([]float64{0, 0, 0, 0, 1}); got != 0.2 {
		t.Fatalf("Mean = %v, want 0.2", got)
	}
}

// TestBootstrapCIExactEnumeration checks the Monte-Carlo interval against
// the exact bootstrap distribution of the mean of a 5-element sample, all
// 5⁵ = 3125 equally likely resamples enumerated: the exact probability
// below Lo must be ≈ 2.5 % and below Hi ≈ 97.5 % (±1 %: four standard
// errors of a 4000-resample percentile).
func TestBootstrapCIExactEnumeration(t *testing.T) {
	xs := []float64{1, 2, 4, 7, 11}
	var means []float64
	for a := range 5 {
		for b := range 5 {
			for c := range 5 {
				for d := range 5 {
					for e := range 5 {
						means = append(means, (xs[a]+xs[b]+xs[c]+xs[d]+xs[e])/5)
					}
				}
			}
		}
	}
	slices.Sort(means)
	cdf := func(v float64, strict bool) float64 {
		n := 0
		for _, m := range means {
			if m < v || (!strict && m <= v+1e-12) {
				n++
			}
		}
		return float64(n) / float64(len(means))
	}
	iv := BootstrapCI(xs)
	for _, c := range []struct {
		name string
		v, p float64
	}{{"lo", iv.Lo, 0.025}, {"hi", iv.Hi, 0.975}} {
		below, atOrBelow := cdf(c.v, true), cdf(c.v, false)
		if below > c.p+0.01 || atOrBelow < c.p-0.01 {
			t.Errorf("%s = %v: exact P(mean < %v) = %.4f, P(mean ≤ %v) = %.4f; want the %.3f quantile", c.name, c.v, c.v, below, c.v, atOrBelow, c.p)
		}
	}
	// The interval's ends, by hand from the enumeration: the exact 2.5 %
	// and 97.5 % quantiles (the 79th and 3047th of 3125: ⌈p·3125⌉) are 2.0
	// and 8.4 (checked here, not assumed).
	if lo, hi := means[78], means[3046]; math.Abs(lo-2) > 1e-9 || math.Abs(hi-8.4) > 1e-9 {
		t.Fatalf("exact quantiles %v, %v; the hand computation says 2.0, 8.4", lo, hi)
	}
	if math.Abs(iv.Lo-2) > 0.2+1e-9 || math.Abs(iv.Hi-8.4) > 0.2+1e-9 {
		t.Errorf("CI %v, want ≈ [2.0, 8.4] (one grid step of 0.2)", iv)
	}
}

// TestBootstrapCIMatchesTInterval: for a sample from a normal distribution
// the percentile interval of the mean is close to the t-interval
// mean ± t(0.975, n−1)·s/√n (a little narrower: the bootstrap's spread is
// s·√((n−1)/n)/√n).
func TestBootstrapCIMatchesTInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 50
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 3 + 2*rng.NormFloat64()
	}
	m := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	half := 2.0096 * math.Sqrt(ss/(n-1)) / math.Sqrt(n) // t(0.975, 49) = 2.0096
	iv := BootstrapCI(xs)
	if r := iv.HalfWidth() / half; r < 0.85 || r > 1.05 {
		t.Errorf("bootstrap half-width %v vs t-interval %v (ratio %.3f), want 0.85..1.05", iv.HalfWidth(), half, r)
	}
	if mid := (iv.Lo + iv.Hi) / 2; math.Abs(mid-m) > 0.15*half {
		t.Errorf("bootstrap interval %v centred at %v, the mean is %v", iv, mid, m)
	}
	if !iv.Contains(m) {
		t.Errorf("%v does not contain the mean %v", iv, m)
	}
}

// TestPairedDiff: two policies whose scores vary a lot from seed to seed
// but one is always 0.1 better. Unpaired intervals overlap; the paired
// difference is exactly 0.1, its sign follows the order, and a seed where
// either failed (NaN) is excluded and counted.
func TestPairedDiff(t *testing.T) {
	const n = 40
	a, b := make([]float64, n), make([]float64, n)
	for i := range a {
		x := float64((i*37)%11) / 2 // 0..5: seed difficulty
		a[i], b[i] = x+0.1, x
	}
	ia, ib := BootstrapCI(a), BootstrapCI(b)
	if !(ia.Lo < ib.Hi && ib.Lo < ia.Hi) {
		t.Fatalf("unpaired intervals %v and %v do not overlap; the case is meant to need pairing", ia, ib)
	}
	d := PairedDiffCI(a, b)
	if math.Abs(d.Mean-0.1) > 1e-12 || math.Abs(d.CI95.Lo-0.1) > 1e-12 || math.Abs(d.CI95.Hi-0.1) > 1e-12 || d.Pairs != n || d.Excluded != 0 {
		t.Fatalf("paired a−b = %+v, want mean 0.1 and CI [0.1, 0.1] on %d pairs", d, n)
	}
	r := PairedDiffCI(b, a)
	if math.Abs(r.Mean+0.1) > 1e-12 || r.CI95.Hi > -0.1+1e-12 {
		t.Fatalf("paired b−a = %+v, want −0.1", r)
	}

	// Noise on the difference, a positive effect, and two failures.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range a {
		a[i] = b[i] + 0.3 + rng.NormFloat64()*0.5
	}
	a[3], b[7] = math.NaN(), math.NaN()
	d = PairedDiffCI(a, b)
	if d.Pairs != n-2 || d.Excluded != 2 {
		t.Fatalf("pairs %d excluded %d, want %d and 2", d.Pairs, d.Excluded, n-2)
	}
	var diffs []float64
	for i := range a {
		if i != 3 && i != 7 {
			diffs = append(diffs, a[i]-b[i])
		}
	}
	if d.Mean != Mean(diffs) || d.CI95 != BootstrapCI(diffs) {
		t.Fatalf("paired %+v is not the mean and CI of the %d per-seed differences", d, len(diffs))
	}
	if !(d.CI95.Lo > 0) || !d.CI95.Contains(d.Mean) {
		t.Fatalf("paired CI %v: want it above 0 (effect 0.3, sd 0.5, n 38) and around the mean %v", d.CI95, d.Mean)
	}

	// No effect: the same scores in the other order → mean 0, CI around 0.
	for i := range a {
		a[i], b[i] = float64(i%5), float64((n-1-i)%5)
	}
	if d := PairedDiffCI(a, b); math.Abs(d.Mean) > 1e-12 || !d.CI95.Contains(0) {
		t.Fatalf("no-effect case: %+v, want mean 0 and an interval containing 0", d)
	}
}

// TestPairedDiffByCluster: an effect that holds on every seed of half the
// clusters and reverses on the other half is clearly above zero by seed
// but not by cluster; with every seed its own cluster the two intervals
// are the same; missing clusters, one cluster and failed pairs are
// handled as documented.
func TestPairedDiffByCluster(t *testing.T) {
	const clusters, per = 10, 30
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, c []float64
	for k := range clusters {
		effect := 0.2
		if k%2 == 1 {
			effect = -0.1
		}
		for range per {
			x := rng.Float64()
			a, b, c = append(a, x+effect+rng.NormFloat64()*0.01), append(b, x), append(c, float64(100+k))
		}
	}
	bySeed, byCluster := PairedDiffCI(a, b), PairedDiffByClusterCI(a, b, c)
	if !(bySeed.CI95.Lo > 0) {
		t.Fatalf("by seed %v: want an interval above 0 (the case is meant to look certain by seed)", bySeed.CI95)
	}
	if byCluster.Mean != bySeed.Mean || byCluster.Pairs != bySeed.Pairs || byCluster.Clusters != clusters {
		t.Fatalf("by cluster %+v: want the by-seed mean %v, %d pairs and %d clusters", byCluster, bySeed.Mean, bySeed.Pairs, clusters)
	}
	if !byCluster.CI95.Contains(0) || !byCluster.CI95.Contains(byCluster.Mean) {
		t.Fatalf("by cluster %v: want an interval around the mean %v that contains 0 (5 clusters +0.2, 5 −0.1)", byCluster.CI95, byCluster.Mean)
	}
	if bySeed.Clusters != 0 {
		t.Fatalf("by seed: Clusters = %d, want 0", bySeed.Clusters)
	}

	// Every seed its own cluster (failures included): the by-seed figure.
	a[5], b[9] = math.NaN(), math.NaN()
	own := make([]float64, len(a))
	for i := range own {
		own[i] = float64(i)
	}
	want, got := PairedDiffCI(a, b), PairedDiffByClusterCI(a, b, own)
	if got.CI95 != want.CI95 || got.Mean != want.Mean || got.Pairs != want.Pairs || got.Excluded != 2 || got.Clusters != len(a)-2 {
		t.Fatalf("singleton clusters %+v, want the by-seed %+v with %d clusters", got, want, len(a)-2)
	}

	// A failed pair's cluster may be missing; a scored pair's may not.
	c[5] = math.NaN()
	if d := PairedDiffByClusterCI(a, b, c); !d.CI95.Defined() || d.Clusters != clusters {
		t.Fatalf("missing cluster of a failed pair: %+v, want a defined interval over %d clusters", d, clusters)
	}
	c[6] = math.NaN()
	if d := PairedDiffByClusterCI(a, b, c); d.CI95.Defined() || d.Clusters != 0 || d.Mean != want.Mean {
		t.Fatalf("missing cluster of a scored pair: %+v, want the mean, no interval and 0 clusters", d)
	}
	one := []float64{7, 7, 7}
	if d := PairedDiffByClusterCI([]float64{1, 2, 3}, []float64{0, 0, 0}, one); d.CI95.Defined() || d.Clusters != 1 || d.Mean != 2 {
		t.Fatalf("one cluster: %+v, want mean 2, 1 cluster, no interval", d)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("samples of different lengths: want a panic")
		}
	}()
	PairedDiffByClusterCI([]float64{1}, []float64{1}, []float64{1, 2})
}

func TestRatio(t *testing.T) {
	den := []float64{1, 2, 3, 4, 5, 6}
	num := make([]float64, len(den))
	for i, d := range den {
		num[i] = 2 * d
	}
	r, iv := RatioCI(num, den)
	if r != 2 || iv.Lo != 2 || iv.Hi != 2 {
		t.Fatalf("ratio of 2·x to x = %v %v, want 2 [2, 2]", r, iv)
	}
	// A ratio of means, not a mean of ratios: (1+3)/(1+1) = 2, not (1+3)/2.
	num, den = []float64{1, 9}, []float64{1, 3}
	if r, _ := RatioCI(num, den); r != 2.5 {
		t.Fatalf("ratio of means = %v, want 10/4 = 2.5", r)
	}
	// Missing values are skipped per side.
	num, den = []float64{4, math.NaN(), 4}, []float64{2, 2, math.NaN()}
	if r, iv := RatioCI(num, den); r != 2 || !iv.Contains(2) {
		t.Fatalf("ratio with NaNs = %v %v, want 2 (4 over 2)", r, iv)
	}
	if r, iv := RatioCI([]float64{1}, []float64{0}); !math.IsNaN(r) || iv.Defined() {
		t.Fatalf("ratio over 0 = %v %v, want NaN and an undefined interval", r, iv)
	}
	// Noisy: the interval holds the estimate.
	rng := rand.New(rand.NewPCG(3, 4))
	num, den = make([]float64, 30), make([]float64, 30)
	for i := range num {
		den[i] = 10 + rng.Float64()
		num[i] = 2*den[i] + rng.NormFloat64()
	}
	if r, iv := RatioCI(num, den); !iv.Contains(r) || iv.Lo < 1.7 || iv.Hi > 2.3 {
		t.Fatalf("noisy ratio %v %v, want an interval around ≈2", r, iv)
	}
}

func TestMissingAndEmpty(t *testing.T) {
	if m := Mean(nil); !math.IsNaN(m) {
		t.Errorf("Mean(nil) = %v, want NaN", m)
	}
	if m, c := Mean([]float64{1, math.NaN(), 3}), Count([]float64{1, math.NaN(), 3}); m != 2 || c != 2 {
		t.Errorf("Mean/Count with a NaN = %v/%d, want 2/2", m, c)
	}
	for _, xs := range [][]float64{nil, {math.NaN(), math.NaN()}} {
		if iv := BootstrapCI(xs); iv.Defined() {
			t.Errorf("CI of %v = %v, want undefined", xs, iv)
		}
	}
	if iv := BootstrapCI([]float64{4}); iv.Lo != 4 || iv.Hi != 4 {
		t.Errorf("CI of one value = %v, want [4, 4]", iv)
	}
	// A missing value stays in the resampled slots: the interval of
	// {0, 1, NaN} lies within [0, 1] and is not that of {0, 1}'s slots alone.
	if iv := BootstrapCI([]float64{0, 1, math.NaN()}); iv.Lo != 0 || iv.Hi != 1 {
		t.Errorf("CI of {0, 1, NaN} = %v, want [0, 1]", iv)
	}
	d := PairedDiffCI([]float64{math.NaN()}, []float64{1})
	if d.Pairs != 0 || d.Excluded != 1 || !math.IsNaN(d.Mean) || d.CI95.Defined() {
		t.Errorf("paired diff with no pair = %+v, want 0 pairs, NaN", d)
	}
	defer func() {
		if recover() == nil {
			t.Error("PairedDiffCI of different lengths did not panic")
		}
	}()
	PairedDiffCI([]float64{1}, []float64{1, 2})
}

func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = rng.ExpFloat64()
	}
	a, b := BootstrapCI(xs), BootstrapCI(slices.Clone(xs))
	if a != b {
		t.Fatalf("same data, different intervals: %v vs %v", a, b)
	}
	other := Bootstrap{Resamples: Resamples, Seed: 12345}.MeanCI(xs)
	if other == a {
		t.Fatalf("another seed gave the identical interval %v: is the seed used?", a)
	}
	if math.Abs(other.Lo-a.Lo) > 0.1*a.HalfWidth() || math.Abs(other.Hi-a.Hi) > 0.1*a.HalfWidth() {
		t.Fatalf("two seeds disagree by more than the Monte-Carlo error: %v vs %v", a, other)
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{10, 20, 30, 40, 50}
	for _, c := range []struct{ p, want float64 }{{0, 10}, {0.25, 20}, {0.5, 30}, {0.1, 14}, {1, 50}, {0.975, 49}} {
		if got := quantile(s, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
}

func BenchmarkBootstrapCI100(b *testing.B) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(i % 7)
	}
	for b.Loop() {
		BootstrapCI(xs)
	}
}

func TestIntervalJSON(t *testing.T) {
	for _, c := range []struct {
		iv   Interval
		want string
	}{{Interval{1, 2.5}, `{"lo":1,"hi":2.5}`}, {undefined, `{"lo":null,"hi":null}`}} {
		b, err := json.Marshal(c.iv)
		if err != nil || string(b) != c.want {
			t.Fatalf("Marshal(%v) = %s, %v; want %s", c.iv, b, err, c.want)
		}
		var back Interval
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back != c.iv && (back.Defined() || c.iv.Defined()) {
			t.Fatalf("round trip of %v gave %v", c.iv, back)
		}
	}
}
