// Command faultgo is a Wasm test plugin, built with the Go guest kit, that
// misbehaves on request so that the host's tests can check every failure
// path. It serves an env and a reward function.
//
// Env params: fault = "" | "panic" | "loop" | "oom" | "exit" | "badobs" |
// "error" | "print" | "initloop" (the last one loops in open) | "probe";
// at = the step that misbehaves (default 1; 0 means Reset). With "probe",
// Reset reports in agent 0's observation text what the sandbox lets the
// guest see: the file named by param "file", an attempt to write next to
// it, $HOME, and the clock. The env has 2 agents, 2
// features, 2 decisions and ends after 5 steps; the reward sums the agent
// returns into "quality", and misbehaves the same way with fault set. The
// env's one baseline, "fault", decides 0 for every agent after misbehaving
// the same way on every call, whatever the step.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/sdk/wasmguest"
)

type params struct {
	Fault string `json:"fault"`
	At    int    `json:"at"`
	File  string `json:"file"`
	// Needs is what the reward declares as its required metrics.
	Needs []string `json:"needs"`
}

func init() {
	wasmguest.ServeEnv(func(m map[string]any) (core.Env, error) {
		p := params{At: 1}
		if err := core.DecodeParams(m, &p); err != nil {
			return nil, err
		}
		if p.Fault == "initloop" {
			spin()
		}
		return &env{p: p}, nil
	})
	wasmguest.ServeReward(func(m map[string]any) (core.RewardFunc, error) {
		p := params{}
		if err := core.DecodeParams(m, &p); err != nil {
			return nil, err
		}
		return reward{p}, nil
	})
}

func main() {}

var sink [][]byte

//go:noinline
func spin() int {
	n := 0
	for i := 0; ; i++ {
		n += i
		if n == -1 {
			return n
		}
	}
}

// misbehave does what fault says.
func misbehave(fault string) error {
	switch fault {
	case "panic":
		panic("faultgo: deliberate panic")
	case "loop":
		spin()
	case "oom":
		for {
			sink = append(sink, make([]byte, 16<<20))
		}
	case "exit":
		os.Exit(3)
	case "error":
		return errors.New("faultgo: deliberate error")
	case "print":
		for i := range 1000 {
			fmt.Println("faultgo line", i)
		}
	}
	return nil
}

type env struct {
	p     params
	t     int
	total float64
}

func (e *env) Spec() core.EnvSpec {
	return core.EnvSpec{Name: "faultgo", Agents: []string{"a", "b"}, ObsSize: 2,
		Decisions: []core.DecisionSpec{{Name: "x"}, {Name: "y"}}, StateSize: 1, StepRewards: true, MaxSteps: 5,
		Baselines: []string{"fault"}, Capabilities: core.CapBaseline}
}

func (e *env) obs() []core.Observation {
	n := 2
	if e.p.Fault == "badobs" && e.t == e.p.At {
		n = 3
	}
	f := make([]float64, n)
	f[0] = float64(e.t)
	return []core.Observation{{Features: f}, {Features: []float64{float64(e.t), 1}, Mask: []bool{true, e.t%2 == 0}}}
}

// probe describes what the sandbox allows.
func (e *env) probe() string {
	read := "-"
	if e.p.File != "" {
		if b, err := os.ReadFile(e.p.File); err != nil {
			read = "error: " + err.Error()
		} else {
			read = "ok: " + string(b)
		}
	}
	write := "ok"
	if err := os.WriteFile(filepath.Join(filepath.Dir(e.p.File), "written"), []byte("x"), 0o644); err != nil {
		write = "error: " + err.Error()
	}
	return fmt.Sprintf("read=%s\nwrite=%s\nhome=%q\nnow=%d", read, write, os.Getenv("HOME"), time.Now().Unix())
}

func (e *env) Reset(seed uint64) ([]core.Observation, error) {
	e.t, e.total = 0, float64(seed%7)
	if e.p.Fault == "probe" {
		o := e.obs()
		o[0].Text = e.probe()
		return o, nil
	}
	if e.p.At == 0 {
		if err := misbehave(e.p.Fault); err != nil {
			return nil, err
		}
	}
	return e.obs(), nil
}

func (e *env) Step(a []core.Action) (core.StepResult, error) {
	e.t++
	if e.t == e.p.At {
		if err := misbehave(e.p.Fault); err != nil {
			return core.StepResult{}, err
		}
	}
	r := float64(a[0].Decision + a[1].Decision)
	e.total += r
	res := core.StepResult{Observations: e.obs(), Rewards: []float64{r, r}}
	if e.t >= 5 {
		res.Terminated = true
		res.Metrics = map[string]float64{"return": e.total}
	}
	return res, nil
}

func (e *env) State() []float64 { return []float64{e.total} }
func (e *env) Close() error     { return nil }

func (e *env) Baseline(name string) (core.Baseline, error) {
	if name != "fault" {
		return nil, fmt.Errorf("faultgo: no baseline %q", name)
	}
	return baseline{e}, nil
}

// baseline is the "fault" policy: misbehave, then decide 0 everywhere.
type baseline struct{ e *env }

func (b baseline) Act(obs []core.Observation) ([]int, error) {
	if err := misbehave(b.e.p.Fault); err != nil {
		return nil, err
	}
	return make([]int, len(obs)), nil
}

type reward struct{ p params }

func (reward) Name() string         { return "faultgo.return" }
func (reward) Components() []string { return []string{"quality"} }

// RequiredMetrics returns the params' "needs".
func (r reward) RequiredMetrics() []string { return r.p.Needs }
func (r reward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	if err := misbehave(r.p.Fault); err != nil {
		return nil, nil, err
	}
	sum := 0.0
	for _, v := range ep.AgentReturns {
		sum += v
	}
	return map[string]float64{"quality": sum}, map[string]float64{"steps": float64(ep.Steps)}, nil
}
