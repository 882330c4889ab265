package wasm

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/wasmabi"
)

// RewardFunc is a reward function served by a Wasm module. It keeps a pool
// of instances, makes a new one when all are busy, and is safe for
// concurrent use. An instance that fails is discarded; the next Score makes
// a new one.
type RewardFunc struct {
	m          *module
	params     []byte
	specJSON   []byte
	name       string
	components []string
	metrics    []string

	mu     sync.Mutex
	idle   []*instance
	closed bool
}

var (
	_ core.RewardFunc   = (*RewardFunc)(nil)
	_ core.MetricReader = (*RewardFunc)(nil)
)

// maxIdle bounds the instances a reward function keeps between calls.
func maxIdle() int { return 2 * runtime.GOMAXPROCS(0) }

func newRewardFunc(ctx context.Context, m *module, params map[string]any) (*RewardFunc, error) {
	if err := checkExports(m.name, m.cm, rewardExports, "a reward module"); err != nil {
		return nil, err
	}
	p, err := marshalParams(m.name, params)
	if err != nil {
		return nil, err
	}
	in, raw, err := m.openInstance(ctx, openReward, p)
	if err != nil {
		return nil, err
	}
	spec, err := m.parseSpec(raw)
	if err == nil && spec.Reward == nil {
		err = &CallError{Module: m.name, Call: "open", Reason: "the module serves no reward function (its spec has no \"reward\")"}
	}
	if err != nil {
		in.discard()
		return nil, err
	}
	return &RewardFunc{m: m, params: p, specJSON: raw, name: spec.Reward.Name,
		components: spec.Reward.Components, metrics: spec.Reward.Metrics, idle: []*instance{in}}, nil
}

// Name returns the name the module reported.
func (r *RewardFunc) Name() string { return r.name }

// Components returns the component names the module reported.
func (r *RewardFunc) Components() []string { return slices.Clone(r.components) }

// RequiredMetrics returns the episode metrics the module declared it needs
// (its spec's "reward.metrics"; none when absent), which the runtime
// checks against the env's before training (core.MetricReader).
func (r *RewardFunc) RequiredMetrics() []string { return slices.Clone(r.metrics) }

func (r *RewardFunc) get() (*instance, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("wasm module %s: reward function closed", r.m.name)
	}
	if n := len(r.idle); n > 0 {
		in := r.idle[n-1]
		r.idle = r.idle[:n-1]
		r.mu.Unlock()
		return in, nil
	}
	r.mu.Unlock()
	in, raw, err := r.m.openInstance(context.Background(), openReward, r.params)
	if err != nil {
		return nil, err
	}
	if string(raw) != string(r.specJSON) {
		in.discard()
		return nil, &CallError{Module: r.m.name, Call: "open", Reason: "a new instance reported a different spec than the first", Discarded: true}
	}
	return in, nil
}

func (r *RewardFunc) put(in *instance) {
	if in.dead != nil {
		return
	}
	r.mu.Lock()
	if !r.closed && len(r.idle) < maxIdle() {
		r.idle = append(r.idle, in)
		in = nil
	}
	r.mu.Unlock()
	if in != nil {
		in.close()
	}
}

// Score scores ep in one of the pool's instances. Every returned component
// must be one of Components.
func (r *RewardFunc) Score(ep *core.Episode) (components, metrics map[string]float64, err error) {
	in, err := r.get()
	if err != nil {
		return nil, nil, err
	}
	defer r.put(in)
	call := wasmabi.AppendEpisode(nil, ep)
	if err := in.write(call); err != nil {
		return nil, nil, err
	}
	n, err := in.call("score", in.fns[fnScore], uint64(len(call)), 0)
	if err != nil {
		return nil, nil, err
	}
	components, metrics, err = wasmabi.DecodeScore(in.buf[:n])
	if err != nil {
		return nil, nil, in.fail("score", fmt.Errorf("malformed reply: %w", err))
	}
	for k := range components {
		if !slices.Contains(r.components, k) {
			return nil, nil, &CallError{Module: r.m.name, Call: "score", Reason: fmt.Sprintf("component %q is not among the declared components %v", k, r.components)}
		}
	}
	return components, metrics, nil
}

// Close releases the pooled instances and the module's runtime.
func (r *RewardFunc) Close() error {
	r.mu.Lock()
	idle := r.idle
	r.idle, r.closed = nil, true
	r.mu.Unlock()
	for _, in := range idle {
		in.close()
	}
	r.m.close(context.Background())
	return nil
}
