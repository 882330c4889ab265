package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// LogProbs writes into dst (len NumDecisions) the log-probabilities of
// agent's decisions given its observation features obs (len ObsSize):
// a log-softmax over the legal decisions, −Inf for the illegal ones. A nil
// mask means every decision is legal; otherwise len(mask) must be
// NumDecisions with at least one true entry.
//
// LogProbs is safe for concurrent use (its scratch space is pooled) and
// gives bit-identical results to the batched [Policy.Forward] followed by
// [LogSoftmax].
func (p *Policy) LogProbs(agent int, obs []float64, mask []bool, dst []float64) error {
	if err := p.checkRow(agent, obs); err != nil {
		return err
	}
	if len(dst) != p.cfg.NumDecisions {
		return fmt.Errorf("policy: dst has length %d, want %d", len(dst), p.cfg.NumDecisions)
	}
	bufp, _ := p.scratch.Get().(*[]float64)
	if bufp == nil {
		b := make([]float64, p.cfg.InputSize()+2*p.maxW)
		bufp = &b
	}
	buf := *bufp
	in := p.cfg.InputSize()
	x := buf[:in]
	h0, h1 := buf[in:in+p.maxW], buf[in+p.maxW:in+2*p.maxW]
	p.fillInput(agent, obs, x)
	n := p.net(agent)
	cur := x
	last := len(p.layers) - 1
	for l, ly := range p.layers {
		out := h0[:ly.out]
		if l == last {
			out = dst
		}
		copy(out, p.bias(n, l))
		gemmNT(1, ly.out, ly.in, cur, p.weight(n, l), out)
		if l != last {
			tanhInPlace(out)
		}
		cur = out
		h0, h1 = h1, h0
	}
	p.scratch.Put(bufp)
	return LogSoftmax(dst, mask, dst)
}

func tanhInPlace(v []float64) {
	for i, x := range v {
		v[i] = math.Tanh(x)
	}
}

// LogSoftmax writes the masked log-softmax of logits into dst (which may
// be logits itself): log p_i = z_i − log Σ_{j legal} exp z_j for legal i,
// −Inf for illegal i. A nil mask means all legal. It fails if the lengths
// differ, no decision is legal, or a legal logit is not finite.
func LogSoftmax(logits []float64, mask []bool, dst []float64) error {
	if len(dst) != len(logits) {
		return fmt.Errorf("policy: log-softmax: dst has length %d, logits %d", len(dst), len(logits))
	}
	if mask != nil && len(mask) != len(logits) {
		return fmt.Errorf("policy: mask has length %d, want %d", len(mask), len(logits))
	}
	maxZ := math.Inf(-1)
	legal := 0
	for i, z := range logits {
		if mask != nil && !mask[i] {
			continue
		}
		if math.IsNaN(z) || math.IsInf(z, 0) {
			return fmt.Errorf("policy: logit %d is %v (diverged parameters?)", i, z)
		}
		legal++
		if z > maxZ {
			maxZ = z
		}
	}
	if legal == 0 {
		return errors.New("policy: mask allows no decision")
	}
	var sum float64
	for i, z := range logits {
		if mask == nil || mask[i] {
			sum += math.Exp(z - maxZ)
		}
	}
	lse := maxZ + math.Log(sum)
	for i, z := range logits {
		if mask == nil || mask[i] {
			dst[i] = z - lse
		} else {
			dst[i] = math.Inf(-1)
		}
	}
	return nil
}

// Sample draws a decision from the distribution whose log-probabilities
// are logp (as written by LogProbs), using one rng.Float64(). Decisions
// with logp = −Inf are never drawn. It returns −1 only if no entry is
// finite.
func Sample(logp []float64, rng *rand.Rand) int {
	u := rng.Float64()
	var cum float64
	lastLegal := -1
	for i, lp := range logp {
		if math.IsInf(lp, -1) || math.IsNaN(lp) {
			continue
		}
		lastLegal = i
		cum += math.Exp(lp)
		if u < cum {
			return i
		}
	}
	return lastLegal // rounding left u ≥ the total; the last legal decision
}

// Greedy returns the decision with the highest log-probability (the lowest
// index among ties), or −1 if logp has no finite entry.
func Greedy(logp []float64) int {
	best := -1
	for i, lp := range logp {
		if math.IsInf(lp, -1) || math.IsNaN(lp) {
			continue
		}
		if best < 0 || lp > logp[best] {
			best = i
		}
	}
	return best
}

// Workspace holds the activations of one batched forward pass, for the
// backward pass that follows, and scratch space reused across calls. The
// zero value is ready to use. A Workspace must not be used by two
// goroutines at once; give each goroutine its own.
type Workspace struct {
	owner   *Policy
	rows    int
	order   []int   // grouped position → original row
	groups  []group // contiguous ranges of grouped positions, one network each
	tileBuf []group
	x       []float64 // inputs, grouped order (rows × InputSize)
	acts    [][]float64
	logits  []float64 // original order (rows × NumDecisions)
	// backward scratch
	dy, dx, at, bt, wt []float64
	counts             []int
}

type group struct{ net, start, end int }

// tileRows is the most rows processed as one matrix: a tile's activations
// stay in cache through all layers. Tiles are cut from the start of each
// network's group, so they depend only on the batch.
const tileRows = 64

// tiles splits the groups into tiles of at most tileRows rows.
func (ws *Workspace) tiles() []group {
	ws.tileBuf = ws.tileBuf[:0]
	for _, g := range ws.groups {
		for s := g.start; s < g.end; s += tileRows {
			ws.tileBuf = append(ws.tileBuf, group{g.net, s, min(s+tileRows, g.end)})
		}
	}
	return ws.tileBuf
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// Forward computes the logits of a batch of rows, row r being agent
// agents[r] observing obs[r], and returns them row-major (len(obs) ×
// NumDecisions, in row order). Rows are grouped by network internally so
// that each network processes its rows as one matrix. The result and the
// activations kept for [Policy.Backward] live in ws and are overwritten by
// the next Forward on ws.
func (p *Policy) Forward(ws *Workspace, agents []int, obs [][]float64) ([]float64, error) {
	m := len(obs)
	if len(agents) != m {
		return nil, fmt.Errorf("policy: %d agents for %d observations", len(agents), m)
	}
	for r := range obs {
		if err := p.checkRow(agents[r], obs[r]); err != nil {
			return nil, fmt.Errorf("row %d: %w", r, err)
		}
	}
	ws.owner, ws.rows = p, m
	// Group rows by network (stable counting sort).
	nets := p.cfg.NumNets()
	if cap(ws.order) < m {
		ws.order = make([]int, m)
	}
	ws.order = ws.order[:m]
	ws.groups = ws.groups[:0]
	if nets == 1 {
		for r := range ws.order {
			ws.order[r] = r
		}
		if m > 0 {
			ws.groups = append(ws.groups, group{0, 0, m})
		}
	} else {
		if cap(ws.counts) < nets+1 {
			ws.counts = make([]int, nets+1)
		}
		counts := ws.counts[:nets+1]
		clear(counts)
		for _, a := range agents {
			counts[a+1]++
		}
		for n := 0; n < nets; n++ {
			if counts[n+1] > 0 {
				ws.groups = append(ws.groups, group{n, counts[n], counts[n] + counts[n+1]})
			}
			counts[n+1] += counts[n]
		}
		for r, a := range agents {
			ws.order[counts[a]] = r
			counts[a]++
		}
	}
	in := p.cfg.InputSize()
	ws.x = grow(ws.x, m*in)
	for pos, r := range ws.order {
		p.fillInput(agents[r], obs[r], ws.x[pos*in:(pos+1)*in])
	}
	if len(ws.acts) != len(p.layers) {
		ws.acts = make([][]float64, len(p.layers))
	}
	for l, ly := range p.layers {
		ws.acts[l] = grow(ws.acts[l], m*ly.out)
	}
	last := len(p.layers) - 1
	for _, t := range ws.tiles() {
		rows := t.end - t.start
		cur := ws.x[t.start*in : t.end*in]
		for l, ly := range p.layers {
			g := t
			out := ws.acts[l][g.start*ly.out : g.end*ly.out]
			b := p.bias(g.net, l)
			for r := 0; r < rows; r++ {
				copy(out[r*ly.out:(r+1)*ly.out], b)
			}
			gemmNT(rows, ly.out, ly.in, cur, p.weight(g.net, l), out)
			if l != last {
				tanhInPlace(out)
			}
			cur = out
		}
	}
	d := p.cfg.NumDecisions
	ws.logits = grow(ws.logits, m*d)
	final := ws.acts[last]
	for pos, r := range ws.order {
		copy(ws.logits[r*d:(r+1)*d], final[pos*d:(pos+1)*d])
	}
	return ws.logits, nil
}

// Backward adds to grad (len NumParams, the layout of Params) the gradient
// of a loss with respect to the parameters, given dLogits, the loss's
// gradient with respect to the logits of the rows of the last Forward on ws
// (row-major, same shape as Forward's result). p must be the policy that
// ran that Forward. Summation order is fixed, so results are reproducible.
func (p *Policy) Backward(ws *Workspace, dLogits, grad []float64) error {
	if ws.owner != p {
		return errors.New("policy: Backward on a workspace whose last Forward was another policy's (or none)")
	}
	d := p.cfg.NumDecisions
	if len(dLogits) != ws.rows*d {
		return fmt.Errorf("policy: dLogits has length %d, want %d rows × %d", len(dLogits), ws.rows, d)
	}
	if len(grad) != len(p.params) {
		return fmt.Errorf("policy: grad has length %d, want %d", len(grad), len(p.params))
	}
	m := ws.rows
	ws.dy = grow(ws.dy, m*p.maxW)
	ws.dx = grow(ws.dx, m*p.maxW)
	ws.at = grow(ws.at, m*p.maxW)
	ws.bt = grow(ws.bt, m*p.maxW)
	ws.wt = grow(ws.wt, p.maxW*p.maxW)
	in0 := p.cfg.InputSize()
	for _, g := range ws.tiles() {
		rows := g.end - g.start
		dy := ws.dy[:rows*d]
		for i := 0; i < rows; i++ {
			r := ws.order[g.start+i]
			copy(dy[i*d:(i+1)*d], dLogits[r*d:(r+1)*d])
		}
		for l := len(p.layers) - 1; l >= 0; l-- {
			ly := p.layers[l]
			var input []float64
			if l == 0 {
				input = ws.x[g.start*in0 : g.end*in0]
			} else {
				input = ws.acts[l-1][g.start*ly.in : g.end*ly.in]
			}
			off := g.net*p.netSize + ly.wOff
			gw := grad[off : off+ly.out*ly.in]
			gb := grad[g.net*p.netSize+ly.bOff:][:ly.out]
			// dW += dyᵀ·input, as (dyᵀ)·(inputᵀ)ᵀ so the inner sums run over rows.
			at := ws.at[:ly.out*rows]
			bt := ws.bt[:ly.in*rows]
			transpose(rows, ly.out, dy, at)
			transpose(rows, ly.in, input, bt)
			gemmNT(ly.out, ly.in, rows, at, bt, gw)
			for o := range gb {
				col := at[o*rows : (o+1)*rows]
				var s float64
				for _, v := range col {
					s += v
				}
				gb[o] += s
			}
			if l == 0 {
				break
			}
			// dx = dy·W = dy·(Wᵀ)ᵀ, then through tanh: dx ⊙ (1 − h²).
			wt := ws.wt[:ly.in*ly.out]
			transpose(ly.out, ly.in, p.weight(g.net, l), wt)
			dx := ws.dx[:rows*ly.in]
			clear(dx)
			gemmNT(rows, ly.in, ly.out, dy, wt, dx)
			for i, h := range input {
				dx[i] *= 1 - h*h
			}
			ws.dy, ws.dx = ws.dx, ws.dy
			dy = dx
		}
	}
	return nil
}
