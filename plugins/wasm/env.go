package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/wasmabi"
)

// EnvSource is a compiled env module. Open makes one instance per env; the
// source is safe for concurrent use.
type EnvSource struct {
	m        *module
	params   []byte
	spec     core.EnvSpec
	specJSON []byte

	mu     sync.Mutex
	spare  *instance // the instance LoadEnv opened, handed to the first Open
	closed bool
}

var _ core.EnvSource = (*EnvSource)(nil)

func newEnvSource(ctx context.Context, m *module, params map[string]any) (*EnvSource, error) {
	if err := checkExports(m.name, m.cm, envExports, "an env module"); err != nil {
		return nil, err
	}
	p, err := marshalParams(m.name, params)
	if err != nil {
		return nil, err
	}
	in, raw, err := m.openInstance(ctx, openEnv, p)
	if err != nil {
		return nil, err
	}
	spec, err := m.parseSpec(raw)
	if err == nil && spec.Env == nil {
		err = &CallError{Module: m.name, Call: "open", Reason: "the module serves no env (its spec has no \"env\")"}
	}
	if err != nil {
		in.discard()
		return nil, err
	}
	return &EnvSource{m: m, params: p, spec: *spec.Env, specJSON: raw, spare: in}, nil
}

// Spec returns the env's spec as the module reported it, with the
// capabilities its spec JSON lists.
func (s *EnvSource) Spec() core.EnvSpec { return s.spec }

// compileDuration is how long compiling the module took (short on a
// compilation cache hit).
func (s *EnvSource) compileDuration() time.Duration { return s.m.compileTime }

// Open returns a new env backed by its own instance, an [*Env].
func (s *EnvSource) Open() (core.Env, error) { return s.openTyped() }

// openTyped is Open with the concrete result type.
func (s *EnvSource) openTyped() (*Env, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("wasm module %s: source closed", s.m.name)
	}
	in := s.spare
	s.spare = nil
	s.mu.Unlock()
	e := &Env{src: s, shape: wasmabi.ShapeOf(s.spec), in: in}
	if in == nil {
		if err := e.instantiate(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Close closes the module's runtime and every instance still open.
func (s *EnvSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.spare != nil {
		s.spare.close()
		s.spare = nil
	}
	s.m.close(context.Background())
	return nil
}

// Env is one env instance in a Wasm module. Like every core.Env it is used
// by one goroutine at a time. It has every optional method (Truncate,
// Prompt, Simulate, Baseline); its spec's Capabilities say which of them
// the module implements, and the others return errors.
type Env struct {
	src   *EnvSource
	shape wasmabi.Shape
	in    *instance // nil after a failure, until the next Reset
	// lost says why the last instance was discarded.
	lost error
	// slab holds the decoded observations, many steps per allocation.
	slab   wasmabi.Slab
	closed bool
}

var _ core.Env = (*Env)(nil)

// instantiate opens a fresh instance and checks that it reports the same
// spec as the first.
func (e *Env) instantiate() error {
	in, raw, err := e.src.m.openInstance(context.Background(), openEnv, e.src.params)
	if err != nil {
		return err
	}
	if !bytes.Equal(raw, e.src.specJSON) {
		in.discard()
		return &CallError{Module: e.src.m.name, Call: "open", Reason: "a new instance reported a different spec than the first", Discarded: true}
	}
	e.in = in
	return nil
}

// live returns the current instance or an error saying why there is none.
func (e *Env) live(call string) (*instance, error) {
	switch {
	case e.closed:
		return nil, &CallError{Module: e.src.m.name, Call: call, Reason: "env closed"}
	case e.in == nil:
		return nil, &CallError{Module: e.src.m.name, Call: call, Reason: fmt.Sprintf("no live instance (discarded after: %v); Reset starts a new one", e.lost)}
	}
	return e.in, nil
}

// check drops the instance if err discarded it.
func (e *Env) check(err error) error {
	if err != nil && e.in != nil && e.in.dead != nil {
		e.lost = err
		e.in = nil
	}
	return err
}

// Spec returns the env's spec.
func (e *Env) Spec() core.EnvSpec { return e.src.spec }

// Reset starts an episode, first replacing the instance if an earlier
// failure discarded it.
func (e *Env) Reset(seed uint64) ([]core.Observation, error) {
	if e.closed {
		return nil, &CallError{Module: e.src.m.name, Call: "reset", Reason: "env closed"}
	}
	if e.in == nil {
		if err := e.instantiate(); err != nil {
			return nil, err
		}
	}
	in := e.in
	n, err := in.call("reset", in.fns[fnReset], seed, 0)
	if err != nil {
		return nil, e.check(err)
	}
	obs, err := e.slab.DecodeObservations(in.buf[:n], e.shape)
	if err != nil {
		return nil, e.check(in.fail("reset", fmt.Errorf("malformed reply: %w", err)))
	}
	return obs, nil
}

// Step applies the joint action in one call into the module.
func (e *Env) Step(actions []core.Action) (core.StepResult, error) {
	in, err := e.live("step")
	if err != nil {
		return core.StepResult{}, err
	}
	if len(actions) != e.shape.Agents {
		return core.StepResult{}, &CallError{Module: e.src.m.name, Call: "step", Reason: fmt.Sprintf("%d actions for %d agents", len(actions), e.shape.Agents)}
	}
	size := wasmabi.ActionsSize(actions)
	if err := in.reserve(size); err != nil {
		return core.StepResult{}, e.check(err)
	}
	wasmabi.AppendActions(in.buf[:0], actions)
	n, err := in.call("step", in.fns[fnStep], uint64(size), 0)
	if err != nil {
		return core.StepResult{}, e.check(err)
	}
	res, err := e.slab.DecodeStepResult(in.buf[:n], e.shape)
	if err != nil {
		return core.StepResult{}, e.check(in.fail("step", fmt.Errorf("malformed reply: %w", err)))
	}
	return res, nil
}

// State returns the global state. On failure it logs the error, discards
// the instance (so the next Step reports it) and returns nil.
func (e *Env) State() []float64 {
	s, err := e.stateWithErr()
	if err != nil {
		e.src.m.log.logger.Error("wasm env state", "module", e.src.m.name, "err", err)
		return nil
	}
	return s
}

// stateWithErr is State with its error.
func (e *Env) stateWithErr() ([]float64, error) {
	in, err := e.live("state")
	if err != nil {
		return nil, err
	}
	n, err := in.call("state", in.fns[fnState], 0, 0)
	if err != nil {
		return nil, e.check(err)
	}
	s, err := wasmabi.DecodeFloats(in.buf[:n], e.src.spec.StateSize)
	if err != nil {
		return nil, e.check(in.fail("state", fmt.Errorf("malformed reply: %w", err)))
	}
	return s, nil
}

// Close calls the module's close and releases the instance.
func (e *Env) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.in == nil {
		return nil
	}
	err := e.in.close()
	e.in = nil
	return err
}

// Truncate ends the episode early (capability "truncate").
func (e *Env) Truncate() (core.StepResult, error) {
	in, err := e.live("truncate")
	if err != nil {
		return core.StepResult{}, err
	}
	n, err := in.call("truncate", in.fns[fnTruncate], 0, 0)
	if err != nil {
		return core.StepResult{}, e.check(err)
	}
	res, err := e.slab.DecodeStepResult(in.buf[:n], e.shape)
	if err != nil {
		return core.StepResult{}, e.check(in.fail("truncate", fmt.Errorf("malformed reply: %w", err)))
	}
	return res, nil
}

// Prompt returns the module's chat request for a text decision
// (capability "prompt"). On failure it logs the error, discards the
// instance, and returns a request with only Agent and Decision set.
func (e *Env) Prompt(agent, decision int) core.ChatRequest {
	req, err := e.promptWithErr(agent, decision)
	if err != nil {
		e.src.m.log.logger.Error("wasm env prompt", "module", e.src.m.name, "err", err)
		req = core.ChatRequest{Agent: agent}
		if decision >= 0 && decision < len(e.src.spec.Decisions) {
			req.Decision = e.src.spec.Decisions[decision].Name
		}
	}
	return req
}

// promptWithErr is Prompt with its error.
func (e *Env) promptWithErr(agent, decision int) (core.ChatRequest, error) {
	in, err := e.live("prompt")
	if err != nil {
		return core.ChatRequest{}, err
	}
	n, err := in.call("prompt", in.fns[fnPrompt], uint64(uint32(int32(agent))), uint64(uint32(int32(decision))))
	if err != nil {
		return core.ChatRequest{}, e.check(err)
	}
	var req core.ChatRequest
	if err := json.Unmarshal(in.buf[:n], &req); err != nil {
		return core.ChatRequest{}, e.check(in.fail("prompt", fmt.Errorf("malformed reply: %w", err)))
	}
	return req, nil
}

// Simulate asks the module's simulator for a stand-in completion
// (capability "simulate"). The guest's generator is seeded with one value
// drawn from rng.
func (e *Env) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	in, err := e.live("simulate")
	if err != nil {
		return core.SimCompletion{}, err
	}
	call, err := json.Marshal(wasmabi.SimulateCall{Agent: agent, Decision: decision, Request: req, Seed: rng.Uint64()})
	if err != nil {
		return core.SimCompletion{}, fmt.Errorf("wasm module %s: simulate: %w", e.src.m.name, err)
	}
	if err := in.write(call); err != nil {
		return core.SimCompletion{}, e.check(err)
	}
	n, err := in.call("simulate", in.fns[fnSimulate], uint64(len(call)), 0)
	if err != nil {
		return core.SimCompletion{}, e.check(err)
	}
	var r wasmabi.SimResult
	if err := json.Unmarshal(in.buf[:n], &r); err != nil {
		return core.SimCompletion{}, e.check(in.fail("simulate", fmt.Errorf("malformed reply: %w", err)))
	}
	return core.SimCompletion{Text: r.Text, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens}, nil
}

// Baseline returns the module's scripted policy of that name (capability
// "baseline"); the name must be listed in the spec's Baselines.
func (e *Env) Baseline(name string) (core.Baseline, error) {
	if !e.src.spec.Capabilities.Has(core.CapBaseline) {
		return nil, fmt.Errorf("wasm module %s: the env offers no baselines", e.src.m.name)
	}
	if !slices.Contains(e.src.spec.Baselines, name) {
		return nil, fmt.Errorf("wasm module %s: no baseline %q (have %v)", e.src.m.name, name, e.src.spec.Baselines)
	}
	return &baseline{e: e, name: name}, nil
}

type baseline struct {
	e    *Env
	name string
}

// Act asks the module's baseline for every agent's decision. A guest
// error, trap, exit or timeout is returned as a *CallError; a failure that
// leaves the instance unusable discards it, as for any other call, and the
// next Reset starts a new one.
func (b *baseline) Act(obs []core.Observation) ([]int, error) {
	e := b.e
	in, err := e.live("baseline")
	if err != nil {
		return nil, err
	}
	call, err := wasmabi.AppendBaselineCall(nil, b.name, obs, e.shape)
	if err != nil {
		return nil, fmt.Errorf("wasm module %s: baseline: %w", e.src.m.name, err)
	}
	if err := in.write(call); err != nil {
		return nil, e.check(err)
	}
	n, err := in.call("baseline", in.fns[fnBaseline], uint64(len(call)), 0)
	if err != nil {
		return nil, e.check(err)
	}
	d, err := wasmabi.DecodeDecisions(in.buf[:n], e.shape.Agents)
	if err != nil {
		return nil, e.check(in.fail("baseline", fmt.Errorf("malformed reply: %w", err)))
	}
	return d, nil
}
