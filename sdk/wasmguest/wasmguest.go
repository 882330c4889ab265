// Package wasmguest turns an ordinary [core.Env] or [core.RewardFunc] into a
// troupe Wasm plugin: it supplies the //go:wasmexport functions of troupe's
// plugin ABI (sdk/ABI.md), the guest-owned buffer, and the encoding of the
// hot path.
//
// A plugin registers its factory from an init function (a module built with
// -buildmode=c-shared runs package initialisers but never main):
//
//	package main
//
//	import "github.com/troupe-dev/troupe/sdk/wasmguest"
//
//	func init() { wasmguest.ServeEnv(newMyEnv) }
//
//	func main() {}
//
// and is built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o myenv.wasm .
//
// The env may also implement [core.Truncater], [core.Prompter],
// [core.Simulator] and [core.BaselineProvider] and declare them in its
// spec's Capabilities, as it would in-process; the kit advertises the
// declared capabilities and the host exposes them. A declared capability
// the env does not implement fails open, and so does an optional interface
// the env implements without declaring it ([core.CheckUndeclared]).
// Simulate receives a
// generator seeded from a value the host draws from its own generator, so
// runs are reproducible, but the random stream differs from the one the same
// env sees in-process.
//
// Go's runtime inside a Wasm export call only collects garbage when the
// calling goroutine yields, so the kit calls runtime.Gosched after every
// cold export (open, close, score, …) and after every YieldInterval-th
// call of the hot ones (reset, step, state, baseline). Each yield costs
// about a microsecond.
package wasmguest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/wasmabi"
)

// YieldInterval is how many hot calls (reset, step, state, baseline) pass
// between two runtime.Gosched calls, which let the garbage collector run.
const YieldInterval = 16

// Open kinds: what the host asks the open export to create.
const (
	openDescribe = 0 // everything the module serves, with no params (inspect)
	openEnv      = 1
	openReward   = 2
)

// initialBufferSize is the buffer's capacity before anything grows it.
const initialBufferSize = 64 << 10

// maxBufferSize bounds the buffer (the host's limit on one reply).
const maxBufferSize = 1 << 30

// ServeEnv makes the module serve the envs that f makes; f receives the
// params of the agentfile's [env.params] table. Call it from an init
// function.
func ServeEnv(f core.EnvFactory) { srv.envFactory = f }

// ServeReward makes the module serve the reward functions that f makes; f
// receives the reward's params. Call it from an init function. A module may
// serve both an env and a reward function.
func ServeReward(f core.RewardFactory) { srv.rewardFactory = f }

// server holds the guest's state between export calls.
type server struct {
	envFactory    core.EnvFactory
	rewardFactory core.RewardFactory

	env       core.Env
	shape     wasmabi.Shape
	baselines map[string]core.Baseline
	reset     bool
	reward    core.RewardFunc

	// buf is the guest-owned buffer; len(buf) == cap(buf) always.
	buf     []byte
	actions []core.Action
	calls   int
}

var srv = newServer()

func newServer() *server { return &server{buf: make([]byte, initialBufferSize)} }

// input returns the first n bytes of the buffer, or false if n is out of
// range.
func (s *server) input(n int) ([]byte, bool) {
	if n < 0 || n > len(s.buf) {
		return nil, false
	}
	return s.buf[:n], true
}

// out returns the buffer, emptied, for appending a reply.
func (s *server) out() []byte { return s.buf[:0] }

// reply adopts b (appended to s.out()) as the buffer and returns its length.
func (s *server) reply(b []byte) int32 {
	if len(b) > maxBufferSize {
		return s.fail(wasmabi.CodeNoMemory, fmt.Errorf("reply of %d bytes exceeds the %d-byte limit", len(b), maxBufferSize))
	}
	if cap(b) != cap(s.buf) { // append moved the reply to a larger array
		s.buf = b[:cap(b)]
	}
	return int32(len(b))
}

// fail writes err's message and returns code.
func (s *server) fail(code int32, err error) int32 {
	b := wasmabi.AppendError(s.buf[:0], err.Error())
	if cap(b) != cap(s.buf) {
		s.buf = b[:cap(b)]
	}
	return code
}

// grow makes the buffer at least n bytes.
func (s *server) grow(n int) int32 {
	if n < 0 || n > maxBufferSize {
		return s.fail(wasmabi.CodeNoMemory, fmt.Errorf("buffer of %d bytes requested, limit %d", n, maxBufferSize))
	}
	if n > len(s.buf) {
		s.buf = make([]byte, max(n, 2*len(s.buf)))
	}
	return 0
}

// guard turns a panic in the plugin's code into CodePanic; use as defer
// s.guard(&ret). The message is the panic value and where it happened
// (function, file name and line: no build paths), then, after a blank
// line, the full stack, which the host logs only at debug level.
func (s *server) guard(ret *int32) {
	if v := recover(); v != nil {
		*ret = s.fail(wasmabi.CodePanic, fmt.Errorf("%v%s\n\n%s", v, panicSite(), debug.Stack()))
	}
}

// panicSite returns " (at FUNC FILE:LINE)" for the frame that panicked:
// the first frame outside the runtime below runtime.gopanic; "" if none is
// found. Called from guard's deferred recover.
func panicSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return fmt.Sprintf(" (at %s %s:%d)", f.Function, path.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

func (s *server) closeEnv() error {
	var err error
	if s.env != nil {
		err = s.env.Close()
	}
	s.env, s.baselines, s.reset = nil, nil, false
	return err
}

// open creates the env and/or reward function and replies with the spec.
func (s *server) open(kind, n int) (ret int32) {
	defer s.guard(&ret)
	if kind < openDescribe || kind > openReward {
		return s.fail(wasmabi.CodeBadInput, fmt.Errorf("open: unknown kind %d (0 describe, 1 env, 2 reward)", kind))
	}
	in, ok := s.input(n)
	if !ok {
		return s.fail(wasmabi.CodeBadInput, fmt.Errorf("open: params length %d beyond the buffer (%d bytes)", n, len(s.buf)))
	}
	var params map[string]any
	if len(in) > 0 {
		if err := json.Unmarshal(in, &params); err != nil {
			return s.fail(wasmabi.CodeBadInput, fmt.Errorf("open: params: %v", err))
		}
	}
	if s.envFactory == nil && s.rewardFactory == nil {
		return s.fail(wasmabi.CodeBadState, errors.New("open: nothing registered: call wasmguest.ServeEnv or ServeReward from an init function (a c-shared module never runs main)"))
	}
	spec := wasmabi.Spec{ABI: wasmabi.Version}
	if kind == openEnv || kind == openDescribe {
		if s.envFactory == nil {
			if kind == openEnv {
				return s.fail(wasmabi.CodeUnsupported, errors.New("open: this module serves no env (it calls ServeReward only)"))
			}
		} else {
			if err := s.closeEnv(); err != nil {
				return s.fail(wasmabi.CodeFailed, fmt.Errorf("open: closing the previous env: %w", err))
			}
			env, err := s.envFactory(params)
			if err != nil {
				return s.fail(wasmabi.CodeFailed, err)
			}
			es := env.Spec()
			if err := es.Validate(); err != nil {
				env.Close()
				return s.fail(wasmabi.CodeFailed, err)
			}
			if err := errors.Join(core.CheckCapabilities(env), core.CheckUndeclared(env)); err != nil {
				env.Close()
				return s.fail(wasmabi.CodeFailed, err)
			}
			s.env, s.shape = env, wasmabi.ShapeOf(es)
			spec.Env = &es
			spec.Capabilities = es.Capabilities.Names()
		}
	}
	if kind == openReward || kind == openDescribe {
		if s.rewardFactory == nil {
			if kind == openReward {
				return s.fail(wasmabi.CodeUnsupported, errors.New("open: this module serves no reward function (it calls ServeEnv only)"))
			}
		} else {
			r, err := s.rewardFactory(params)
			if err != nil {
				return s.fail(wasmabi.CodeFailed, err)
			}
			s.reward = r
			spec.Reward = &wasmabi.RewardSpec{Name: r.Name(), Components: r.Components(), Metrics: core.RequiredMetricsOf(r)}
		}
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return s.fail(wasmabi.CodeFailed, fmt.Errorf("open: spec: %w", err))
	}
	return s.reply(append(s.out(), js...))
}

var errNoEnv = errors.New("no env: call open first")

func (s *server) resetEnv(seed uint64) (ret int32) {
	defer s.guard(&ret)
	if s.env == nil {
		return s.fail(wasmabi.CodeBadState, errNoEnv)
	}
	obs, err := s.env.Reset(seed)
	if err != nil {
		return s.fail(wasmabi.CodeFailed, err)
	}
	s.reset = true
	b, err := wasmabi.AppendObservations(s.out(), obs, s.shape)
	if err != nil {
		return s.fail(wasmabi.CodeFailed, fmt.Errorf("reset: %w", err))
	}
	return s.reply(b)
}

func (s *server) step(n int) (ret int32) {
	defer s.guard(&ret)
	if s.env == nil || !s.reset {
		return s.fail(wasmabi.CodeBadState, errors.New("step before reset"))
	}
	in, ok := s.input(n)
	if !ok {
		return s.fail(wasmabi.CodeBadInput, fmt.Errorf("step: input length %d beyond the buffer (%d bytes)", n, len(s.buf)))
	}
	acts, err := wasmabi.DecodeActions(in, s.actions)
	if err != nil {
		return s.fail(wasmabi.CodeBadInput, err)
	}
	s.actions = acts
	res, err := s.env.Step(acts)
	if err != nil {
		return s.fail(wasmabi.CodeFailed, err)
	}
	return s.stepReply(&res)
}

func (s *server) stepReply(res *core.StepResult) int32 {
	b, err := wasmabi.AppendStepResult(s.out(), res, s.shape)
	if err != nil {
		return s.fail(wasmabi.CodeFailed, fmt.Errorf("step result: %w", err))
	}
	return s.reply(b)
}

func (s *server) state() (ret int32) {
	defer s.guard(&ret)
	if s.env == nil {
		return s.fail(wasmabi.CodeBadState, errNoEnv)
	}
	return s.reply(wasmabi.AppendFloats(s.out(), s.env.State()))
}

func (s *server) close() (ret int32) {
	defer s.guard(&ret)
	if err := s.closeEnv(); err != nil {
		return s.fail(wasmabi.CodeFailed, err)
	}
	return 0
}

func (s *server) truncate() (ret int32) {
	defer s.guard(&ret)
	if s.env == nil || !s.reset {
		return s.fail(wasmabi.CodeBadState, errors.New("truncate before reset"))
	}
	t, ok := core.TruncaterOf(s.env)
	if !ok {
		return s.fail(wasmabi.CodeUnsupported, errors.New("truncate: the env's spec does not declare core.CapTruncate (core.Truncater)"))
	}
	res, err := t.Truncate()
	if err != nil {
		return s.fail(wasmabi.CodeFailed, err)
	}
	return s.stepReply(&res)
}

func (s *server) prompt(agent, decision int) (ret int32) {
	defer s.guard(&ret)
	if s.env == nil {
		return s.fail(wasmabi.CodeBadState, errNoEnv)
	}
	p, ok := core.PrompterOf(s.env)
	if !ok {
		return s.fail(wasmabi.CodeUnsupported, errors.New("prompt: the env's spec does not declare core.CapPrompt (core.Prompter)"))
	}
	js, err := json.Marshal(p.Prompt(agent, decision))
	if err != nil {
		return s.fail(wasmabi.CodeFailed, fmt.Errorf("prompt: %w", err))
	}
	return s.reply(append(s.out(), js...))
}

func (s *server) simulate(n int) (ret int32) {
	defer s.guard(&ret)
	if s.env == nil {
		return s.fail(wasmabi.CodeBadState, errNoEnv)
	}
	sim, ok := core.SimulatorOf(s.env)
	if !ok {
		return s.fail(wasmabi.CodeUnsupported, errors.New("simulate: the env's spec does not declare core.CapSimulate (core.Simulator)"))
	}
	in, ok := s.input(n)
	if !ok {
		return s.fail(wasmabi.CodeBadInput, fmt.Errorf("simulate: input length %d beyond the buffer", n))
	}
	var call wasmabi.SimulateCall
	if err := json.Unmarshal(in, &call); err != nil {
		return s.fail(wasmabi.CodeBadInput, fmt.Errorf("simulate: %v", err))
	}
	rng := rand.New(rand.NewPCG(call.Seed, wasmabi.SeedStream))
	c, err := sim.Simulate(call.Agent, call.Decision, call.Request, rng)
	if err != nil {
		return s.fail(wasmabi.CodeFailed, err)
	}
	js, err := json.Marshal(wasmabi.SimResult{Text: c.Text, PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens})
	if err != nil {
		return s.fail(wasmabi.CodeFailed, fmt.Errorf("simulate: %w", err))
	}
	return s.reply(append(s.out(), js...))
}

func (s *server) baseline(n int) (ret int32) {
	defer s.guard(&ret)
	if s.env == nil {
		return s.fail(wasmabi.CodeBadState, errNoEnv)
	}
	bp, ok := core.BaselineProviderOf(s.env)
	if !ok {
		return s.fail(wasmabi.CodeUnsupported, errors.New("baseline: the env's spec does not declare core.CapBaseline (core.BaselineProvider)"))
	}
	in, ok := s.input(n)
	if !ok {
		return s.fail(wasmabi.CodeBadInput, fmt.Errorf("baseline: input length %d beyond the buffer", n))
	}
	name, obs, err := wasmabi.DecodeBaselineCall(in, s.shape)
	if err != nil {
		return s.fail(wasmabi.CodeBadInput, err)
	}
	b, ok := s.baselines[name]
	if !ok {
		if b, err = bp.Baseline(name); err != nil {
			return s.fail(wasmabi.CodeFailed, err)
		}
		if s.baselines == nil {
			s.baselines = map[string]core.Baseline{}
		}
		s.baselines[name] = b
	}
	d, err := b.Act(obs)
	if err != nil {
		return s.fail(wasmabi.CodeFailed, err)
	}
	if len(d) != s.shape.Agents {
		return s.fail(wasmabi.CodeFailed, fmt.Errorf("baseline %q returned %d decisions for %d agents", name, len(d), s.shape.Agents))
	}
	return s.reply(wasmabi.AppendDecisions(s.out(), d))
}

func (s *server) score(n int) (ret int32) {
	defer s.guard(&ret)
	if s.reward == nil {
		return s.fail(wasmabi.CodeBadState, errors.New("score: no reward function: call open with kind 2 first"))
	}
	in, ok := s.input(n)
	if !ok {
		return s.fail(wasmabi.CodeBadInput, fmt.Errorf("score: input length %d beyond the buffer", n))
	}
	ep, err := wasmabi.DecodeEpisode(in)
	if err != nil {
		return s.fail(wasmabi.CodeBadInput, err)
	}
	c, m, err := s.reward.Score(ep)
	if err != nil {
		return s.fail(wasmabi.CodeFailed, err)
	}
	return s.reply(wasmabi.AppendScore(s.out(), c, m))
}
