package agentfile

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/troupe-dev/troupe/core"
)

func bad(key, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks every value's range and the references between tables.
// Errors are *Error values naming the key.
func (c Config) Validate() error {
	if _, err := core.ParseSourceRef(c.Env.Source); err != nil {
		return bad("env.source", "%v", err)
	}
	if err := nested("env.sandbox", c.Env.Sandbox.Validate()); err != nil {
		return err
	}
	for i, a := range c.Agents {
		k := fmt.Sprintf("agents.%d", i)
		if a.Count < 1 {
			return bad(k+".count", "must be at least 1, got %d", a.Count)
		}
		name := a.LLM
		if name == "" {
			name = "default"
		}
		if _, ok := c.LLM[name]; !ok {
			return bad(k+".llm", "no [llm.%s] table (have %s)", name, strings.Join(sortedKeys(c.LLM), ", "))
		}
	}
	for _, name := range sortedKeys(c.LLM) {
		l := c.LLM[name]
		k := "llm." + name
		switch l.Backend {
		case "sim", "openai":
		default:
			return bad(k+".backend", "must be \"sim\" or \"openai\", got %q", l.Backend)
		}
		if l.MaxConcurrency < 1 {
			return bad(k+".max_concurrency", "must be at least 1, got %d", l.MaxConcurrency)
		}
		if l.RequestsPerMinute < 0 {
			return bad(k+".requests_per_minute", "must be ≥ 0 (0 = unlimited), got %d", l.RequestsPerMinute)
		}
		if l.TokensPerMinute < 0 {
			return bad(k+".tokens_per_minute", "must be ≥ 0 (0 = unlimited), got %d", l.TokensPerMinute)
		}
		if l.MaxRetries < 0 {
			return bad(k+".max_retries", "must be ≥ 0, got %d", l.MaxRetries)
		}
		if l.Timeout.Duration <= 0 {
			return bad(k+".timeout", "must be positive, got %s", l.Timeout.Duration)
		}
		if l.MaxTokens < 1 {
			return bad(k+".max_tokens", "must be at least 1, got %d", l.MaxTokens)
		}
		if l.Temperature < 0 || l.Temperature > 2 {
			return bad(k+".temperature", "must be in [0, 2], got %g", l.Temperature)
		}
		switch l.CacheMode {
		case "record", "replay", "auto":
		default:
			return bad(k+".cache_mode", "must be record, replay or auto, got %q", l.CacheMode)
		}
		if l.Sim.BaseLatency.Duration < 0 {
			return bad(k+".sim.base_latency", "must be ≥ 0, got %s", l.Sim.BaseLatency.Duration)
		}
		if l.Sim.PrefillTPS <= 0 {
			return bad(k+".sim.prefill_tps", "must be positive, got %g", l.Sim.PrefillTPS)
		}
		if l.Sim.DecodeTPS <= 0 {
			return bad(k+".sim.decode_tps", "must be positive, got %g", l.Sim.DecodeTPS)
		}
	}
	if len(c.Rewards) == 0 {
		return bad("rewards", "at least one [[rewards]] table is needed")
	}
	for i, r := range c.Rewards {
		k := fmt.Sprintf("rewards.%d", i)
		if _, err := core.ParseSourceRef(r.Source); err != nil {
			return bad(k+".source", "%v", err)
		}
		if err := nested(k+".sandbox", r.Sandbox.Validate()); err != nil {
			return err
		}
	}
	if len(c.Reward.Weights) == 0 {
		return bad("reward.weights", "no weights: give at least one component weight, e.g. quality = 1.0")
	}
	for _, part := range []struct {
		table string
		err   error
	}{
		{"budget", c.Budget.Validate()},
		{"rollout", c.Rollout.Validate()},
		{"train", c.Train.Validate()},
		{"eval", c.Eval.Validate()},
	} {
		if err := nested(part.table, part.err); err != nil {
			return err
		}
	}
	return nil
}

// nested turns a component's *core.SettingError into an *Error about the
// key inside table.
func nested(table string, err error) error {
	if err == nil {
		return nil
	}
	if se, ok := errors.AsType[*core.SettingError](err); ok {
		return bad(table+"."+se.Key, "%s", se.Msg)
	}
	return bad(table, "%v", err)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Encode writes the resolved configuration as TOML, with secrets removed:
// API keys are never part of a Config (only the name of the environment
// variable that holds one), and user information in base URLs is dropped.
func (c Config) Encode() ([]byte, error) {
	out := c
	out.LLM = map[string]LLM{}
	for k, v := range c.LLM {
		v.BaseURL = redactURL(v.BaseURL)
		out.LLM[k] = v
	}
	var buf bytes.Buffer
	buf.WriteString("# Resolved troupe configuration (defaults filled, overrides applied, secrets removed).\n")
	if err := toml.NewEncoder(&buf).Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TotalAgents returns the sum of the [[agents]] counts (0 if none given).
func (c Config) TotalAgents() int {
	n := 0
	for _, a := range c.Agents {
		n += a.Count
	}
	return n
}

// AgentLLM returns the name of the LLM table of agent i.
func (c Config) AgentLLM(i int) string {
	for _, a := range c.Agents {
		if i < a.Count {
			if a.LLM == "" {
				return "default"
			}
			return a.LLM
		}
		i -= a.Count
	}
	if _, ok := c.LLM["default"]; ok || len(c.LLM) == 0 {
		return "default"
	}
	return sortedKeys(c.LLM)[0]
}
