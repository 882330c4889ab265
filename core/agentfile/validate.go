package agentfile

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
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
			return bad(k+".llm", "no [llm.%s] table (have %s)", name, strings.Join(slices.Sorted(maps.Keys(c.LLM)), ", "))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.LLM)) {
		if err := nested("llm."+name, c.LLM[name].Validate()); err != nil {
			return err
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

// Encode writes the resolved configuration as TOML, with secrets removed:
// API keys are never part of a Config (only the name of the environment
// variable that holds one), and user information in base URLs is dropped.
func (c Config) Encode() ([]byte, error) {
	out := c
	out.LLM = make(map[string]llm.Config, len(c.LLM))
	for k, v := range c.LLM {
		out.LLM[k] = v.Redacted()
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
	return slices.Sorted(maps.Keys(c.LLM))[0]
}
