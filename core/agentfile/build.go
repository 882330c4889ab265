package agentfile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/cluster"
	"github.com/troupe-dev/troupe/core/llm"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/telemetry"
	"github.com/troupe-dev/troupe/core/trainer"
)

// Built is a rollout.Setup built from a Config, with what must be closed
// when the run ends (plugin processes, compiled modules, HTTP clients).
type Built struct {
	// Setup is how episodes are played and scored.
	Setup rollout.Setup
	// Train and Eval are the [train] and [eval] tables.
	Train trainer.Config
	Eval  rollout.Eval
	// Cluster is the [cluster] table: where the trainer sends episodes.
	Cluster cluster.Config

	closers []func() error
}

// telemetryFlushTimeout bounds how long Close waits for the telemetry
// exporters to send what they hold.
const telemetryFlushTimeout = 5 * time.Second

// Close releases everything Build opened.
func (b *Built) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	return errors.Join(errs...)
}

// ref turns an agentfile source into a core.SourceRef, resolving plugin
// paths against the agentfile's directory.
func (c Config) ref(key, source string, params map[string]any, sb core.Sandbox, sha string) (core.SourceRef, error) {
	r, err := core.ParseSourceRef(source)
	if err != nil {
		return r, c.errorAt(key, err)
	}
	if r.Scheme != "builtin" && !filepath.IsAbs(r.Path) && c.Dir != "" {
		r.Path = filepath.Join(c.Dir, r.Path)
	}
	r.Params, r.SHA256 = c.resolvePathParams(params), sha
	r.Sandbox = sb
	r.Sandbox.ReadOnlyDirs = c.absPaths(sb.ReadOnlyDirs)
	return r, nil
}

// Build loads the env and reward functions, connects the LLM backends and
// returns the rollout setup; the [train] and [eval] tables are c.Train and
// c.Eval, as they are.
func (c Config) Build(ctx context.Context) (*Built, error) {
	b := &Built{}
	fail := func(err error) (*Built, error) {
		_ = b.Close()
		return nil, err
	}
	// Telemetry starts first and stops last, after what it watches.
	tel, err := telemetry.Start(ctx, c.Telemetry)
	if err != nil {
		return fail(c.errorAt("telemetry", err))
	}
	b.closers = append(b.closers, func() error {
		sctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
		defer cancel()
		return tel.Shutdown(sctx)
	})
	envRef, err := c.ref("env.source", c.Env.Source, c.Env.Params, c.Env.Sandbox, c.Env.SHA256)
	if err != nil {
		return fail(err)
	}
	src, err := core.LoadEnv(ctx, envRef)
	if err != nil {
		return fail(c.loadError("env", "env ", err))
	}
	b.closers = append(b.closers, src.Close)
	spec := src.Spec()
	if n := c.TotalAgents(); n > 0 && n != spec.NumAgents() {
		return fail(c.errorAt("agents", fmt.Errorf("the [[agents]] tables count %d agents, but env %q has %d (set the team size in [env.params])", n, spec.Name, spec.NumAgents())))
	}
	// [eval] is the evaluation after training, so "grpo" is a policy;
	// rollout.Evaluate checks again with what it is given.
	if err := c.Eval.CheckPolicies(spec, true); err != nil {
		return fail(c.errorAt("eval", err))
	}
	s := rollout.Setup{Name: c.Project.Name, Env: src, Seed: c.Project.Seed, Weights: c.Reward.Weights, Budget: c.Budget, Rollout: c.Rollout, Telemetry: tel}
	for i, r := range c.Rewards {
		key := fmt.Sprintf("rewards.%d.source", i)
		ref, err := c.ref(key, r.Source, r.Params, c.rewardSandbox(i), r.SHA256)
		if err != nil {
			return fail(err)
		}
		rf, err := core.LoadReward(ctx, ref)
		if err != nil {
			return fail(c.loadError(fmt.Sprintf("rewards.%d", i), "reward ", err))
		}
		if cl, ok := rf.(interface{ Close() error }); ok {
			b.closers = append(b.closers, cl.Close)
		}
		s.Rewards = append(s.Rewards, rf)
	}
	if err := rollout.CheckRewards(s.Rewards, c.Reward.Weights); err != nil {
		return fail(c.errorAt("", err))
	}
	// A reward whose metric no episode carries would fail every episode.
	if err := rollout.CheckRequiredMetrics(spec, s.Rewards); err != nil {
		return fail(c.errorAt("", err))
	}
	backends := map[string]core.LLM{}
	for i := 0; i < spec.NumAgents(); i++ {
		name := c.AgentLLM(i)
		l := c.LLM[name]
		a := rollout.AgentLLM{Config: l}
		if l.Backend != llm.BackendSim {
			be, ok := backends[name]
			if !ok {
				cl, err := llm.New(c.resolveLLM(l))
				if err != nil {
					return fail(c.errorAt("llm."+name, err))
				}
				b.closers = append(b.closers, cl.Close)
				be, backends[name] = cl, cl
			}
			a.Backend = be
		}
		s.Agents = append(s.Agents, a)
	}
	b.Setup, b.Train, b.Eval, b.Cluster = s, c.Train, c.Eval, c.Cluster
	return b, nil
}

// loadError is a configuration error about key for err, a loader's error,
// with the loader's prefix (which the key makes redundant) removed.
func (c Config) loadError(key, prefix string, err error) error {
	e := c.errorAt(key, err)
	e.Msg = strings.TrimPrefix(e.Msg, prefix)
	return e
}

// resolvePathParams returns params with relative paths made absolute
// against the agentfile's directory. A param is a path when its name is
// "dataset" or ends in "_dir", "_file" or "_path", and its value is a
// non-empty string.
func (c Config) resolvePathParams(params map[string]any) map[string]any {
	if c.Dir == "" || len(params) == 0 {
		return params
	}
	out := make(map[string]any, len(params))
	for k, v := range params {
		out[k] = v
		s, ok := v.(string)
		if !ok || s == "" || filepath.IsAbs(s) {
			continue
		}
		if k == "dataset" || strings.HasSuffix(k, "_dir") || strings.HasSuffix(k, "_file") || strings.HasSuffix(k, "_path") {
			out[k] = filepath.Join(c.Dir, s)
		}
	}
	return out
}

// rewardSandbox returns the sandbox of reward i: its own [rewards.sandbox]
// settings, or, when it sets none, the limits of [env.sandbox] (not its
// isolation, which is the env's alone), so that one table limits every
// plugin of a project.
func (c Config) rewardSandbox(i int) core.Sandbox {
	sb := c.Rewards[i].Sandbox
	if sb.MemoryLimitMiB == 0 && sb.CallTimeout == 0 && len(sb.ReadOnlyDirs) == 0 && sb.Isolation == "" {
		sb = c.Env.Sandbox
		sb.Isolation = ""
	}
	return sb
}

// filledSandbox returns sb with the defaults of source's loader in place
// of its zero limits (core.FilledSandbox): the limits in force.
func filledSandbox(source string, sb core.Sandbox) core.Sandbox {
	r, err := core.ParseSourceRef(source)
	if err != nil {
		return sb
	}
	r.Sandbox = sb
	return core.FilledSandbox(r)
}

// Resolved returns a copy whose plugin paths are absolute, whose rewards'
// sandboxes are the ones they run with (a reward without its own takes
// [env.sandbox]'s), and whose sandboxes show their loaders' defaults
// instead of zero limits (the Wasm loader's 256 MiB and 5 s), so the copy
// means the same wherever it is written and says what was in force
// (config.toml of a run directory).
func (c Config) Resolved() Config {
	out := c
	abs := func(source string) string {
		r, err := core.ParseSourceRef(source)
		if err != nil || r.Scheme == "builtin" || filepath.IsAbs(r.Path) || c.Dir == "" {
			return source
		}
		return r.Scheme + ":" + filepath.Join(c.Dir, r.Path)
	}
	out.Env.Source = abs(c.Env.Source)
	out.Env.Params = c.resolvePathParams(c.Env.Params)
	out.Env.Sandbox.ReadOnlyDirs = c.absPaths(c.Env.Sandbox.ReadOnlyDirs)
	out.Env.Sandbox = filledSandbox(c.Env.Source, out.Env.Sandbox)
	out.Rewards = append([]Reward(nil), c.Rewards...)
	for i := range out.Rewards {
		r := &out.Rewards[i]
		r.Source = abs(r.Source)
		r.Params = c.resolvePathParams(r.Params)
		r.Sandbox = c.rewardSandbox(i)
		r.Sandbox.ReadOnlyDirs = c.absPaths(r.Sandbox.ReadOnlyDirs)
		r.Sandbox = filledSandbox(r.Source, r.Sandbox)
	}
	out.LLM = make(map[string]llm.Config, len(c.LLM))
	for name, l := range c.LLM {
		out.LLM[name] = c.resolveLLM(l)
	}
	return out
}

// resolveLLM returns l with a relative cache directory resolved against the
// agentfile's directory.
func (c Config) resolveLLM(l llm.Config) llm.Config {
	if l.Cache != "" && !filepath.IsAbs(l.Cache) && c.Dir != "" {
		l.Cache = filepath.Join(c.Dir, l.Cache)
	}
	return l
}

// absPaths returns paths with the relative ones resolved against the
// agentfile's directory.
func (c Config) absPaths(paths []string) []string {
	if c.Dir == "" || len(paths) == 0 {
		return paths
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.Dir, p)
		}
		out[i] = p
	}
	return out
}
