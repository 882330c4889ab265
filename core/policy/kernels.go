package policy

// gemmNT computes C += A·Bᵀ for row-major A (m×k), B (n×k) and C (m×n).
//
// Every element is accumulated the same way whatever m and n are: a fresh
// sum over t = 0, 1, …, k−1 in order, added to C at the end. So a row's
// result does not depend on which other rows share the call, and a
// one-row forward pass (rollouts) gives bit-identical logits to the batched
// one (training). Speed comes from register blocking (2 rows × 4 columns
// share their loads: 8 independent accumulators, 6 loads per 8
// multiply-adds) rather than from reordering sums.
func gemmNT(m, n, k int, a, b, c []float64) {
	if k == 0 {
		return
	}
	i := 0
	for ; i+2 <= m; i += 2 {
		a0 := a[i*k : i*k+k]
		a1 := a[(i+1)*k : (i+1)*k+k]
		a1 = a1[:len(a0)]
		c0 := c[i*n : i*n+n]
		c1 := c[(i+1)*n : (i+1)*n+n]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0 := b[j*k : j*k+k]
			b1 := b[(j+1)*k : (j+1)*k+k]
			b2 := b[(j+2)*k : (j+2)*k+k]
			b3 := b[(j+3)*k : (j+3)*k+k]
			b0, b1, b2, b3 = b0[:len(a0)], b1[:len(a0)], b2[:len(a0)], b3[:len(a0)]
			var s00, s01, s02, s03, s10, s11, s12, s13 float64
			for t := range a0 {
				x0, x1 := a0[t], a1[t]
				y0, y1, y2, y3 := b0[t], b1[t], b2[t], b3[t]
				s00 += x0 * y0
				s01 += x0 * y1
				s02 += x0 * y2
				s03 += x0 * y3
				s10 += x1 * y0
				s11 += x1 * y1
				s12 += x1 * y2
				s13 += x1 * y3
			}
			r0 := c0[j : j+4 : j+4]
			r0[0] += s00
			r0[1] += s01
			r0[2] += s02
			r0[3] += s03
			r1 := c1[j : j+4 : j+4]
			r1[0] += s10
			r1[1] += s11
			r1[2] += s12
			r1[3] += s13
		}
		for ; j < n; j++ {
			bj := b[j*k : j*k+k]
			bj = bj[:len(a0)]
			var s0, s1 float64
			for t := range a0 {
				s0 += a0[t] * bj[t]
				s1 += a1[t] * bj[t]
			}
			c0[j] += s0
			c1[j] += s1
		}
	}
	if i < m {
		a0 := a[i*k : i*k+k]
		c0 := c[i*n : i*n+n]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0 := b[j*k : j*k+k]
			b1 := b[(j+1)*k : (j+1)*k+k]
			b2 := b[(j+2)*k : (j+2)*k+k]
			b3 := b[(j+3)*k : (j+3)*k+k]
			b0, b1, b2, b3 = b0[:len(a0)], b1[:len(a0)], b2[:len(a0)], b3[:len(a0)]
			var s0, s1, s2, s3 float64
			for t, x := range a0 {
				s0 += x * b0[t]
				s1 += x * b1[t]
				s2 += x * b2[t]
				s3 += x * b3[t]
			}
			r0 := c0[j : j+4 : j+4]
			r0[0] += s0
			r0[1] += s1
			r0[2] += s2
			r0[3] += s3
		}
		for ; j < n; j++ {
			bj := b[j*k : j*k+k]
			bj = bj[:len(a0)]
			var s float64
			for t, x := range a0 {
				s += x * bj[t]
			}
			c0[j] += s
		}
	}
}

// transpose writes the transpose of row-major src (rows×cols) into dst
// (cols×rows).
func transpose(rows, cols int, src, dst []float64) {
	src = src[:rows*cols]
	dst = dst[:rows*cols]
	for r := 0; r < rows; r++ {
		row := src[r*cols : r*cols+cols]
		for c, v := range row {
			dst[c*rows+r] = v
		}
	}
}
