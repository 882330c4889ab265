package core

import (
	"errors"
	"fmt"
	"slices"
)

// DecisionSpec describes one discrete decision an agent can take.
type DecisionSpec struct {
	// Name is the decision's stable identifier, such as "draft_section".
	Name string `json:"name"`
	// NeedsText reports whether the decision's content is written by the
	// agent's LLM. The runtime then calls the LLM before stepping the env.
	NeedsText bool `json:"needs_text,omitempty"`
	// Tier names the latency tier of the simulated LLM used for this
	// decision ("" means "default").
	Tier string `json:"tier,omitempty"`
}

// EnvSpec is the static description of an environment. It does not change
// between episodes.
type EnvSpec struct {
	// Name identifies the task, e.g. "writing" or "lbf".
	Name string `json:"name"`
	// Agents holds one name per agent; its length is the number of agents.
	Agents []string `json:"agents"`
	// ObsSize is the length of every Observation.Features vector.
	ObsSize int `json:"obs_size"`
	// Decisions lists the discrete decisions, indexed by Action.Decision.
	Decisions []DecisionSpec `json:"decisions"`
	// StateSize is the length of the global state returned by Env.State
	// (0 if the env offers none).
	StateSize int `json:"state_size"`
	// StepRewards reports whether StepResult.Rewards carries per-agent
	// rewards (needed for credit = "independent").
	StepRewards bool `json:"step_rewards,omitempty"`
	// Metrics names the episode metrics the env reports at the end of an
	// episode (StepResult.Metrics), e.g. [MetricMakespan].
	Metrics []string `json:"metrics,omitempty"`
	// Baselines names the scripted policies the env offers through
	// BaselineProvider, e.g. "single_agent", "parallel_naive", "sop".
	Baselines []string `json:"baselines,omitempty"`
	// ReferenceBaseline names the baseline (one of Baselines) that the
	// task's reference metrics describe: evaluation reports every policy's
	// speedup as this baseline's mean makespan divided by the policy's.
	// Empty means none (no speedup is reported).
	ReferenceBaseline string `json:"reference_baseline,omitempty"`
	// OutsideTask names the baselines (each one of Baselines) that do not
	// play the task as posed, such as a row that swaps a team member's
	// model for one the drawn team may not have. Evaluation reports them,
	// marked, but never picks one as the best baseline the trained policy
	// is judged against.
	OutsideTask []string `json:"outside_task,omitempty"`
	// TaskNames names the task instances the env's episodes play (the
	// documents, the classes), indexed by the value the env reports as
	// MetricTask; evaluation uses them to label its per-instance rows.
	// Empty when the env reports no MetricTask or its instances have no
	// names (the rows are then labelled by number).
	TaskNames []string `json:"task_names,omitempty"`
	// MaxSteps bounds an episode's length; the runtime truncates an episode
	// that runs longer. 0 means the runtime's default (1000).
	MaxSteps int `json:"max_steps,omitempty"`
	// Capabilities declares the optional interfaces the env implements
	// (see [Capabilities]); the runtime uses an optional interface only
	// when it is declared here, and a declared one the env lacks is an
	// error ([CheckCapabilities]), as is, for an env written in Go, an
	// implemented one it leaves out ([CheckUndeclared]). It is not part of
	// the spec's JSON: the plugin ABIs carry it in their own fields (the
	// Wasm spec's top-level "capabilities", the gRPC OpenReply flags),
	// which the plugin kits (sdk/wasmguest, sdk/serve) fill with what their
	// env declares and from which the hosts set it.
	Capabilities Capabilities `json:"-"`
}

// NumAgents returns len(s.Agents).
func (s EnvSpec) NumAgents() int { return len(s.Agents) }

// DecisionIndex returns the index of the decision with the given name, or -1.
func (s EnvSpec) DecisionIndex(name string) int {
	for i, d := range s.Decisions {
		if d.Name == name {
			return i
		}
	}
	return -1
}

// Validate reports the first structural problem of the spec.
func (s EnvSpec) Validate() error {
	switch {
	case s.Name == "":
		return errors.New("spec: empty env name")
	case len(s.Agents) == 0:
		return fmt.Errorf("spec %q: no agents", s.Name)
	case s.ObsSize <= 0:
		return fmt.Errorf("spec %q: obs_size must be positive, got %d", s.Name, s.ObsSize)
	case len(s.Decisions) == 0:
		return fmt.Errorf("spec %q: no decisions", s.Name)
	case s.StateSize < 0:
		return fmt.Errorf("spec %q: negative state_size %d", s.Name, s.StateSize)
	case s.MaxSteps < 0:
		return fmt.Errorf("spec %q: negative max_steps %d", s.Name, s.MaxSteps)
	case len(s.Baselines) > 0 && !s.Capabilities.Has(CapBaseline):
		return fmt.Errorf("spec %q: lists baselines %v but does not declare core.CapBaseline in Capabilities", s.Name, s.Baselines)
	case s.ReferenceBaseline != "" && !slices.Contains(s.Baselines, s.ReferenceBaseline):
		return fmt.Errorf("spec %q: reference_baseline %q is not one of the baselines %v", s.Name, s.ReferenceBaseline, s.Baselines)
	case !containsAll(s.Baselines, s.OutsideTask):
		return fmt.Errorf("spec %q: outside_task %v names a baseline that is not one of the baselines %v", s.Name, s.OutsideTask, s.Baselines)
	case len(s.TaskNames) > 0 && !slices.Contains(s.Metrics, MetricTask):
		return fmt.Errorf("spec %q: lists %d task_names but not the metric %q they name the values of", s.Name, len(s.TaskNames), MetricTask)
	case s.Capabilities&^allCapabilities != 0:
		return fmt.Errorf("spec %q: unknown capabilities %#x", s.Name, uint8(s.Capabilities&^allCapabilities))
	}
	seen := map[string]bool{}
	for i, d := range s.Decisions {
		if d.Name == "" {
			return fmt.Errorf("spec %q: decision %d has no name", s.Name, i)
		}
		if seen[d.Name] {
			return fmt.Errorf("spec %q: decision %q listed twice", s.Name, d.Name)
		}
		seen[d.Name] = true
	}
	return nil
}

// CheckObservations reports the first observation that does not fit the
// spec: one per agent, Features of length ObsSize, a Mask that is nil or
// of length len(Decisions), and at least one legal decision.
func (s EnvSpec) CheckObservations(obs []Observation) error {
	if len(obs) != s.NumAgents() {
		return fmt.Errorf("env %s: %d observations for %d agents", s.Name, len(obs), s.NumAgents())
	}
	nd := len(s.Decisions)
	for i, o := range obs {
		if len(o.Features) != s.ObsSize {
			return fmt.Errorf("env %s: agent %d: %d features, spec says %d", s.Name, i, len(o.Features), s.ObsSize)
		}
		if o.Mask != nil && len(o.Mask) != nd {
			return fmt.Errorf("env %s: agent %d: mask of %d, spec has %d decisions", s.Name, i, len(o.Mask), nd)
		}
		if o.NumLegal(nd) == 0 {
			return fmt.Errorf("env %s: agent %d: no legal decision", s.Name, i)
		}
	}
	return nil
}

// containsAll reports whether every element of sub is in set.
func containsAll(set, sub []string) bool {
	for _, x := range sub {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}
