package grpcplugin

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/troupe-dev/troupe/core"
	pb "github.com/troupe-dev/troupe/plugins/grpc/proto"
)

// The optional env interfaces (core.Truncater, core.Prompter,
// core.Simulator, core.BaselineProvider): remoteEnv implements them all, and
// its spec's Capabilities, set from the plugin's OpenReply flags, say which
// the plugin's env implements.

// capsOf returns the capabilities the OpenReply flags declare.
func capsOf(r *pb.OpenReply) core.Capabilities {
	var c core.Capabilities
	for _, f := range []struct {
		set bool
		cap core.Capabilities
	}{
		{r.GetTruncate(), core.CapTruncate}, {r.GetPrompt(), core.CapPrompt},
		{r.GetSimulate(), core.CapSimulate}, {r.GetBaseline(), core.CapBaseline},
	} {
		if f.set {
			c |= f.cap
		}
	}
	return c
}

// Truncate ends the current episode early (core.Truncater).
func (e *remoteEnv) Truncate() (core.StepResult, error) {
	o, err := e.current("Truncate")
	if err != nil {
		return core.StepResult{}, err
	}
	ctx, cancel := o.proc.callContext()
	defer cancel()
	r, err := o.client.Truncate(ctx, &pb.TruncateRequest{})
	if err != nil {
		return core.StepResult{}, e.fail(o, "Truncate", err)
	}
	return stepFromPB(r), nil
}

// Prompt returns the plugin env's chat request (core.Prompter). Prompt has
// no error result: on failure it logs the error, drops a broken process (the
// next Step then reports the failure), and returns a request holding only
// Agent and Decision.
func (e *remoteEnv) Prompt(agent, decision int) core.ChatRequest {
	req, err := e.prompt(agent, decision)
	if err != nil {
		e.src.cfg.logger.Error(err.Error())
		req = core.ChatRequest{Agent: agent}
		if decision >= 0 && decision < len(e.src.spec.Decisions) {
			req.Decision = e.src.spec.Decisions[decision].Name
		}
	}
	return req
}

func (e *remoteEnv) prompt(agent, decision int) (core.ChatRequest, error) {
	o, err := e.current("Prompt")
	if err != nil {
		return core.ChatRequest{}, err
	}
	ctx, cancel := o.proc.callContext()
	defer cancel()
	r, err := o.client.Prompt(ctx, &pb.PromptRequest{Agent: int64(agent), Decision: int64(decision)})
	if err != nil {
		return core.ChatRequest{}, e.fail(o, "Prompt", err)
	}
	var req core.ChatRequest
	if err := json.Unmarshal(r.GetRequestJson(), &req); err != nil {
		return core.ChatRequest{}, fmt.Errorf("%s: Prompt: malformed chat request: %w", o.proc.describe(), err)
	}
	return req, nil
}

// Simulate asks the plugin env's simulator for a stand-in completion
// (core.Simulator). The plugin's generator is seeded with one value drawn
// from rng (see SimulateSeedStream).
func (e *remoteEnv) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	o, err := e.current("Simulate")
	if err != nil {
		return core.SimCompletion{}, err
	}
	call, err := json.Marshal(req)
	if err != nil {
		return core.SimCompletion{}, fmt.Errorf("%s: Simulate: %w", o.proc.describe(), err)
	}
	ctx, cancel := o.proc.callContext()
	defer cancel()
	r, err := o.client.Simulate(ctx, &pb.SimulateRequest{Agent: int64(agent), Decision: int64(decision), RequestJson: call, Seed: rng.Uint64()})
	if err != nil {
		return core.SimCompletion{}, e.fail(o, "Simulate", err)
	}
	return core.SimCompletion{Text: r.GetText(), PromptTokens: int(r.GetPromptTokens()), CompletionTokens: int(r.GetCompletionTokens())}, nil
}

// Baseline returns the plugin env's scripted policy of that name
// (core.BaselineProvider); the name must be one of the spec's Baselines.
func (e *remoteEnv) Baseline(name string) (core.Baseline, error) {
	if !slices.Contains(e.src.spec.Baselines, name) {
		return nil, fmt.Errorf("%s: no baseline %q (the env offers %v)", e.src.cfg.label, name, e.src.spec.Baselines)
	}
	return &remoteBaseline{e: e, name: name}, nil
}

// remoteBaseline is a plugin env's scripted policy.
type remoteBaseline struct {
	e    *remoteEnv
	name string
}

// Act asks the plugin for every agent's decision. A failure of the call
// (the plugin's error, a timeout, a dead process) is returned; a broken
// process is dropped, as for any other call, and the next Reset starts a
// new one.
func (b *remoteBaseline) Act(obs []core.Observation) ([]int, error) {
	o, err := b.e.current("Act")
	if err != nil {
		return nil, err
	}
	ctx, cancel := o.proc.callContext()
	defer cancel()
	r, err := o.client.Act(ctx, &pb.ActRequest{Baseline: b.name, Observations: obsToPB(obs)})
	if err != nil {
		return nil, b.e.fail(o, "Act", err)
	}
	ds := r.GetDecisions()
	if len(ds) != b.e.src.spec.NumAgents() {
		return nil, fmt.Errorf("%s: Act: baseline %q gave %d decisions for %d agents", o.proc.describe(), b.name, len(ds), b.e.src.spec.NumAgents())
	}
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = int(d)
	}
	return out, nil
}
