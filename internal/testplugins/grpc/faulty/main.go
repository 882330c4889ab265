// Command faulty is a plugin binary that misbehaves on request, for
// plugins/grpc's fault tests.
//
// Built as is, it serves a small counting env and a reward function through
// the serve kit; the env's params choose a fault: exit_at_step (os.Exit with
// exit_code at that step), hang_at_step (never answer), panic_at_step, and
// log (write to slog, the log package, stdout and stderr at Reset). The env
// implements core.Truncater. The reward function exits when an episode's
// metrics hold "crash" and fails when they hold "fail".
//
// Built with -ldflags "-X main.handshake=badcookie" it expects a different
// go-plugin magic cookie; with "-X main.handshake=badversion" it speaks wire
// protocol version 99.
package main

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/hashicorp/go-plugin"

	"github.com/troupe-dev/troupe/core"
	grpcplugin "github.com/troupe-dev/troupe/plugins/grpc"
	"github.com/troupe-dev/troupe/sdk/serve"
)

// handshake selects a faulty handshake; set with -ldflags -X.
var handshake string

// Params choose the env's faults (0: none).
type Params struct {
	Steps       int  `json:"steps"`
	ExitAtStep  int  `json:"exit_at_step"`
	ExitCode    int  `json:"exit_code"`
	HangAtStep  int  `json:"hang_at_step"`
	PanicAtStep int  `json:"panic_at_step"`
	Log         bool `json:"log"`
}

// counter is a two-agent env: each step every agent adds its decision (0
// or 1) to a shared total; the episode ends after Steps steps.
type counter struct {
	p     Params
	t     int
	total float64
}

func (c *counter) Spec() core.EnvSpec {
	return core.EnvSpec{
		Name:        "counter",
		Agents:      []string{"a", "b"},
		ObsSize:     2,
		Decisions:   []core.DecisionSpec{{Name: "zero"}, {Name: "one"}},
		StateSize:   1,
		StepRewards: true,
		Metrics:     []string{"total"},
		MaxSteps:    c.p.Steps,
	}
}

func (c *counter) obs() []core.Observation {
	o := make([]core.Observation, 2)
	for i := range o {
		o[i] = core.Observation{Features: []float64{float64(c.t), c.total}, Text: fmt.Sprintf("agent %d at step %d", i, c.t)}
	}
	return o
}

func (c *counter) Reset(seed uint64) ([]core.Observation, error) {
	if c.p.Log {
		slog.Info("reset", "seed", seed)
		log.Printf("log package at reset %d", seed)
		fmt.Fprintf(os.Stdout, "stdout at reset %d\n", seed)
		fmt.Fprintf(os.Stderr, "stderr at reset %d\n", seed)
	}
	c.t, c.total = 0, float64(seed%7)
	return c.obs(), nil
}

func (c *counter) Step(actions []core.Action) (core.StepResult, error) {
	if len(actions) != 2 {
		return core.StepResult{}, fmt.Errorf("want 2 actions, got %d", len(actions))
	}
	c.t++
	switch c.t {
	case c.p.ExitAtStep:
		slog.Error("exiting on purpose", "step", c.t)
		os.Exit(c.p.ExitCode)
	case c.p.HangAtStep:
		select {}
	case c.p.PanicAtStep:
		panic("faulty: panicking on purpose")
	}
	for _, a := range actions {
		c.total += float64(a.Decision)
	}
	r := core.StepResult{Observations: c.obs(), Rewards: []float64{c.total, c.total}, Terminated: c.t >= c.p.Steps}
	if r.Terminated {
		r.Metrics = map[string]float64{"total": c.total}
	}
	return r, nil
}

// Truncate ends the episode early (core.Truncater).
func (c *counter) Truncate() (core.StepResult, error) {
	return core.StepResult{Observations: c.obs(), Truncated: true, Metrics: map[string]float64{"total": c.total}}, nil
}

func (c *counter) State() []float64 { return []float64{c.total} }
func (c *counter) Close() error     { return nil }

// sum is a reward function with one component, "total".
type sum struct{}

func (sum) Name() string         { return "faulty.sum" }
func (sum) Components() []string { return []string{"total"} }
func (sum) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	if _, ok := ep.Metrics["crash"]; ok {
		os.Exit(4)
	}
	if _, ok := ep.Metrics["fail"]; ok {
		return nil, nil, errors.New("episode has a fail metric")
	}
	return map[string]float64{"total": ep.Metrics["total"]}, map[string]float64{"steps": float64(ep.Steps)}, nil
}

func main() {
	envFactory := func(params map[string]any) (core.Env, error) {
		p := Params{Steps: 10, ExitCode: 3}
		if err := core.DecodeParams(params, &p); err != nil {
			return nil, err
		}
		return &counter{p: p}, nil
	}
	rewardFactory := func(map[string]any) (core.RewardFunc, error) { return sum{}, nil }

	switch handshake {
	case "":
		serve.Serve(serve.Config{Env: envFactory, Reward: rewardFactory})
	case "badcookie", "badversion":
		hs := grpcplugin.Handshake()
		version := grpcplugin.ProtocolVersion
		if handshake == "badcookie" {
			hs.MagicCookieValue = "someone-elses-cookie"
		} else {
			version = 99
			hs.ProtocolVersion = uint(version)
		}
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: map[int]plugin.PluginSet{version: {grpcplugin.EnvPluginName: &grpcplugin.EnvPlugin{Factory: envFactory}}},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	default:
		fmt.Fprintf(os.Stderr, "faulty: unknown handshake variant %q\n", handshake)
		os.Exit(2)
	}
}
