package grpcplugin

import (
	"time"

	"github.com/troupe-dev/troupe/core"
	pb "github.com/troupe-dev/troupe/plugins/grpc/proto"
)

// Conversions between core values and their wire messages. Floats travel as
// doubles, so values round-trip bit for bit; empty maps arrive as nil.

func usageToPB(u core.Usage) *pb.Usage {
	if u == (core.Usage{}) {
		return nil
	}
	return &pb.Usage{
		PromptTokens:     int64(u.PromptTokens),
		CompletionTokens: int64(u.CompletionTokens),
		LatencyNs:        int64(u.Latency),
		Backend:          u.Backend,
	}
}

func usageFromPB(u *pb.Usage) core.Usage {
	if u == nil {
		return core.Usage{}
	}
	return core.Usage{
		PromptTokens:     int(u.GetPromptTokens()),
		CompletionTokens: int(u.GetCompletionTokens()),
		Latency:          time.Duration(u.GetLatencyNs()),
		Backend:          u.GetBackend(),
	}
}

func actionsToPB(as []core.Action) []*pb.Action {
	out := make([]*pb.Action, len(as))
	for i, a := range as {
		out[i] = &pb.Action{Decision: int64(a.Decision), Text: a.Text, Usage: usageToPB(a.Usage)}
	}
	return out
}

func actionsFromPB(as []*pb.Action) []core.Action {
	out := make([]core.Action, len(as))
	for i, a := range as {
		out[i] = core.Action{Decision: int(a.GetDecision()), Text: a.GetText(), Usage: usageFromPB(a.GetUsage())}
	}
	return out
}

func obsToPB(os []core.Observation) []*pb.Observation {
	out := make([]*pb.Observation, len(os))
	for i, o := range os {
		m := &pb.Observation{Features: o.Features, Text: o.Text}
		if o.Mask != nil {
			m.Mask = &pb.Mask{Legal: o.Mask}
		}
		out[i] = m
	}
	return out
}

func obsFromPB(os []*pb.Observation) []core.Observation {
	if os == nil {
		return nil
	}
	out := make([]core.Observation, len(os))
	for i, o := range os {
		out[i] = core.Observation{Features: o.GetFeatures(), Text: o.GetText()}
		if m := o.GetMask(); m != nil {
			out[i].Mask = m.GetLegal()
			if out[i].Mask == nil {
				out[i].Mask = []bool{}
			}
		}
	}
	return out
}

func stepToPB(r core.StepResult) *pb.StepReply {
	m := &pb.StepReply{
		Observations: obsToPB(r.Observations),
		Terminated:   r.Terminated,
		Truncated:    r.Truncated,
		Metrics:      r.Metrics,
		Artifacts:    r.Artifacts,
	}
	if r.Rewards != nil {
		m.Rewards = &pb.Rewards{Values: r.Rewards}
	}
	return m
}

func stepFromPB(m *pb.StepReply) core.StepResult {
	r := core.StepResult{
		Observations: obsFromPB(m.GetObservations()),
		Terminated:   m.GetTerminated(),
		Truncated:    m.GetTruncated(),
		Metrics:      nilIfEmpty(m.GetMetrics()),
		Artifacts:    nilIfEmpty(m.GetArtifacts()),
	}
	if rw := m.GetRewards(); rw != nil {
		r.Rewards = rw.GetValues()
		if r.Rewards == nil {
			r.Rewards = []float64{}
		}
	}
	return r
}

func episodeToPB(ep *core.Episode) *pb.Episode {
	m := &pb.Episode{
		Env:           ep.Env,
		Seed:          ep.Seed,
		Steps:         int64(ep.Steps),
		AgentReturns:  ep.AgentReturns,
		Metrics:       ep.Metrics,
		Artifacts:     ep.Artifacts,
		Terminated:    ep.Terminated,
		Truncated:     ep.Truncated,
		BudgetStopped: ep.BudgetStopped,
	}
	if ep.AgentUsage != nil {
		m.AgentUsage = make([]*pb.Usage, len(ep.AgentUsage))
		for i, u := range ep.AgentUsage {
			m.AgentUsage[i] = usageToPB(u)
			if m.AgentUsage[i] == nil {
				m.AgentUsage[i] = &pb.Usage{}
			}
		}
	}
	return m
}

func episodeFromPB(m *pb.Episode) *core.Episode {
	ep := &core.Episode{
		Env:           m.GetEnv(),
		Seed:          m.GetSeed(),
		Steps:         int(m.GetSteps()),
		AgentReturns:  m.GetAgentReturns(),
		Metrics:       nilIfEmpty(m.GetMetrics()),
		Artifacts:     nilIfEmpty(m.GetArtifacts()),
		Terminated:    m.GetTerminated(),
		Truncated:     m.GetTruncated(),
		BudgetStopped: m.GetBudgetStopped(),
	}
	if us := m.GetAgentUsage(); us != nil {
		ep.AgentUsage = make([]core.Usage, len(us))
		for i, u := range us {
			ep.AgentUsage[i] = usageFromPB(u)
		}
	}
	return ep
}

func nilIfEmpty[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}
