package stats

import (
	"math"
	"testing"
)

func TestAUC(t *testing.T) {
	if got := AUC([]float64{3, 2, 1, 0}, []bool{true, true, false, false}); got != 1 {
		t.Errorf("AUC of a perfect ranking = %v, want 1", got)
	}
	// Positives score 0 and 1, negatives 1 and 2: of the 4 pairs only the
	// tie (1, 1) counts, half.
	if got := AUC([]float64{0, 1, 1, 2}, []bool{true, true, false, false}); got != 0.125 {
		t.Errorf("AUC with a tie = %v, want 0.125", got)
	}
	if got := AUC([]float64{1, 2}, []bool{true, true}); !math.IsNaN(got) {
		t.Errorf("AUC without negatives = %v, want NaN", got)
	}
}

// TestFitLogistic recovers the log-odds of a sample whose rates are known:
// passing 1 in 5 in one group (−ln 4), 4 in 5 in the other (+ln 4); the
// sample is large enough that the ridge moves the fit by less than 0.01.
func TestFitLogistic(t *testing.T) {
	var xs [][]float64
	var y []bool
	for g := range 2 {
		for k := range 20000 {
			xs = append(xs, []float64{1, float64(g)})
			y = append(y, (g == 0 && k%5 == 0) || (g == 1 && k%5 != 0))
		}
	}
	w := FitLogistic(xs, y, 1)
	if want := -math.Log(4); math.Abs(w[0]-want) > 0.01 {
		t.Errorf("intercept %v, want %v", w[0], want)
	}
	if want := 2 * math.Log(4); math.Abs(w[1]-want) > 0.02 {
		t.Errorf("slope %v, want %v", w[1], want)
	}
}

// TestFitLinear recovers an exact line without a penalty, and shrinks it
// by the closed form of one centred feature with one.
func TestFitLinear(t *testing.T) {
	xs := [][]float64{{1, -1}, {1, 0}, {1, 1}, {1, 2}}
	y := []float64{-1, 1, 3, 5} // 1 + 2x
	w := FitLinear(xs, y, 0)
	if math.Abs(w[0]-1) > 1e-12 || math.Abs(w[1]-2) > 1e-12 {
		t.Errorf("w = %v, want [1 2]", w)
	}
	// y = 3x on x = ±1: the ridge λ gives Σxy / (Σx² + λ) = 6 / (2 + 1).
	w = FitLinear([][]float64{{-1}, {1}}, []float64{-3, 3}, 1)
	if math.Abs(w[0]-2) > 1e-12 {
		t.Errorf("ridge slope %v, want 2", w[0])
	}
}

func TestDesign(t *testing.T) {
	g := NewDesign([][]float64{{1, 5, 0}, {3, 5, 2}})
	got := g.Row([]float64{2, 7, 4})
	want := []float64{1, 0, 3} // intercept; (2−2)/1; the constant 5 left out; (4−1)/1
	if len(got) != len(want) {
		t.Fatalf("row %v, want %v", got, want)
	}
	for k := range want {
		if math.Abs(got[k]-want[k]) > 1e-12 {
			t.Fatalf("row %v, want %v", got, want)
		}
	}
}
