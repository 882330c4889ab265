package core_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

func TestCapabilityNames(t *testing.T) {
	all := core.CapTruncate | core.CapPrompt | core.CapSimulate | core.CapBaseline
	names := all.Names()
	if strings.Join(names, " ") != "truncate prompt simulate baseline" {
		t.Fatalf("names %v", names)
	}
	if c, err := core.ParseCapabilities(names); err != nil || c != all {
		t.Fatalf("ParseCapabilities(%v) = %v, %v", names, c, err)
	}
	if c, err := core.ParseCapabilities([]string{"simulate", "truncate"}); err != nil || c != core.CapSimulate|core.CapTruncate || c.String() != "truncate|simulate" {
		t.Fatalf("ParseCapabilities = %v, %v", c, err)
	}
	if _, err := core.ParseCapabilities([]string{"fly"}); err == nil || !strings.Contains(err.Error(), `unknown capability "fly"`) {
		t.Fatalf("unknown name: %v", err)
	}
	if s := core.Capabilities(0).String(); s != "none" {
		t.Fatalf("String of none = %q", s)
	}
}

// simEnv implements core.Simulator; its spec declares caps.
type simEnv struct{ caps core.Capabilities }

func (e simEnv) Spec() core.EnvSpec {
	return core.EnvSpec{Name: "sim", Agents: []string{"a"}, ObsSize: 1, Decisions: []core.DecisionSpec{{Name: "x"}}, Capabilities: e.caps}
}
func (simEnv) Reset(uint64) ([]core.Observation, error)    { return nil, nil }
func (simEnv) Step([]core.Action) (core.StepResult, error) { return core.StepResult{}, nil }
func (simEnv) State() []float64                            { return nil }
func (simEnv) Close() error                                { return nil }
func (simEnv) Simulate(int, int, core.ChatRequest, *rand.Rand) (core.SimCompletion, error) {
	return core.SimCompletion{}, nil
}

// The runtime finds an optional interface only when the spec declares it,
// and a declared interface the env lacks is an error.
func TestCapabilitiesDeclared(t *testing.T) {
	if _, ok := core.SimulatorOf(simEnv{}); ok {
		t.Error("SimulatorOf found an undeclared simulator")
	}
	if _, ok := core.SimulatorOf(simEnv{caps: core.CapSimulate}); !ok {
		t.Error("SimulatorOf missed a declared simulator")
	}
	if err := core.CheckCapabilities(simEnv{caps: core.CapSimulate}); err != nil {
		t.Error(err)
	}
	err := core.CheckCapabilities(simEnv{caps: core.CapSimulate | core.CapPrompt})
	if err == nil || !strings.Contains(err.Error(), "declares capability prompt, but core_test.simEnv does not implement core.Prompter") {
		t.Errorf("CheckCapabilities: %v", err)
	}
	_, err = core.NewEnvSource(func(map[string]any) (core.Env, error) { return simEnv{caps: core.CapBaseline}, nil }, nil)
	if err == nil || !strings.Contains(err.Error(), "core.BaselineProvider") {
		t.Errorf("NewEnvSource of an env that lacks a declared interface: %v", err)
	}
	spec := simEnv{caps: 1 << 6}.Spec()
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "unknown capabilities") {
		t.Errorf("Validate of unknown capability bits: %v", err)
	}
}

// outside_task may name only baselines the spec lists.
func TestOutsideTaskValidated(t *testing.T) {
	spec := simEnv{caps: core.CapBaseline}.Spec()
	spec.Baselines, spec.OutsideTask = []string{"solo", "team"}, []string{"solo"}
	if err := spec.Validate(); err != nil {
		t.Fatalf("Validate of a listed outside_task baseline: %v", err)
	}
	spec.OutsideTask = []string{"solo", "other"}
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "outside_task") {
		t.Errorf("Validate of an outside_task baseline not listed: %v", err)
	}
}

// task_names name the values of the task metric, so they need it.
func TestTaskNamesValidated(t *testing.T) {
	spec := simEnv{}.Spec()
	spec.TaskNames = []string{"a", "b"}
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), `task_names but not the metric "task"`) {
		t.Errorf("Validate of task_names without the task metric: %v", err)
	}
	spec.Metrics = append(spec.Metrics, core.MetricTask)
	if err := spec.Validate(); err != nil {
		t.Errorf("Validate of task_names with the task metric: %v", err)
	}
}

func TestReferenceBaselineValidated(t *testing.T) {
	spec := simEnv{}.Spec()
	spec.Baselines, spec.ReferenceBaseline = []string{"solo", "team"}, "solo"
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "does not declare core.CapBaseline") {
		t.Fatalf("Validate of baselines without CapBaseline: %v", err)
	}
	spec.Capabilities |= core.CapBaseline
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	spec.ReferenceBaseline = "duo"
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), `reference_baseline "duo" is not one of the baselines [solo team]`) {
		t.Fatalf("Validate: %v", err)
	}
}

// An optional interface a Go env implements but does not declare is an
// error of the env's loader, naming the interface and the capability,
// not an interface the runtime silently ignores.
func TestCheckUndeclared(t *testing.T) {
	if err := core.CheckUndeclared(simEnv{caps: core.CapSimulate}); err != nil {
		t.Errorf("CheckUndeclared of a declared simulator: %v", err)
	}
	const want = "env sim implements core.Simulator but its spec does not declare core.CapSimulate; add it to EnvSpec.Capabilities"
	if err := core.CheckUndeclared(simEnv{}); err == nil || err.Error() != want {
		t.Errorf("CheckUndeclared = %v, want %q", err, want)
	}
	closed := false
	_, err := core.NewEnvSource(func(map[string]any) (core.Env, error) {
		return &closeRecorder{simEnv: simEnv{}, closed: &closed}, nil
	}, nil)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("NewEnvSource of an env with an undeclared simulator: %v", err)
	}
	if !closed {
		t.Error("NewEnvSource did not close the env it refused")
	}
}

// closeRecorder records its Close.
type closeRecorder struct {
	simEnv
	closed *bool
}

func (e *closeRecorder) Close() error { *e.closed = true; return nil }
