package agentfile

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
)

// Validate checks every value's range and the references between tables.
// Errors are *Error values naming the key, and the file and line when c
// was loaded from a file.
func (c Config) Validate() error {
	bad := func(key, format string, args ...any) error {
		return c.errorAt(key, fmt.Errorf(format, args...))
	}
	if _, err := core.ParseSourceRef(c.Env.Source); err != nil {
		return c.errorAt("env.source", err)
	}
	if err := checkSHA256(c.Env.Source, c.Env.SHA256); err != nil {
		return c.errorAt("env.sha256", err)
	}
	if err := c.Env.Sandbox.Validate(); err != nil {
		return c.errorAt("env.sandbox", err)
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
		if err := c.LLM[name].Validate(); err != nil {
			return c.errorAt("llm."+name, err)
		}
	}
	if len(c.Rewards) == 0 {
		return bad("rewards", "at least one [[rewards]] table is needed")
	}
	for i, r := range c.Rewards {
		k := fmt.Sprintf("rewards.%d", i)
		if _, err := core.ParseSourceRef(r.Source); err != nil {
			return c.errorAt(k+".source", err)
		}
		if err := checkSHA256(r.Source, r.SHA256); err != nil {
			return c.errorAt(k+".sha256", err)
		}
		if err := r.Sandbox.Validate(); err != nil {
			return c.errorAt(k+".sandbox", err)
		}
		if r.Sandbox.Isolation != "" {
			return bad(k+".sandbox.isolation", "isolation is [env.sandbox]'s: it isolates the LLM-written code a built-in env runs, and a reward runs none")
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
		{"telemetry", c.Telemetry.Validate()},
		{"cluster", c.Cluster.Validate()},
	} {
		if part.err != nil {
			return c.errorAt(part.table, part.err)
		}
	}
	return nil
}

// checkSHA256 reports a sha256 pin that cannot work for source: one that
// is not 64 hex digits, or one on a built-in, which has no file to pin.
func checkSHA256(source, sha string) error {
	if sha == "" {
		return nil
	}
	if strings.HasPrefix(source, "builtin:") {
		return fmt.Errorf("%s has no file to pin: sha256 applies to wasm: and grpc: sources", source)
	}
	if len(sha) != 64 || strings.Trim(strings.ToLower(sha), "0123456789abcdef") != "" {
		return fmt.Errorf("%q is not 64 hex digits", sha)
	}
	return nil
}

// resolvedHeader begins the text Encode writes: a run directory's
// config.toml, which Load reads as history (see Load).
const resolvedHeader = "# Resolved troupe configuration"

// Encode writes the resolved configuration as TOML, with secrets removed:
// API keys are never part of a Config (only the name of the environment
// variable that holds one), and user information in base URLs is dropped.
// Its text begins with a comment that marks it as a run directory's
// config.toml.
func (c Config) Encode() ([]byte, error) {
	out := c
	out.LLM = make(map[string]llm.Config, len(c.LLM))
	for k, v := range c.LLM {
		out.LLM[k] = v.Redacted()
	}
	var buf bytes.Buffer
	buf.WriteString(resolvedHeader + " (defaults filled, overrides applied, secrets removed).\n")
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
