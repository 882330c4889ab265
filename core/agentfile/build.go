package agentfile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/grpo"
	"github.com/troupe-dev/troupe/core/llm"
	"github.com/troupe-dev/troupe/core/runtime"
)

// Built is a runtime.Setup built from a Config, with what must be closed
// when the run ends (plugin processes, compiled modules, HTTP clients).
type Built struct {
	Setup   runtime.Setup
	closers []func() error
}

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
func (c Config) ref(key, source string, params map[string]any, sb Sandbox, sha string) (core.SourceRef, error) {
	r, err := core.ParseSourceRef(source)
	if err != nil {
		return r, &Error{File: c.Path, Key: key, Msg: err.Error()}
	}
	if r.Scheme != "builtin" && !filepath.IsAbs(r.Path) && c.Dir != "" {
		r.Path = filepath.Join(c.Dir, r.Path)
	}
	r.Params, r.SHA256 = c.resolvePathParams(params), sha
	r.Sandbox = core.Sandbox{MemoryLimitMiB: sb.MemoryLimitMiB, CallTimeout: sb.CallTimeout.Duration}
	for _, d := range sb.ReadOnlyDirs {
		if !filepath.IsAbs(d) && c.Dir != "" {
			d = filepath.Join(c.Dir, d)
		}
		r.Sandbox.ReadOnlyDirs = append(r.Sandbox.ReadOnlyDirs, d)
	}
	return r, nil
}

// Build loads the env and reward functions, connects the LLM backends and
// returns the runtime setup. train.workers = 0 becomes one worker per CPU.
func (c Config) Build(ctx context.Context) (*Built, error) {
	b := &Built{}
	fail := func(err error) (*Built, error) {
		_ = b.Close()
		return nil, err
	}
	envRef, err := c.ref("env.source", c.Env.Source, c.Env.Params, c.Env.Sandbox, c.Env.SHA256)
	if err != nil {
		return fail(err)
	}
	src, err := core.LoadEnv(ctx, envRef)
	if err != nil {
		return fail(err)
	}
	b.closers = append(b.closers, src.Close)
	probe, err := src.Open()
	if err != nil {
		return fail(fmt.Errorf("env %s: %w", envRef, err))
	}
	spec := probe.Spec()
	_ = probe.Close()
	if n := c.TotalAgents(); n > 0 && n != spec.NumAgents() {
		return fail(&Error{File: c.Path, Key: "agents", Msg: fmt.Sprintf("the [[agents]] tables count %d agents, but env %q has %d (set the team size in [env.params])", n, spec.Name, spec.NumAgents())})
	}
	s := runtime.Setup{Name: c.Project.Name, Env: src, Seed: c.Project.Seed, Weights: c.Reward.Weights}
	for i, r := range c.Rewards {
		key := fmt.Sprintf("rewards.%d.source", i)
		ref, err := c.ref(key, r.Source, r.Params, r.Sandbox, r.SHA256)
		if err != nil {
			return fail(err)
		}
		rf, err := core.LoadReward(ctx, ref)
		if err != nil {
			return fail(err)
		}
		if cl, ok := rf.(interface{ Close() error }); ok {
			b.closers = append(b.closers, cl.Close)
		}
		s.Rewards = append(s.Rewards, rf)
	}
	backends := map[string]core.LLM{}
	for i := 0; i < spec.NumAgents(); i++ {
		name := c.AgentLLM(i)
		l := c.LLM[name]
		a := runtime.AgentLLM{
			Model: l.Model, MaxTokens: l.MaxTokens, Temperature: l.Temperature,
			Sim: llm.SimConfig{Tiers: map[string]llm.LatencyModel{"": {
				Base: l.Sim.BaseLatency.Duration, PrefillTPS: l.Sim.PrefillTPS, DecodeTPS: l.Sim.DecodeTPS,
			}}},
		}
		if l.Backend == "openai" {
			be, ok := backends[name]
			if !ok {
				be, err = c.openai(name, l, b)
				if err != nil {
					return fail(err)
				}
				backends[name] = be
			}
			a.Backend = be
		}
		s.Agents = append(s.Agents, a)
	}
	s.Budget = runtime.Budget{MaxTokens: c.Budget.MaxTokens, MaxTokensPerAgent: c.Budget.MaxTokensPerAgent}
	t := c.Train
	opt := grpo.DefaultConfig()
	opt.Clip, opt.ClipHigh, opt.KL, opt.Entropy = t.Clip, t.ClipHigh, t.KL, t.Entropy
	opt.LearningRate, opt.MaxGradNorm, opt.Epochs, opt.Minibatches = t.LearningRate, t.MaxGradNorm, t.Epochs, t.Minibatches
	s.Train = runtime.Train{
		Iterations: t.Iterations, TasksPerIteration: t.TasksPerIteration, GroupSize: t.GroupSize,
		Baseline: t.Baseline, Scale: t.Scale, Credit: t.Credit, Optimizer: opt,
		Hidden: t.Hidden, SharePolicy: t.SharePolicy, Workers: workers(t.Workers),
		CheckpointEvery: t.CheckpointEvery, MaxFailureRatio: t.MaxFailureRatio, MaxSteps: t.MaxSteps,
	}
	s.Eval = runtime.Eval{Episodes: c.Eval.Episodes, Seed: c.Eval.Seed, Sampled: c.Eval.Sampled, Policies: c.Eval.Policies}
	b.Setup = s
	return b, nil
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

func workers(n int) int {
	if n > 0 {
		return n
	}
	return goruntime.NumCPU()
}

// Resolved returns a copy whose plugin paths are absolute, so the copy
// means the same wherever it is written (config.toml of a run directory).
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
	out.Rewards = append([]Reward(nil), c.Rewards...)
	for i := range out.Rewards {
		out.Rewards[i].Source = abs(out.Rewards[i].Source)
	}
	return out
}

func (c Config) openai(name string, l LLM, b *Built) (core.LLM, error) {
	o, err := llm.NewOpenAI(llm.OpenAIConfig{
		BaseURL: l.BaseURL, Model: l.Model, APIKeyEnv: l.APIKeyEnv,
		MaxConcurrency: l.MaxConcurrency, RequestsPerMinute: l.RequestsPerMinute, TokensPerMinute: l.TokensPerMinute,
		MaxRetries: l.MaxRetries, Timeout: l.Timeout.Duration,
	})
	if err != nil {
		return nil, &Error{File: c.Path, Key: "llm." + name, Msg: err.Error()}
	}
	b.closers = append(b.closers, o.Close)
	if l.Cache == "" {
		return o, nil
	}
	dir := l.Cache
	if !filepath.IsAbs(dir) && c.Dir != "" {
		dir = filepath.Join(c.Dir, dir)
	}
	r, err := llm.NewRecorder(o, dir, llm.RecordMode(l.CacheMode))
	if err != nil {
		return nil, &Error{File: c.Path, Key: "llm." + name + ".cache", Msg: err.Error()}
	}
	return r, nil
}
