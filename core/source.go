package core

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// SourceRef names where an env or reward function comes from, as written in
// the agentfile: "builtin:NAME", "wasm:PATH" or "grpc:PATH".
type SourceRef struct {
	// Scheme is the part before the colon: "builtin", "wasm", "grpc".
	Scheme string
	// Path is the part after it: a built-in name, or a file path already
	// resolved against the agentfile's directory.
	Path string
	// Params are passed to the env or reward as-is (env.params).
	Params map[string]any
	// Sandbox limits a plugin; built-ins ignore it, but for those
	// registered with RegisterSandboxedEnv.
	Sandbox Sandbox
	// SHA256, if set, pins the plugin file's hex sha256.
	SHA256 string
}

// String returns "scheme:path".
func (r SourceRef) String() string { return r.Scheme + ":" + r.Path }

// ParseSourceRef splits "scheme:path". It does not resolve paths.
func ParseSourceRef(s string) (SourceRef, error) {
	scheme, path, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || path == "" {
		return SourceRef{}, fmt.Errorf("source %q: want builtin:NAME, wasm:PATH or grpc:PATH", s)
	}
	return SourceRef{Scheme: scheme, Path: path}, nil
}

// Sandbox limits what a plugin may use: the agentfile's [env.sandbox] and
// [rewards.sandbox] tables. Built-in envs and rewards ignore it, but for
// the envs that run untrusted code (registered with
// [RegisterSandboxedEnv], e.g. builtin:coding), which take Isolation and
// ReadOnlyDirs.
type Sandbox struct {
	// MemoryLimitMiB caps a Wasm instance's linear memory, in [0, 4096];
	// 0 (the default) means the loader's default.
	MemoryLimitMiB int `toml:"memory_limit_mib"`
	// CallTimeout bounds one call into the plugin: 0 (the default) means
	// the loader's default, a negative value no limit at all (for trusted
	// plugins whose calls may run long), else at least 1ms.
	CallTimeout time.Duration `toml:"call_timeout"`
	// ReadOnlyDirs are host directories mounted read-only at the same
	// path: into a Wasm plugin, or into each isolated run of a built-in env
	// that runs untrusted code (e.g. the virtualenv of its Python
	// interpreter). Default none.
	ReadOnlyDirs []string `toml:"read_only_dirs"`
	// Isolation is how a built-in env that runs untrusted (LLM-written)
	// code isolates it: "full" (the default; also "") runs each program
	// in namespaces of its own, seeing only read-only system directories
	// and a private, size-limited work dir, /tmp and /dev/shm; "none" opts
	// out (the program can read the user's files, write outside its work
	// dir, fill the disk and share the user's process limit), for trusted
	// code or machines without user namespaces, where "full" refuses to
	// run. Plugins ignore it (Wasm is sandboxed by its runtime).
	Isolation string `toml:"isolation"`
}

// The values of Sandbox.Isolation.
const (
	IsolationFull = "full"
	IsolationNone = "none"
)

// Validate reports the first setting that cannot work, as a
// *SettingError.
func (s Sandbox) Validate() error {
	switch {
	case s.MemoryLimitMiB < 0 || s.MemoryLimitMiB > 4096:
		return NewSettingError("memory_limit_mib", "must be in [0, 4096] (0 = default), got %d", s.MemoryLimitMiB)
	case s.CallTimeout > 0 && s.CallTimeout < time.Millisecond:
		return NewSettingError("call_timeout", "must be 0 (the default), negative (no limit) or at least 1ms, got %s", s.CallTimeout)
	case s.Isolation != "" && s.Isolation != IsolationFull && s.Isolation != IsolationNone:
		return NewSettingError("isolation", "must be %q (the default) or %q, got %q", IsolationFull, IsolationNone, s.Isolation)
	}
	return nil
}

// EnvSource opens env instances of one loaded task (one per worker).
type EnvSource interface {
	// Spec describes the instances Open returns, without opening one: it
	// equals every instance's Spec.
	Spec() EnvSpec
	// Open returns a fresh instance.
	Open() (Env, error)
	// Close releases what the source holds (compiled modules, processes);
	// Open after Close is an error.
	Close() error
}

// Loader loads envs and reward functions of one source scheme.
type Loader interface {
	LoadEnv(ctx context.Context, ref SourceRef) (EnvSource, error)
	LoadReward(ctx context.Context, ref SourceRef) (RewardFunc, error)
}

// SandboxDefaulter is implemented by a [Loader] whose plugins have limits
// by default: SandboxDefaults returns sb with each zero limit replaced by
// the one the loader enforces (the Wasm loader's 256 MiB and 5 s, say),
// so that a run's recorded configuration shows the limits in force.
type SandboxDefaulter interface {
	SandboxDefaults(sb Sandbox) Sandbox
}

// FilledSandbox returns ref.Sandbox with the defaults of the loader of
// ref's scheme in place of its zero limits ([SandboxDefaulter]); it is
// unchanged for built-ins and for loaders without defaults.
func FilledSandbox(ref SourceRef) Sandbox {
	registry.RLock()
	l, ok := registry.loaders[ref.Scheme]
	registry.RUnlock()
	if d, isDefaulter := l.(SandboxDefaulter); ok && isDefaulter {
		return d.SandboxDefaults(ref.Sandbox)
	}
	return ref.Sandbox
}

// EnvFactory makes a built-in env from its params.
type EnvFactory func(params map[string]any) (Env, error)

// SandboxedEnvFactory makes a built-in env that runs untrusted code from
// its params and the agentfile's [env.sandbox] (SourceRef.Sandbox).
type SandboxedEnvFactory func(params map[string]any, sb Sandbox) (Env, error)

// RewardFactory makes a built-in reward function from its params.
type RewardFactory func(params map[string]any) (RewardFunc, error)

var registry = struct {
	sync.RWMutex
	envs      map[string]EnvFactory
	sandboxed map[string]SandboxedEnvFactory
	rewards   map[string]RewardFactory
	loaders   map[string]Loader
}{envs: map[string]EnvFactory{}, sandboxed: map[string]SandboxedEnvFactory{}, rewards: map[string]RewardFactory{}, loaders: map[string]Loader{}}

// RegisterEnv makes a built-in env available as "builtin:NAME". It panics if
// the name is taken, like database/sql.Register.
func RegisterEnv(name string, f EnvFactory) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.envs[name]; dup {
		panic("core: RegisterEnv called twice for " + name)
	}
	registry.envs[name] = f
}

// RegisterSandboxedEnv is RegisterEnv for an env that runs untrusted code:
// its factory also gets the agentfile's [env.sandbox] settings
// (Isolation, ReadOnlyDirs), which LoadEnv passes from SourceRef.Sandbox.
func RegisterSandboxedEnv(name string, f SandboxedEnvFactory) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.envs[name]; dup {
		panic("core: RegisterSandboxedEnv called twice for " + name)
	}
	registry.sandboxed[name] = f
	registry.envs[name] = func(params map[string]any) (Env, error) { return f(params, Sandbox{}) }
}

// RegisterReward makes a built-in reward available as "builtin:NAME".
func RegisterReward(name string, f RewardFactory) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.rewards[name]; dup {
		panic("core: RegisterReward called twice for " + name)
	}
	registry.rewards[name] = f
}

// RegisterLoader handles sources of the given scheme (e.g. "wasm").
func RegisterLoader(scheme string, l Loader) {
	registry.Lock()
	defer registry.Unlock()
	if scheme == "builtin" {
		panic("core: the builtin scheme is reserved")
	}
	if _, dup := registry.loaders[scheme]; dup {
		panic("core: RegisterLoader called twice for " + scheme)
	}
	registry.loaders[scheme] = l
}

// Builtins returns the registered built-in env and reward names, sorted.
func Builtins() (envs, rewards []string) {
	registry.RLock()
	defer registry.RUnlock()
	for n := range registry.envs {
		envs = append(envs, n)
	}
	for n := range registry.rewards {
		rewards = append(rewards, n)
	}
	sort.Strings(envs)
	sort.Strings(rewards)
	return envs, rewards
}

// NewEnvSource returns a source of the envs f makes from params: the way
// to run an env written in Go. It makes one env now, so that bad params, an
// invalid spec, a declared capability the env lacks or an optional
// interface it implements without declaring it ([CheckUndeclared]) fail
// here, and keeps its spec. It also keeps that env, never reset, for the
// first Open (Close closes it if no Open took it), so a source opened by W
// workers makes W envs in all.
func NewEnvSource(f EnvFactory, params map[string]any) (EnvSource, error) {
	e, err := f(params)
	if err != nil {
		return nil, err
	}
	spec := e.Spec()
	err = spec.Validate()
	if err == nil {
		err = CheckCapabilities(e)
	}
	if err == nil {
		err = CheckUndeclared(e)
	}
	if err != nil {
		return nil, errors.Join(err, e.Close())
	}
	return &factorySource{f: f, params: params, spec: spec, first: e}, nil
}

// factorySource is the EnvSource of NewEnvSource.
type factorySource struct {
	f      EnvFactory
	params map[string]any
	spec   EnvSpec

	mu     sync.Mutex
	first  Env // the env made by NewEnvSource, until an Open or Close takes it
	closed bool
}

func (s *factorySource) Spec() EnvSpec { return s.spec }

func (s *factorySource) Open() (Env, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("env %s: the source is closed", s.spec.Name)
	}
	if e := s.takeFirst(); e != nil {
		return e, nil
	}
	return s.f(s.params)
}

func (s *factorySource) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if e := s.takeFirst(); e != nil {
		return e.Close()
	}
	return nil
}

func (s *factorySource) takeFirst() Env {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.first
	s.first = nil
	return e
}

// LoadEnv resolves ref to an EnvSource through the built-in registry (with
// [NewEnvSource], so bad params fail here) or the loader registered for its
// scheme.
func LoadEnv(ctx context.Context, ref SourceRef) (EnvSource, error) {
	registry.RLock()
	defer registry.RUnlock()
	if ref.Scheme == "builtin" {
		f, ok := registry.envs[ref.Path]
		if !ok {
			return nil, fmt.Errorf("env %s: no built-in env %q (have %s)", ref, ref.Path, strings.Join(slices.Sorted(maps.Keys(registry.envs)), ", "))
		}
		if sf, ok := registry.sandboxed[ref.Path]; ok {
			f = func(params map[string]any) (Env, error) { return sf(params, ref.Sandbox) }
		}
		src, err := NewEnvSource(f, ref.Params)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", ref, err)
		}
		return src, nil
	}
	l, ok := registry.loaders[ref.Scheme]
	if !ok {
		return nil, fmt.Errorf("env %s: unknown source scheme %q (have builtin, %s)", ref, ref.Scheme, strings.Join(slices.Sorted(maps.Keys(registry.loaders)), ", "))
	}
	return l.LoadEnv(ctx, ref)
}

// LoadReward resolves ref to a RewardFunc.
func LoadReward(ctx context.Context, ref SourceRef) (RewardFunc, error) {
	registry.RLock()
	defer registry.RUnlock()
	if ref.Scheme == "builtin" {
		f, ok := registry.rewards[ref.Path]
		if !ok {
			return nil, fmt.Errorf("reward %s: no built-in reward %q (have %s)", ref, ref.Path, strings.Join(slices.Sorted(maps.Keys(registry.rewards)), ", "))
		}
		r, err := f(ref.Params)
		if err != nil {
			return nil, fmt.Errorf("reward %s: %w", ref, err)
		}
		return r, nil
	}
	l, ok := registry.loaders[ref.Scheme]
	if !ok {
		return nil, fmt.Errorf("reward %s: unknown source scheme %q (have builtin, %s)", ref, ref.Scheme, strings.Join(slices.Sorted(maps.Keys(registry.loaders)), ", "))
	}
	return l.LoadReward(ctx, ref)
}
