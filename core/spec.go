package core

import (
	"errors"
	"fmt"
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
	// episode (StepResult.Metrics), e.g. "makespan_s".
	Metrics []string `json:"metrics,omitempty"`
	// Baselines names the scripted policies the env offers through
	// BaselineProvider, e.g. "single_agent", "parallel_naive", "sop".
	Baselines []string `json:"baselines,omitempty"`
	// MaxSteps bounds an episode's length; the runtime truncates an episode
	// that runs longer. 0 means the runtime's default (1000).
	MaxSteps int `json:"max_steps,omitempty"`
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
