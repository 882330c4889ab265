package grpo

import (
	"math"
	"strings"
	"testing"
)

func TestGroupAdvantagesHandComputed(t *testing.T) {
	// Group 0: [1 2 3 6], mean 3, population variance (4+1+0+9)/4 = 3.5.
	// Group 1: [0 4], mean 2, population std 2.
	// Group 2: [5 5 5], flat.
	// All nine rewards: sum 31, Σr² = 141, population variance
	// 141/9 − (31/9)² = 308/81, std √308/9.
	groups := [][]float64{{1, 2, 3, 6}, {0, 4}, {5, 5, 5}}
	s35 := math.Sqrt(3.5)
	bstd := math.Sqrt(308) / 9
	// Differences from each baseline:
	mean := [][]float64{{-2, -1, 0, 3}, {-2, 2}}
	// rloo: r − (sum − r)/(G−1): group 0 sum 12: 1−11/3, 2−10/3, 3−9/3, 6−6/3.
	rloo := [][]float64{{-8.0 / 3, -4.0 / 3, 0, 4}, {-4, 4}}
	maxb := [][]float64{{-5, -4, -3, 0}, {-4, 0}}
	scales := map[Scale][]float64{"none": {1, 1}, "group": {s35, 2}, "batch": {bstd, bstd}}
	for bname, diffs := range map[Baseline][][]float64{"mean": mean, "rloo": rloo, "max": maxb} {
		for sname, div := range scales {
			adv, zero, err := GroupAdvantages(groups, bname, sname)
			if err != nil {
				t.Fatal(err)
			}
			if zero != 1 {
				t.Errorf("%s/%s: zeroStdGroups = %d, want 1", bname, sname, zero)
			}
			for g := 0; g < 2; g++ {
				for i, d := range diffs[g] {
					want := d / div[g]
					if math.Abs(adv[g][i]-want) > 1e-12 {
						t.Errorf("%s/%s: adv[%d][%d] = %v, want %v", bname, sname, g, i, adv[g][i], want)
					}
				}
			}
			for i, a := range adv[2] {
				if a != 0 {
					t.Errorf("%s/%s: flat group member %d has advantage %v", bname, sname, i, a)
				}
			}
		}
	}
}

func TestGroupAdvantagesFlatGroups(t *testing.T) {
	for _, b := range []Baseline{"mean", "rloo", "max"} {
		for _, s := range []Scale{"group", "batch", "none"} {
			adv, zero, err := GroupAdvantages([][]float64{{7}, {0.1 + 0.2, 0.3}, {-1, -1, -1, -1}}, b, s)
			if err != nil {
				t.Fatal(err)
			}
			if zero != 3 {
				t.Errorf("%s/%s: zeroStdGroups = %d, want 3", b, s, zero)
			}
			for g := range adv {
				for i, a := range adv[g] {
					if a != 0 {
						t.Errorf("%s/%s: adv[%d][%d] = %v, want 0", b, s, g, i, a)
					}
				}
			}
		}
	}
	// Tiny but real differences are not flat.
	adv, zero, _ := GroupAdvantages([][]float64{{1e-6, 2e-6}}, "mean", "group")
	if zero != 0 || math.Abs(adv[0][0]+1) > 1e-9 || math.Abs(adv[0][1]-1) > 1e-9 {
		t.Errorf("small rewards: adv %v zero %d", adv, zero)
	}
}

func TestGroupAdvantagesErrors(t *testing.T) {
	cases := []struct {
		groups   [][]float64
		baseline Baseline
		scale    Scale
		want     string
	}{
		{[][]float64{{1, 2}}, "median", "group", `unknown baseline "median"`},
		{[][]float64{{1, 2}}, "mean", "std", `unknown scale "std"`},
		{[][]float64{{1, 2}, {}}, "mean", "group", "group 1 is empty"},
		{[][]float64{{1, math.NaN()}}, "mean", "group", "group 0 reward 1 is NaN"},
		{[][]float64{{math.Inf(1)}}, "mean", "none", "group 0 reward 0 is +Inf"},
	}
	for _, c := range cases {
		_, _, err := GroupAdvantages(c.groups, c.baseline, c.scale)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("GroupAdvantages(%v, %q, %q): error %v, want %q", c.groups, c.baseline, c.scale, err, c.want)
		}
	}
	adv, zero, err := GroupAdvantages(nil, "mean", "batch")
	if err != nil || len(adv) != 0 || zero != 0 {
		t.Errorf("no groups: %v %d %v", adv, zero, err)
	}
}
