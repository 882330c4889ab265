// Package agentfile loads and validates a troupe project file
// (agentfile.toml): defaults for everything optional, and errors that name
// the file, line and key of whatever is wrong.
package agentfile

import (
	"fmt"
	"net/url"
	"time"
)

// Config is a project file's resolved content. Treat it as immutable once
// loaded: Load returns a fresh value and nothing in troupe mutates it.
type Config struct {
	Project Project        `toml:"project"`
	Env     Env            `toml:"env"`
	Agents  []AgentGroup   `toml:"agents"`
	LLM     map[string]LLM `toml:"llm"`
	Rewards []Reward       `toml:"rewards"`
	Reward  RewardWeights  `toml:"reward"`
	Budget  Budget         `toml:"budget"`
	Train   Train          `toml:"train"`
	Eval    Eval           `toml:"eval"`

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
	Sandbox Sandbox `toml:"sandbox"`
	// SHA256 optionally pins a plugin file.
	SHA256 string `toml:"sha256"`
}

// Sandbox limits a plugin.
type Sandbox struct {
	MemoryLimitMiB int      `toml:"memory_limit_mib"`
	CallTimeout    Duration `toml:"call_timeout"`
	ReadOnlyDirs   []string `toml:"read_only_dirs"`
}

// AgentGroup maps agents to an LLM. Groups are taken in order: the first
// Count agents of the env get the first group's LLM, and so on.
type AgentGroup struct {
	Role  string `toml:"role"`
	Count int    `toml:"count"`
	LLM   string `toml:"llm"`
}

// LLM configures one named LLM backend ([llm.NAME]).
type LLM struct {
	// Backend is "sim" (offline, default) or "openai".
	Backend           string   `toml:"backend"`
	Model             string   `toml:"model"`
	BaseURL           string   `toml:"base_url"`
	APIKeyEnv         string   `toml:"api_key_env"`
	MaxConcurrency    int      `toml:"max_concurrency"`
	RequestsPerMinute int      `toml:"requests_per_minute"`
	TokensPerMinute   int      `toml:"tokens_per_minute"`
	MaxRetries        int      `toml:"max_retries"`
	Timeout           Duration `toml:"timeout"`
	MaxTokens         int      `toml:"max_tokens"`
	Temperature       float64  `toml:"temperature"`
	// Cache, if set, is a directory of recorded completions; CacheMode is
	// "record", "replay" or "auto".
	Cache     string `toml:"cache"`
	CacheMode string `toml:"cache_mode"`
	// Sim holds the latency model of the sim backend.
	Sim SimLatency `toml:"sim"`
}

// SimLatency is the sim backend's latency model: latency = base +
// prompt tokens / prefill_tps + completion tokens / decode_tps.
type SimLatency struct {
	BaseLatency Duration `toml:"base_latency"`
	PrefillTPS  float64  `toml:"prefill_tps"`
	DecodeTPS   float64  `toml:"decode_tps"`
}

// Reward is one reward function ([[rewards]]).
type Reward struct {
	Source  string         `toml:"source"`
	Params  map[string]any `toml:"params"`
	Sandbox Sandbox        `toml:"sandbox"`
	SHA256  string         `toml:"sha256"`
}

// RewardWeights weighs the reward components into the joint reward.
type RewardWeights struct {
	Weights map[string]float64 `toml:"weights"`
}

// Budget caps LLM usage per episode. 0 means no cap.
type Budget struct {
	MaxTokens         int `toml:"max_tokens"`
	MaxTokensPerAgent int `toml:"max_tokens_per_agent"`
}

// Train configures GRPO training.
type Train struct {
	Iterations        int     `toml:"iterations"`
	TasksPerIteration int     `toml:"tasks_per_iteration"`
	GroupSize         int     `toml:"group_size"`
	LearningRate      float64 `toml:"learning_rate"`
	Clip              float64 `toml:"clip"`
	ClipHigh          float64 `toml:"clip_high"`
	KL                float64 `toml:"kl"`
	Entropy           float64 `toml:"entropy"`
	MaxGradNorm       float64 `toml:"max_grad_norm"`
	Epochs            int     `toml:"epochs"`
	Minibatches       int     `toml:"minibatches"`
	Baseline          string  `toml:"baseline"`
	Scale             string  `toml:"scale"`
	Credit            string  `toml:"credit"`
	Hidden            []int   `toml:"hidden"`
	SharePolicy       bool    `toml:"share_policy"`
	// Workers is the number of rollout workers (0: one per CPU).
	Workers int `toml:"workers"`
	// CheckpointEvery writes checkpoint/ every N iterations.
	CheckpointEvery int `toml:"checkpoint_every"`
	// MaxFailureRatio stops the run when more than this fraction of an
	// iteration's episodes failed.
	MaxFailureRatio float64 `toml:"max_failure_ratio"`
	// MaxSteps caps an episode's length when the env sets none.
	MaxSteps int `toml:"max_steps"`
}

// Eval configures evaluation.
type Eval struct {
	Episodes int `toml:"episodes"`
	// Seed selects the evaluation seeds; they never overlap training seeds.
	Seed uint64 `toml:"seed"`
	// Sampled evaluates the trained policy by sampling instead of greedily.
	Sampled bool `toml:"sampled"`
	// Policies limits the evaluated policies (default: grpo, every
	// baseline the env offers, and random).
	Policies []string `toml:"policies"`
}

// Duration is a time.Duration written as a string such as "60s".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (want e.g. \"60s\", \"500ms\")", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// Default returns the configuration used for every key a file leaves out.
func Default() Config {
	return Config{
		Project: Project{Name: "troupe", Seed: 1},
		Env:     Env{Source: "builtin:writing"},
		LLM:     map[string]LLM{},
		Reward:  RewardWeights{Weights: map[string]float64{}},
		Train: Train{
			Iterations:        100,
			TasksPerIteration: 16,
			GroupSize:         8,
			LearningRate:      3e-3,
			Clip:              0.2,
			MaxGradNorm:       1.0,
			Epochs:            4,
			Minibatches:       4,
			Baseline:          "mean",
			Scale:             "group",
			Credit:            "joint",
			Hidden:            []int{64, 64},
			SharePolicy:       true,
			CheckpointEvery:   10,
			MaxFailureRatio:   0.2,
			MaxSteps:          1000,
		},
		Eval: Eval{Episodes: 100, Seed: 1},
	}
}

// DefaultLLM returns the defaults of an [llm.NAME] table.
func DefaultLLM() LLM {
	return LLM{
		Backend:        "sim",
		Model:          "gpt-4o-mini",
		APIKeyEnv:      "OPENAI_API_KEY",
		MaxConcurrency: 16,
		MaxRetries:     5,
		Timeout:        Duration{60 * time.Second},
		MaxTokens:      1024,
		Temperature:    0.7,
		CacheMode:      "auto",
		Sim: SimLatency{
			BaseLatency: Duration{800 * time.Millisecond},
			PrefillTPS:  2000,
			DecodeTPS:   40,
		},
	}
}

// redactURL removes user information from a URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}
