package policy

import (
	"fmt"
	"math"
)

// Adam is the Adam optimizer (Kingma & Ba 2015) with bias correction, over a
// flat parameter vector:
//
//	m ← β1·m + (1−β1)·g,  v ← β2·v + (1−β2)·g²,  t ← t+1
//	θ ← θ − LR · (m / (1−β1ᵗ)) / (√(v / (1−β2ᵗ)) + ε)
type Adam struct {
	LR, Beta1, Beta2, Eps float64
	// M and V are the first and second moment estimates.
	M, V []float64
	// T counts the steps taken.
	T int
}

// NewAdam returns an Adam optimizer for n parameters with learning rate lr
// and β1 = 0.9, β2 = 0.999, ε = 1e-8.
func NewAdam(n int, lr float64) *Adam {
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, M: make([]float64, n), V: make([]float64, n)}
}

// Step applies one update to params given the gradient grad.
func (a *Adam) Step(params, grad []float64) error {
	if len(params) != len(a.M) || len(grad) != len(a.M) || len(a.V) != len(a.M) {
		return fmt.Errorf("policy: Adam over %d parameters given %d parameters and %d gradients", len(a.M), len(params), len(grad))
	}
	a.T++
	c1 := 1 - math.Pow(a.Beta1, float64(a.T))
	c2 := 1 - math.Pow(a.Beta2, float64(a.T))
	b1, b2 := a.Beta1, a.Beta2
	m, v := a.M, a.V[:len(a.M)]
	params, grad = params[:len(m)], grad[:len(m)]
	for i, g := range grad {
		mi := b1*m[i] + (1-b1)*g
		vi := b2*v[i] + (1-b2)*g*g
		m[i], v[i] = mi, vi
		params[i] -= a.LR * (mi / c1) / (math.Sqrt(vi/c2) + a.Eps)
	}
	return nil
}

// GradNorm returns the Euclidean norm of g, summed in index order.
func GradNorm(g []float64) float64 {
	var s float64
	for _, x := range g {
		s += x * x
	}
	return math.Sqrt(s)
}

// ClipGradNorm scales g in place so that its norm is at most maxNorm, and
// returns the norm before clipping. maxNorm ≤ 0 disables clipping.
func ClipGradNorm(g []float64, maxNorm float64) float64 {
	norm := GradNorm(g)
	if maxNorm > 0 && norm > maxNorm {
		s := maxNorm / norm
		for i := range g {
			g[i] *= s
		}
	}
	return norm
}
