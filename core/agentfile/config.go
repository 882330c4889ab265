// Package agentfile loads and validates a troupe project file
// (agentfile.toml): defaults for everything optional, and errors that name
// the file, line and key of whatever is wrong.
package agentfile

import (
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/cluster"
	"github.com/troupe-dev/troupe/core/llm"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/telemetry"
	"github.com/troupe-dev/troupe/core/trainer"
)

// Config is a project file's resolved content. Treat it as immutable once
// loaded: Load returns a fresh value and nothing in troupe mutates it.
type Config struct {
	Project Project               `toml:"project"`
	Env     Env                   `toml:"env"`
	Agents  []AgentGroup          `toml:"agents"`
	LLM     map[string]llm.Config `toml:"llm"`
	Rewards []Reward              `toml:"rewards"`
	Reward  RewardWeights         `toml:"reward"`
	Budget  rollout.Budget        `toml:"budget"`
	Rollout rollout.Config        `toml:"rollout"`
	Train   trainer.Config        `toml:"train"`
	Eval    rollout.Eval          `toml:"eval"`
	// Telemetry says where traces and metrics go (none by default).
	Telemetry telemetry.Config `toml:"telemetry"`
	// Cluster says where the rollout workers are (in process by default).
	Cluster cluster.Config `toml:"cluster"`

	// Dir is the directory of the agentfile; relative plugin paths resolve
	// against it. Not part of the file.
	Dir string `toml:"-"`
	// Path is the file the config was loaded from ("" when built in code).
	Path string `toml:"-"`

	src *source // where the config came from, for errors; nil when built in code
}

// Project names the project and fixes its master seed.
type Project struct {
	Name string `toml:"name"`
	Seed uint64 `toml:"seed"`
}

// Env says which task to load and how.
type Env struct {
	// Source is "builtin:NAME", "wasm:PATH" or "grpc:PATH".
	Source string `toml:"source"`
	// Params are passed to the env as-is.
	Params map[string]any `toml:"params"`
	// Sandbox limits a plugin env.
	Sandbox core.Sandbox `toml:"sandbox"`
	// SHA256 optionally pins a plugin file.
	SHA256 string `toml:"sha256"`
}

// AgentGroup maps agents to an LLM. Groups are taken in order: the first
// Count agents of the env get the first group's LLM, and so on.
type AgentGroup struct {
	Role  string `toml:"role"`
	Count int    `toml:"count"`
	LLM   string `toml:"llm"`
}

// Reward is one reward function ([[rewards]]).
type Reward struct {
	Source  string         `toml:"source"`
	Params  map[string]any `toml:"params"`
	Sandbox core.Sandbox   `toml:"sandbox"`
	SHA256  string         `toml:"sha256"`
}

// RewardWeights weighs the reward components into the joint reward.
type RewardWeights struct {
	Weights map[string]float64 `toml:"weights"`
}

// Default returns the configuration used for every key a file leaves out.
func Default() Config {
	return Config{
		Project:   Project{Name: "troupe", Seed: 1},
		Env:       Env{Source: "builtin:writing"},
		LLM:       map[string]llm.Config{},
		Reward:    RewardWeights{Weights: map[string]float64{}},
		Rollout:   rollout.DefaultConfig(),
		Train:     trainer.DefaultConfig(),
		Eval:      rollout.DefaultEval(),
		Telemetry: telemetry.DefaultConfig(),
		Cluster:   cluster.DefaultConfig(),
	}
}
