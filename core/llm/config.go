package llm

import (
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// Backend names an LLM backend: the backend key of [Config].
type Backend string

// The backends of [Config.Backend].
const (
	// BackendSim is the offline simulated LLM (see [NewSim]); its
	// completions are labelled "sim".
	BackendSim Backend = "sim"
	// BackendOpenAI is an OpenAI-compatible chat-completions endpoint
	// (see [New]); its completions are labelled "openai".
	BackendOpenAI Backend = "openai"
)

// CacheMode says what the record/replay cache of [Config.Cache] does.
type CacheMode string

// The modes of [Config.CacheMode].
const (
	// CacheRecord calls the endpoint for every request and writes the
	// completion, replacing an earlier recording of the same request.
	CacheRecord CacheMode = "record"
	// CacheReplay answers only from recordings; a miss is an error
	// wrapping [ErrNotRecorded]. The endpoint is never called and no API
	// key is needed.
	CacheReplay CacheMode = "replay"
	// CacheAuto replays what is recorded and records what is not.
	CacheAuto CacheMode = "auto"
)

// Config holds one LLM backend's settings: a table llm.NAME of the
// agentfile. Each field's comment gives its default ([DefaultConfig]) and
// [Config.Validate] its rule. It holds no secret (the API key is read from
// the environment variable it names), so it is safe to print or log.
type Config struct {
	// Backend is BackendSim or BackendOpenAI. Default sim.
	Backend Backend `toml:"backend"`
	// Model is the model requests are sent with when they name none.
	// Default "gpt-4o-mini".
	Model string `toml:"model"`
	// BaseURL is the API root, e.g. "http://localhost:8000/v1" for vLLM;
	// it starts with http:// or https://. Default "", which means
	// https://api.openai.com/v1.
	BaseURL string `toml:"base_url"`
	// APIKeyEnv names the environment variable holding the API key.
	// Default "OPENAI_API_KEY" (also used when empty). An unset or empty
	// variable means no key, which local servers accept; the hosted
	// OpenAI API does not.
	APIKeyEnv string `toml:"api_key_env"`
	// MaxConcurrency bounds the HTTP requests in flight, ≥ 1. Default 16.
	MaxConcurrency int `toml:"max_concurrency"`
	// RequestsPerMinute spaces request starts (retries included) evenly,
	// 60/RequestsPerMinute seconds apart; ≥ 0, 0 (the default) means
	// unlimited.
	RequestsPerMinute int `toml:"requests_per_minute"`
	// TokensPerMinute paces prompt and completion tokens: each attempt is
	// charged an estimate (prompt characters ÷ 4 + max_tokens) before it
	// is sent, corrected to the reported usage afterwards. ≥ 0, 0 (the
	// default) means unlimited.
	TokensPerMinute int `toml:"tokens_per_minute"`
	// MaxRetries caps the retries of one call after retryable errors;
	// ≥ 0, 0 means one attempt only. Default 5.
	MaxRetries int `toml:"max_retries"`
	// Timeout bounds each HTTP attempt (the caller's context still bounds
	// the whole call); ≥ 1ms. Default 60s.
	Timeout time.Duration `toml:"timeout"`
	// MaxTokens is the max_tokens the runtime gives requests that set
	// none, ≥ 1. Default 1024.
	MaxTokens int `toml:"max_tokens"`
	// Temperature is the temperature the runtime gives requests that set
	// none (or 0), in [0, 2]. Default 0.7.
	Temperature float64 `toml:"temperature"`
	// Cache, if set, is a directory of recorded completions of the
	// openai backend (the sim backend needs none: it is deterministic).
	// Default "" (no cache).
	Cache string `toml:"cache"`
	// CacheMode says what the cache does. Default auto.
	CacheMode CacheMode `toml:"cache_mode"`
	// Sim is the latency model of the sim backend.
	Sim LatencyModel `toml:"sim"`

	// Logger, if set, receives one Warn record per retry of the openai
	// backend, before its wait (endpoint, agent, attempt, status, delay,
	// retry_after: whether the server's Retry-After set the delay,
	// error). It is not a setting of the agentfile; nil logs nothing.
	Logger *slog.Logger `toml:"-"`
}

// DefaultConfig returns the defaults documented on [Config]'s fields.
func DefaultConfig() Config {
	return Config{
		Backend: BackendSim, Model: "gpt-4o-mini", APIKeyEnv: defaultAPIKeyEnv,
		MaxConcurrency: 16, MaxRetries: 5, Timeout: 60 * time.Second,
		MaxTokens: 1024, Temperature: 0.7, CacheMode: CacheAuto,
		Sim: LatencyModel{Base: 800 * time.Millisecond, PrefillTPS: 2000, DecodeTPS: 40},
	}
}

// defaultBaseURL is the API root an empty Config.BaseURL stands for, and
// defaultAPIKeyEnv the variable an empty Config.APIKeyEnv stands for.
const (
	defaultBaseURL   = "https://api.openai.com/v1"
	defaultAPIKeyEnv = "OPENAI_API_KEY"
)

// Validate reports the first setting that cannot work, as a
// *core.SettingError naming its key within the table (e.g.
// "max_concurrency", "sim.decode_tps").
func (c Config) Validate() error {
	switch c.Backend {
	case BackendSim, BackendOpenAI:
	default:
		return core.NewSettingError("backend", "must be %q or %q, got %q", BackendSim, BackendOpenAI, c.Backend)
	}
	if c.BaseURL != "" && !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return core.NewSettingError("base_url", "must start with http:// or https://, got %q", redactURL(c.BaseURL))
	}
	switch {
	case c.MaxConcurrency < 1:
		return core.NewSettingError("max_concurrency", "must be at least 1, got %d", c.MaxConcurrency)
	case c.RequestsPerMinute < 0:
		return core.NewSettingError("requests_per_minute", "must be ≥ 0 (0 = unlimited), got %d", c.RequestsPerMinute)
	case c.TokensPerMinute < 0:
		return core.NewSettingError("tokens_per_minute", "must be ≥ 0 (0 = unlimited), got %d", c.TokensPerMinute)
	case c.MaxRetries < 0:
		return core.NewSettingError("max_retries", "must be ≥ 0, got %d", c.MaxRetries)
	case c.Timeout < time.Millisecond:
		return core.NewSettingError("timeout", "must be at least 1ms, got %s", c.Timeout)
	case c.MaxTokens < 1:
		return core.NewSettingError("max_tokens", "must be at least 1, got %d", c.MaxTokens)
	case !(c.Temperature >= 0 && c.Temperature <= 2):
		return core.NewSettingError("temperature", "must be in [0, 2], got %g", c.Temperature)
	}
	switch c.CacheMode {
	case CacheRecord, CacheReplay, CacheAuto:
	default:
		return core.NewSettingError("cache_mode", "must be record, replay or auto, got %q", c.CacheMode)
	}
	if err := c.Sim.Validate(); err != nil {
		return err.(*core.SettingError).In("sim")
	}
	return nil
}

// LatencyModel is the simulated latency of one completion, the sim table
// of [Config]: Base + prompt tokens ÷ PrefillTPS + completion tokens ÷
// DecodeTPS.
type LatencyModel struct {
	// Base is the fixed latency of a call (network, queueing, first
	// token), ≥ 0. Default 800ms.
	Base time.Duration `toml:"base_latency"`
	// PrefillTPS is the prompt throughput in tokens per second, > 0.
	// Default 2000.
	PrefillTPS float64 `toml:"prefill_tps"`
	// DecodeTPS is the generation throughput in tokens per second, > 0.
	// Default 40.
	DecodeTPS float64 `toml:"decode_tps"`
}

// Latency returns the modelled latency of a call with the given token
// counts, rounded to the nanosecond.
func (m LatencyModel) Latency(promptTokens, completionTokens int) time.Duration {
	s := float64(promptTokens)/m.PrefillTPS + float64(completionTokens)/m.DecodeTPS
	return m.Base + time.Duration(math.Round(s*float64(time.Second)))
}

// Validate reports a negative base or a throughput that is not a positive
// number, as a *core.SettingError naming its key.
func (m LatencyModel) Validate() error {
	switch {
	case m.Base < 0:
		return core.NewSettingError("base_latency", "must be ≥ 0, got %s", m.Base)
	case !positive(m.PrefillTPS):
		return core.NewSettingError("prefill_tps", "must be positive, got %g", m.PrefillTPS)
	case !positive(m.DecodeTPS):
		return core.NewSettingError("decode_tps", "must be positive, got %g", m.DecodeTPS)
	}
	return nil
}

// positive reports whether x is a finite number above zero.
func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
