package grpcplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/troupe-dev/troupe/core"
	pb "github.com/troupe-dev/troupe/plugins/grpc/proto"
)

// The plugin side: gRPC services that serve one core.Env or core.RewardFunc.
//
// Errors the env or reward function returns travel as code UNKNOWN with the
// error's text; a panic is recovered and travels as code INTERNAL (the host
// then restarts the process before the next episode); misuse of the protocol
// travels as FAILED_PRECONDITION.

// envServer serves one env instance (one per process).
type envServer struct {
	pb.UnimplementedEnvServer
	factory core.EnvFactory

	mu        sync.Mutex // the host calls one method at a time; this guards misuse
	env       core.Env
	baselines map[string]core.Baseline // made on first use, bound to env
}

// decodeParams reads the params JSON object; numbers stay exact (json.Number).
func decodeParams(raw []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var params map[string]any
	if err := dec.Decode(&params); err != nil {
		return nil, fmt.Errorf("params: not a JSON object: %w", err)
	}
	if len(params) == 0 {
		return nil, nil
	}
	return params, nil
}

// recovered turns a panic in the plugin's code into an INTERNAL error and
// logs its stack to the plugin's stderr, which the host logs.
func recovered(op string, err *error) {
	if v := recover(); v != nil {
		slog.Error(fmt.Sprintf("%s: panic: %v", op, v), "stack", string(debug.Stack()))
		*err = status.Errorf(codes.Internal, "panic: %v", v)
	}
}

// appError is a failure of the plugin's own code (an error it returned, a
// value it cannot encode): the host reports it, fails the episode and keeps
// the process, which is still healthy.
func appError(err error) error {
	return status.Error(codes.Unknown, err.Error())
}

func (s *envServer) Open(_ context.Context, req *pb.OpenRequest) (_ *pb.OpenReply, err error) {
	defer recovered("Open", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env != nil {
		return nil, status.Error(codes.FailedPrecondition, "env already open in this process")
	}
	if s.factory == nil {
		return nil, status.Error(codes.Unimplemented, "this plugin serves no env")
	}
	params, err := decodeParams(req.GetParamsJson())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	env, err := s.factory(params)
	if err != nil {
		return nil, appError(err)
	}
	if env == nil {
		return nil, appError(errors.New("env factory returned a nil env and no error"))
	}
	es := env.Spec()
	if err := errors.Join(core.CheckCapabilities(env), core.CheckUndeclared(env)); err != nil {
		_ = env.Close()
		return nil, appError(err)
	}
	spec, err := json.Marshal(es)
	if err != nil {
		_ = env.Close()
		return nil, appError(fmt.Errorf("encoding the spec: %w", err))
	}
	caps := es.Capabilities
	truncate, prompt := caps.Has(core.CapTruncate), caps.Has(core.CapPrompt)
	simulate, baseline := caps.Has(core.CapSimulate), caps.Has(core.CapBaseline)
	s.env = env
	s.baselines = map[string]core.Baseline{}
	return &pb.OpenReply{SpecJson: spec, Truncate: truncate, Prompt: prompt, Simulate: simulate, Baseline: baseline}, nil
}

func (s *envServer) opened() (core.Env, error) {
	if s.env == nil {
		return nil, status.Error(codes.FailedPrecondition, "env not open (call Open first)")
	}
	return s.env, nil
}

func (s *envServer) Reset(_ context.Context, req *pb.ResetRequest) (_ *pb.ResetReply, err error) {
	defer recovered("Reset", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.opened()
	if err != nil {
		return nil, err
	}
	obs, err := env.Reset(req.GetSeed())
	if err != nil {
		return nil, appError(err)
	}
	return &pb.ResetReply{Observations: obsToPB(obs)}, nil
}

func (s *envServer) Step(_ context.Context, req *pb.StepRequest) (_ *pb.StepReply, err error) {
	defer recovered("Step", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.opened()
	if err != nil {
		return nil, err
	}
	r, err := env.Step(actionsFromPB(req.GetActions()))
	if err != nil {
		return nil, appError(err)
	}
	return stepToPB(r), nil
}

func (s *envServer) State(context.Context, *pb.StateRequest) (_ *pb.StateReply, err error) {
	defer recovered("State", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.opened()
	if err != nil {
		return nil, err
	}
	return &pb.StateReply{State: env.State()}, nil
}

func (s *envServer) Truncate(context.Context, *pb.TruncateRequest) (_ *pb.StepReply, err error) {
	defer recovered("Truncate", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.opened()
	if err != nil {
		return nil, err
	}
	t, ok := core.TruncaterOf(env)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the env's spec does not declare core.CapTruncate (core.Truncater)")
	}
	r, err := t.Truncate()
	if err != nil {
		return nil, appError(err)
	}
	return stepToPB(r), nil
}

func (s *envServer) Prompt(_ context.Context, req *pb.PromptRequest) (_ *pb.PromptReply, err error) {
	defer recovered("Prompt", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.opened()
	if err != nil {
		return nil, err
	}
	p, ok := core.PrompterOf(env)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the env's spec does not declare core.CapPrompt (core.Prompter)")
	}
	agent, decision, err := s.agentDecision(env, req.GetAgent(), req.GetDecision())
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(p.Prompt(agent, decision))
	if err != nil {
		return nil, appError(fmt.Errorf("encoding the chat request: %w", err))
	}
	return &pb.PromptReply{RequestJson: b}, nil
}

// agentDecision checks an (agent, decision) pair against the spec.
func (s *envServer) agentDecision(env core.Env, agent, decision int64) (int, int, error) {
	spec := env.Spec()
	if agent < 0 || agent >= int64(spec.NumAgents()) {
		return 0, 0, status.Errorf(codes.InvalidArgument, "agent %d out of range 0..%d", agent, spec.NumAgents()-1)
	}
	if decision < 0 || decision >= int64(len(spec.Decisions)) {
		return 0, 0, status.Errorf(codes.InvalidArgument, "decision %d out of range 0..%d", decision, len(spec.Decisions)-1)
	}
	return int(agent), int(decision), nil
}

// SimulateSeedStream is the second PCG word of the generator a plugin's
// simulator gets: rand.New(rand.NewPCG(seed, SimulateSeedStream)), with seed
// drawn by the host from the runtime's generator. It is the Wasm guest kit's
// value, so a Go env simulates the same text loaded either way.
const SimulateSeedStream = 0x9e3779b97f4a7c15

func (s *envServer) Simulate(_ context.Context, req *pb.SimulateRequest) (_ *pb.SimulateReply, err error) {
	defer recovered("Simulate", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.opened()
	if err != nil {
		return nil, err
	}
	sim, ok := core.SimulatorOf(env)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the env's spec does not declare core.CapSimulate (core.Simulator)")
	}
	agent, decision, err := s.agentDecision(env, req.GetAgent(), req.GetDecision())
	if err != nil {
		return nil, err
	}
	var chat core.ChatRequest
	if err := json.Unmarshal(req.GetRequestJson(), &chat); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "chat request: %v", err)
	}
	c, err := sim.Simulate(agent, decision, chat, rand.New(rand.NewPCG(req.GetSeed(), SimulateSeedStream)))
	if err != nil {
		return nil, appError(err)
	}
	return &pb.SimulateReply{Text: c.Text, PromptTokens: int64(c.PromptTokens), CompletionTokens: int64(c.CompletionTokens)}, nil
}

func (s *envServer) Act(_ context.Context, req *pb.ActRequest) (_ *pb.ActReply, err error) {
	defer recovered("Act", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.opened()
	if err != nil {
		return nil, err
	}
	bp, ok := core.BaselineProviderOf(env)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the env's spec does not declare core.CapBaseline (core.BaselineProvider)")
	}
	b := s.baselines[req.GetBaseline()]
	if b == nil {
		if b, err = bp.Baseline(req.GetBaseline()); err != nil {
			return nil, appError(err)
		}
		if b == nil {
			return nil, appError(fmt.Errorf("Baseline(%q) returned nil and no error", req.GetBaseline()))
		}
		s.baselines[req.GetBaseline()] = b
	}
	ds, err := b.Act(obsFromPB(req.GetObservations()))
	if err != nil {
		return nil, appError(err)
	}
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = int64(d)
	}
	return &pb.ActReply{Decisions: out}, nil
}

func (s *envServer) Close(context.Context, *pb.CloseRequest) (_ *pb.CloseReply, err error) {
	defer recovered("Close", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env == nil {
		return &pb.CloseReply{}, nil
	}
	env := s.env
	s.env, s.baselines = nil, nil
	if err := env.Close(); err != nil {
		return nil, appError(err)
	}
	return &pb.CloseReply{}, nil
}

// rewardServer serves one reward function, which must be safe for
// concurrent use (core.RewardFunc's contract).
type rewardServer struct {
	pb.UnimplementedRewardServer
	factory core.RewardFactory

	mu sync.RWMutex
	rf core.RewardFunc
}

func (s *rewardServer) Open(_ context.Context, req *pb.OpenRequest) (_ *pb.RewardInfo, err error) {
	defer recovered("Open", &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rf != nil {
		return nil, status.Error(codes.FailedPrecondition, "reward function already open in this process")
	}
	if s.factory == nil {
		return nil, status.Error(codes.Unimplemented, "this plugin serves no reward function")
	}
	params, err := decodeParams(req.GetParamsJson())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	rf, err := s.factory(params)
	if err != nil {
		return nil, appError(err)
	}
	if rf == nil {
		return nil, status.Error(codes.Internal, "reward factory returned a nil reward function and no error")
	}
	s.rf = rf
	return &pb.RewardInfo{Name: rf.Name(), Components: rf.Components(), Metrics: core.RequiredMetricsOf(rf)}, nil
}

func (s *rewardServer) Score(_ context.Context, req *pb.ScoreRequest) (_ *pb.ScoreReply, err error) {
	defer recovered("Score", &err)
	s.mu.RLock()
	rf := s.rf
	s.mu.RUnlock()
	if rf == nil {
		return nil, status.Error(codes.FailedPrecondition, "reward function not open (call Open first)")
	}
	if req.GetEpisode() == nil {
		return nil, status.Error(codes.InvalidArgument, "no episode")
	}
	comps, metrics, err := rf.Score(episodeFromPB(req.GetEpisode()))
	if err != nil {
		return nil, appError(err)
	}
	return &pb.ScoreReply{Components: comps, Metrics: metrics}, nil
}
