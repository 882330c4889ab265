package stats

import (
	"math"
	"slices"
)

// The measurements behind BENCHMARKS.md's "what predicts …" tables fit
// small regressions: which visible signals predict an outcome on data
// they were not fitted on. Rows of xs are feature vectors that carry
// their own intercept column; ridge penalizes every weight alike.

// FitLinear returns the ridge least-squares weights w minimizing
// Σ (y[i] − w·xs[i])² + ridge·|w|².
func FitLinear(xs [][]float64, y []float64, ridge float64) []float64 {
	d := len(xs[0])
	a, b := ridgeSystem(d, ridge), make([]float64, d)
	for i, x := range xs {
		for k := range x {
			b[k] += y[i] * x[k]
			for l := range x {
				a[k][l] += x[k] * x[l]
			}
		}
	}
	return solveLinear(a, b)
}

// FitLogistic returns the weights of a logistic regression of y on xs
// with a ridge penalty (maximum penalized likelihood, by Newton's method).
func FitLogistic(xs [][]float64, y []bool, ridge float64) []float64 {
	d := len(xs[0])
	w := make([]float64, d)
	for range 50 {
		h, g := ridgeSystem(d, ridge), make([]float64, d)
		for k := range g {
			g[k] = ridge * w[k]
		}
		for i, x := range xs {
			p := 1 / (1 + math.Exp(-Dot(w, x)))
			r := p - b2f(y[i])
			for k := range x {
				g[k] += r * x[k]
				for l := range x {
					h[k][l] += p * (1 - p) * x[k] * x[l]
				}
			}
		}
		step := solveLinear(h, g)
		size := 0.0
		for k := range w {
			w[k] -= step[k]
			size = math.Max(size, math.Abs(step[k]))
		}
		if size < 1e-9 {
			break
		}
	}
	return w
}

// Dot returns w·x.
func Dot(w, x []float64) float64 {
	s := 0.0
	for k := range x {
		s += w[k] * x[k]
	}
	return s
}

// AUC returns the area under the ROC curve of scores for the positive
// rows: the probability that a positive row scores above a negative one,
// ties counting half. NaN when either class is empty.
func AUC(scores []float64, positive []bool) float64 {
	var pos, neg []float64
	for i, s := range scores {
		if positive[i] {
			pos = append(pos, s)
		} else {
			neg = append(neg, s)
		}
	}
	if len(pos) == 0 || len(neg) == 0 {
		return math.NaN()
	}
	slices.Sort(neg)
	sum := 0.0
	for _, p := range pos {
		lo, _ := slices.BinarySearch(neg, p)
		hi := lo
		for hi < len(neg) && neg[hi] == p {
			hi++
		}
		sum += float64(lo) + float64(hi-lo)/2
	}
	return sum / float64(len(pos)*len(neg))
}

// ridgeSystem returns ridge·I, d × d.
func ridgeSystem(d int, ridge float64) [][]float64 {
	a := make([][]float64, d)
	for k := range a {
		a[k] = make([]float64, d)
		a[k][k] = ridge
	}
	return a
}

// solveLinear returns x with a·x = b, by Gaussian elimination with
// partial pivoting (a is positive definite wherever it is used here).
func solveLinear(a [][]float64, b []float64) []float64 {
	n := len(b)
	m := make([][]float64, n)
	for i := range m {
		m[i] = append(slices.Clone(a[i]), b[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		for r := c + 1; r < n; r++ {
			k := m[r][c] / m[c][c]
			for l := c; l <= n; l++ {
				m[r][l] -= k * m[c][l]
			}
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := m[r][n]
		for l := r + 1; l < n; l++ {
			s -= m[r][l] * x[l]
		}
		x[r] = s / m[r][r]
	}
	return x
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Design maps feature vectors to the rows the fits take: an intercept
// column, then each feature standardized by the mean and standard
// deviation of the rows it was made from, leaving out the features
// constant there (they carry nothing to fit).
type Design struct {
	mean, sd []float64
}

// NewDesign returns the design of rows (each of the same length).
func NewDesign(rows [][]float64) Design {
	d := len(rows[0])
	g := Design{make([]float64, d), make([]float64, d)}
	n := float64(len(rows))
	for k := range d {
		for _, x := range rows {
			g.mean[k] += x[k] / n
		}
		for _, x := range rows {
			g.sd[k] += (x[k] - g.mean[k]) * (x[k] - g.mean[k]) / n
		}
		g.sd[k] = math.Sqrt(g.sd[k])
	}
	return g
}

// Row returns x's row: 1, then x's non-constant features standardized.
func (g Design) Row(x []float64) []float64 {
	out := []float64{1}
	for k, v := range x {
		if g.sd[k] > 1e-9 {
			out = append(out, (v-g.mean[k])/g.sd[k])
		}
	}
	return out
}
