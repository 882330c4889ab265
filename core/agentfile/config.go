// Package agentfile loads and validates a troupe project file
// (agentfile.toml): defaults for everything optional, and errors that name
// the file, line and key of whatever is wrong.
package agentfile

import (
	"fmt"
	"net/url"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
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
	Budget  rollout.Budget `toml:"budget"`
	Rollout rollout.Config `toml:"rollout"`
	Train   trainer.Config `toml:"train"`
	Eval    rollout.Eval   `toml:"eval"`

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
	Sandbox core.Sandbox   `toml:"sandbox"`
	SHA256  string         `toml:"sha256"`
}

// RewardWeights weighs the reward components into the joint reward.
type RewardWeights struct {
	Weights map[string]float64 `toml:"weights"`
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
		Rollout: rollout.DefaultConfig(),
		Train:   trainer.DefaultConfig(),
		Eval:    rollout.DefaultEval(),
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
