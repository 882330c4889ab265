package grpcplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/troupe-dev/troupe/core"
	pb "github.com/troupe-dev/troupe/plugins/grpc/proto"
)

func init() { core.RegisterLoader("grpc", &Loader{}) }

// Loader loads "grpc:PATH" sources: envs and reward functions served by
// go-plugin binaries. The package registers one for the "grpc" scheme.
type Loader struct {
	// Logger receives the plugins' logs; nil means slog.Default() at load
	// time.
	Logger *slog.Logger
}

// SandboxDefaults returns sb with a zero CallTimeout replaced by
// DefaultCallTimeout, the limit a plugin loaded with sb runs under
// (core.SandboxDefaulter). MemoryLimitMiB and ReadOnlyDirs do not apply to
// plugin processes and are left as they are.
func (*Loader) SandboxDefaults(sb core.Sandbox) core.Sandbox {
	if sb.CallTimeout == 0 {
		sb.CallTimeout = DefaultCallTimeout
	}
	return sb
}

func (l *Loader) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

// LoadEnv starts the plugin once to check the binary (handshake, version,
// sha256 pin), the params and the spec, and returns a source whose first
// Open hands out that process; every further Open starts another.
func (l *Loader) LoadEnv(ctx context.Context, ref core.SourceRef) (core.EnvSource, error) {
	cfg, err := newPluginConfig("env", ref, l.logger())
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.label, err)
	}
	src := &envSource{cfg: cfg, open: map[*remoteEnv]struct{}{}}
	first, err := src.start()
	if err != nil {
		return nil, err
	}
	if err := first.spec.Validate(); err != nil {
		first.proc.kill(false)
		return nil, fmt.Errorf("%s: %w", cfg.label, err)
	}
	src.spec, src.specJSON = first.spec, first.specJSON
	src.spare = first
	return src, nil
}

// envSource opens env instances of one plugin binary, one process each.
type envSource struct {
	cfg      *pluginConfig
	spec     core.EnvSpec // with Capabilities from the OpenReply flags
	specJSON []byte

	mu     sync.Mutex
	spare  *opened // the process LoadEnv started, for the first Open
	open   map[*remoteEnv]struct{}
	closed bool
}

// opened is a process with its env open.
type opened struct {
	proc     *process
	client   pb.EnvClient
	spec     core.EnvSpec // with Capabilities from the OpenReply flags
	specJSON []byte
}

// start starts a process and opens its env with the source's params.
func (s *envSource) start() (*opened, error) {
	proc, err := startProcess(s.cfg, EnvPluginName)
	if err != nil {
		return nil, err
	}
	client := proc.conn.(pb.EnvClient)
	ctx, cancel := proc.callContext()
	reply, err := client.Open(ctx, &pb.OpenRequest{ParamsJson: s.cfg.paramsJSON})
	cancel()
	if err != nil {
		err := openFailure(proc, "an env", "serve.Env", err)
		proc.kill(false)
		return nil, err
	}
	o := &opened{proc: proc, client: client, specJSON: reply.GetSpecJson()}
	if err := json.Unmarshal(o.specJSON, &o.spec); err != nil {
		proc.kill(false)
		return nil, fmt.Errorf("%s: the plugin's spec is not valid JSON: %w", proc.describe(), err)
	}
	o.spec.Capabilities = capsOf(reply)
	if s.specJSON != nil && (!bytes.Equal(o.specJSON, s.specJSON) || o.spec.Capabilities != s.spec.Capabilities) {
		proc.kill(false)
		return nil, fmt.Errorf("%s: the restarted plugin describes a different env than when it was loaded (was %s [%v], now %s [%v])",
			proc.describe(), s.specJSON, s.spec.Capabilities, o.specJSON, o.spec.Capabilities)
	}
	return o, nil
}

// Spec returns the spec the plugin reported when it was loaded.
func (s *envSource) Spec() core.EnvSpec { return s.spec }

// Open returns a fresh env instance backed by its own plugin process. It
// has every optional method; its spec's Capabilities say which of them
// the plugin's env implements.
func (s *envSource) Open() (core.Env, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", s.cfg.label, ErrClosed)
	}
	o := s.spare
	s.spare = nil
	s.mu.Unlock()
	if o == nil {
		var err error
		if o, err = s.start(); err != nil {
			return nil, err
		}
	}
	e := &remoteEnv{src: s, cur: o}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		o.proc.kill(false)
		return nil, fmt.Errorf("%s: %w", s.cfg.label, ErrClosed)
	}
	s.open[e] = struct{}{}
	s.mu.Unlock()
	return e, nil
}

// Close stops the processes of every instance opened from the source;
// instances still held then fail with ErrClosed.
func (s *envSource) Close() error {
	s.mu.Lock()
	s.closed = true
	envs := make([]*remoteEnv, 0, len(s.open))
	for e := range s.open {
		envs = append(envs, e)
	}
	spare := s.spare
	s.spare = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	if spare != nil {
		wg.Go(func() { spare.proc.kill(false) })
	}
	for _, e := range envs {
		wg.Go(func() { _ = e.Close() })
	}
	wg.Wait()
	return nil
}

// remoteEnv is a core.Env whose instance lives in a plugin process. Like
// every core.Env it is used by one goroutine at a time.
type remoteEnv struct {
	src *envSource

	mu     sync.Mutex // guards cur against a concurrent Close
	cur    *opened    // nil after a failure or Close
	broken error      // why cur was dropped; the next Reset restarts
	closed bool
}

var (
	_ core.Env       = (*remoteEnv)(nil)
	_ core.EnvSource = (*envSource)(nil)
	_ core.Loader    = (*Loader)(nil)
)

// Spec returns the spec the plugin reported when it was loaded.
func (e *remoteEnv) Spec() core.EnvSpec { return e.src.spec }

// current returns the live process, or why there is none.
func (e *remoteEnv) current(op string) (*opened, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return nil, fmt.Errorf("%s: %s: %w", e.src.cfg.label, op, ErrClosed)
	case e.cur == nil:
		return nil, fmt.Errorf("%s: %s: the plugin instance failed earlier (%v); Reset starts a new one", e.src.cfg.label, op, e.broken)
	}
	return e.cur, nil
}

// fail classifies a failed call and drops the process if it is broken.
func (e *remoteEnv) fail(o *opened, op string, err error) error {
	err, broken := o.proc.callFailure(op, err)
	if broken {
		e.mu.Lock()
		if e.cur == o {
			e.cur, e.broken = nil, err
		}
		e.mu.Unlock()
	}
	return err
}

// Reset starts an episode, first restarting the plugin process if the
// previous one failed.
func (e *remoteEnv) Reset(seed uint64) ([]core.Observation, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, fmt.Errorf("%s: Reset: %w", e.src.cfg.label, ErrClosed)
	}
	o := e.cur
	e.mu.Unlock()
	if o == nil {
		if e.src.isClosed() {
			return nil, fmt.Errorf("%s: Reset: %w", e.src.cfg.label, ErrClosed)
		}
		var err error
		if o, err = e.src.start(); err != nil {
			return nil, fmt.Errorf("restarting after a failure: %w", err)
		}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			o.proc.kill(false)
			return nil, fmt.Errorf("%s: Reset: %w", e.src.cfg.label, ErrClosed)
		}
		e.cur, e.broken = o, nil
		e.mu.Unlock()
	}
	ctx, cancel := o.proc.callContext()
	defer cancel()
	r, err := o.client.Reset(ctx, &pb.ResetRequest{Seed: seed})
	if err != nil {
		return nil, e.fail(o, "Reset", err)
	}
	return obsFromPB(r.GetObservations()), nil
}

// Step sends the joint action in one call.
func (e *remoteEnv) Step(actions []core.Action) (core.StepResult, error) {
	o, err := e.current("Step")
	if err != nil {
		return core.StepResult{}, err
	}
	ctx, cancel := o.proc.callContext()
	defer cancel()
	r, err := o.client.Step(ctx, &pb.StepRequest{Actions: actionsToPB(actions)})
	if err != nil {
		return core.StepResult{}, e.fail(o, "Step", err)
	}
	return stepFromPB(r), nil
}

// State returns the global state, or nil (and a logged error) if the plugin
// failed; the failure then also surfaces on the next Step.
func (e *remoteEnv) State() []float64 {
	o, err := e.current("State")
	if err != nil {
		e.src.cfg.logger.Error(err.Error())
		return nil
	}
	ctx, cancel := o.proc.callContext()
	defer cancel()
	r, err := o.client.State(ctx, &pb.StateRequest{})
	if err != nil {
		e.src.cfg.logger.Error(e.fail(o, "State", err).Error())
		return nil
	}
	return r.GetState()
}

// Close closes the plugin's env and stops its process. Closing twice is a
// no-op.
func (e *remoteEnv) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	o := e.cur
	e.cur = nil
	e.mu.Unlock()
	e.src.mu.Lock()
	delete(e.src.open, e)
	e.src.mu.Unlock()
	if o == nil {
		return nil
	}
	var err error
	if !o.proc.hasExited() {
		ctx, cancel := o.proc.callContext()
		_, cerr := o.client.Close(ctx, &pb.CloseRequest{})
		cancel()
		if cerr != nil {
			err, _ = o.proc.callFailure("Close", cerr)
		}
	}
	o.proc.kill(false)
	return err
}

func (s *envSource) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
