package llm

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

func TestConfigValidateNamesTheKey(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for key, edit := range map[string]func(*Config){
		"backend":             func(c *Config) { c.Backend = "vllm" },
		"base_url":            func(c *Config) { c.BaseURL = "ftp://u:secret@host/v1" },
		"max_concurrency":     func(c *Config) { c.MaxConcurrency = 0 },
		"requests_per_minute": func(c *Config) { c.RequestsPerMinute = -1 },
		"tokens_per_minute":   func(c *Config) { c.TokensPerMinute = -1 },
		"max_retries":         func(c *Config) { c.MaxRetries = -1 },
		"timeout":             func(c *Config) { c.Timeout = 0 },
		"max_tokens":          func(c *Config) { c.MaxTokens = 0 },
		"temperature":         func(c *Config) { c.Temperature = math.NaN() },
		"cache_mode":          func(c *Config) { c.CacheMode = "replay-only" },
		"sim.base_latency":    func(c *Config) { c.Sim.Base = -1 },
		"sim.prefill_tps":     func(c *Config) { c.Sim.PrefillTPS = math.Inf(1) },
		"sim.decode_tps":      func(c *Config) { c.Sim.DecodeTPS = 0 },
	} {
		c := DefaultConfig()
		edit(&c)
		err := c.Validate()
		se, ok := errors.AsType[*core.SettingError](err)
		if !ok || se.Key != key {
			t.Errorf("%s: want a *core.SettingError for %s, got %v", key, key, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the URL's password: %v", key, err)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted an invalid config", key)
		}
	}
}

func TestNewRefusesSimAndKeysCacheErrors(t *testing.T) {
	if _, err := New(DefaultConfig()); err == nil || !strings.Contains(err.Error(), "NewSim") {
		t.Errorf("sim backend: %v", err)
	}
	c := DefaultConfig()
	c.Backend, c.Cache, c.CacheMode = BackendOpenAI, t.TempDir()+"/missing", CacheReplay
	_, err := New(c)
	if se, ok := errors.AsType[*core.SettingError](err); !ok || se.Key != "cache" {
		t.Errorf("replay from a missing directory: want a cache error, got %v", err)
	}
}

func TestRedacted(t *testing.T) {
	c := DefaultConfig()
	c.BaseURL = "https://user:secret@example.com/v1"
	if got := c.Redacted().BaseURL; got != "https://example.com/v1" {
		t.Errorf("Redacted BaseURL = %q", got)
	}
	if c.BaseURL != "https://user:secret@example.com/v1" {
		t.Errorf("Redacted changed its receiver")
	}
}

func TestNewKeepsItsConfig(t *testing.T) {
	for _, mode := range []CacheMode{"", CacheRecord, CacheReplay, CacheAuto} {
		c := DefaultConfig()
		c.Backend, c.BaseURL, c.APIKeyEnv, c.MaxRetries = BackendOpenAI, "http://127.0.0.1:9/v1", "TROUPE_TEST_NO_SUCH_KEY", 0
		if mode != "" {
			c.Cache, c.CacheMode = t.TempDir(), mode
		}
		b, err := New(c)
		if err != nil {
			t.Fatalf("cache mode %q: %v", mode, err)
		}
		if got := b.Config(); got != c {
			t.Errorf("cache mode %q: Config() = %+v, want %+v", mode, got, c)
		}
		b.Close()
	}
}
