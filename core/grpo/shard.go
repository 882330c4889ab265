package grpo

// The parallel plumbing of an update. A minibatch is split into a number
// of contiguous shards that depends only on its size (never on the
// machine); shards run in parallel, each with its own scratch space, and
// their gradients and statistics are summed in shard order, so an update
// is bit-for-bit the same whatever GOMAXPROCS is.

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/troupe-dev/troupe/core/policy"
)

// shard is one parallel slice of a minibatch, with its own scratch space.
type shard struct {
	ws      policy.Workspace
	grad    []float64
	agents  []int
	obs     [][]float64
	dLogits []float64
	lp      []float64
	// statistics of the last pass
	loss, kl, ent float64
	clipped       int
	err           error
}

// maxShards is the most shards a minibatch is split into; rowsPerShard is
// the fewest rows a shard gets before fewer shards are used.
const (
	maxShards    = 8
	rowsPerShard = 64
)

// numShards depends only on the number of rows, never on the machine.
func numShards(rows int) int {
	return max(1, min(maxShards, rows/rowsPerShard))
}

// referenceLogProbs fills o.refLp with log π_ref(a|o) of every decision
// (the reference policy is frozen, so once per Update suffices) and resets
// o.order to the identity permutation.
func (o *Optimizer) referenceLogProbs(batch []Decision) error {
	n := len(batch)
	if cap(o.refLp) < n {
		o.refLp = make([]float64, n)
		o.order = make([]int, n)
	}
	o.refLp, o.order = o.refLp[:n], o.order[:n]
	for i := range o.order {
		o.order[i] = i
	}
	return o.forEachShard(o.order, func(s *shard, rows []int) error {
		return o.refShard(s, batch, rows)
	})
}

// forEachShard splits rows into numShards(len(rows)) contiguous shards and
// runs f on each, in parallel, returning the first shard's error in shard
// order.
func (o *Optimizer) forEachShard(rows []int, f func(s *shard, rows []int) error) error {
	ns := numShards(len(rows))
	workers := min(ns, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for k := 0; k < ns; k++ {
			s := o.shards[k]
			s.err = f(s, rows[k*len(rows)/ns:(k+1)*len(rows)/ns])
		}
	} else {
		var wg sync.WaitGroup
		next := make(chan int, ns)
		for k := 0; k < ns; k++ {
			next <- k
		}
		close(next)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range next {
					s := o.shards[k]
					s.err = f(s, rows[k*len(rows)/ns:(k+1)*len(rows)/ns])
				}
			}()
		}
		wg.Wait()
	}
	for k := 0; k < ns; k++ {
		if err := o.shards[k].err; err != nil {
			return err
		}
	}
	return nil
}

// load gathers a shard's rows into its input slices.
func (s *shard) load(batch []Decision, rows []int) {
	s.agents = s.agents[:0]
	s.obs = s.obs[:0]
	for _, r := range rows {
		s.agents = append(s.agents, batch[r].Agent)
		s.obs = append(s.obs, batch[r].Obs)
	}
}

// refShard computes the reference policy's log-probability of each row's
// taken action.
func (o *Optimizer) refShard(s *shard, batch []Decision, rows []int) error {
	s.load(batch, rows)
	logits, err := o.ref.Forward(&s.ws, s.agents, s.obs)
	if err != nil {
		return err
	}
	nd := o.pol.Config().NumDecisions
	if cap(s.lp) < nd {
		s.lp = make([]float64, nd)
	}
	lp := s.lp[:nd]
	for i, r := range rows {
		if err := policy.LogSoftmax(logits[i*nd:(i+1)*nd], batch[r].Mask, lp); err != nil {
			return fmt.Errorf("grpo: decision %d: reference policy: %w", r, err)
		}
		o.refLp[r] = lp[batch[r].Action]
	}
	return nil
}

// lossAndGrad evaluates the mean loss over rows and writes its gradient
// into grad. It returns the sums (not means) of loss, k3 and entropy over
// the rows and the number of clipped rows.
func (o *Optimizer) lossAndGrad(batch []Decision, rows []int, grad []float64) (loss, kl, ent float64, clipped int, err error) {
	inv := 1 / float64(len(rows))
	err = o.forEachShard(rows, func(s *shard, rows []int) error {
		return o.gradShard(s, batch, rows, inv)
	})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	ns := numShards(len(rows))
	copy(grad, o.shards[0].grad)
	for k := 0; k < ns; k++ {
		s := o.shards[k]
		if k > 0 {
			for i, g := range s.grad {
				grad[i] += g
			}
		}
		loss += s.loss
		kl += s.kl
		ent += s.ent
		clipped += s.clipped
	}
	return loss, kl, ent, clipped, nil
}

// gradShard runs forward, the per-decision loss and backward for a shard,
// leaving the gradient (scaled by inv, 1/minibatch size) in s.grad and the
// statistic sums in s.
func (o *Optimizer) gradShard(s *shard, batch []Decision, rows []int, inv float64) error {
	s.load(batch, rows)
	clear(s.grad)
	s.loss, s.kl, s.ent, s.clipped = 0, 0, 0, 0
	logits, err := o.pol.Forward(&s.ws, s.agents, s.obs)
	if err != nil {
		return err
	}
	nd := o.pol.Config().NumDecisions
	if cap(s.dLogits) < len(rows)*nd {
		s.dLogits = make([]float64, len(rows)*nd)
	}
	s.dLogits = s.dLogits[:len(rows)*nd]
	if cap(s.lp) < nd {
		s.lp = make([]float64, nd)
	}
	lp := s.lp[:nd]
	for i, r := range rows {
		d := &batch[r]
		if err := policy.LogSoftmax(logits[i*nd:(i+1)*nd], d.Mask, lp); err != nil {
			return fmt.Errorf("grpo: decision %d: %w", r, err)
		}
		dz := s.dLogits[i*nd : (i+1)*nd]
		l, k3, h, clip := o.decisionLoss(d, lp, o.refLp[r], inv, dz)
		s.loss += l
		s.kl += k3
		s.ent += h
		if clip {
			s.clipped++
		}
	}
	return o.pol.Backward(&s.ws, s.dLogits, s.grad)
}
