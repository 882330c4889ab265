package grpcplugin

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/troupe-dev/troupe/core"
	pb "github.com/troupe-dev/troupe/plugins/grpc/proto"
)

// LoadReward starts the plugin, opens its reward function with ref.Params
// and returns it. The process serves every Score call (concurrently); if it
// dies, the failing Score returns the error and the next one restarts it.
// The returned value also implements io.Closer, which stops the process.
func (l *Loader) LoadReward(ctx context.Context, ref core.SourceRef) (core.RewardFunc, error) {
	cfg, err := newPluginConfig("reward", ref, l.logger())
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.label, err)
	}
	r := &remoteReward{cfg: cfg}
	proc, client, info, err := r.start()
	if err != nil {
		return nil, err
	}
	if info.GetName() == "" {
		proc.kill(false)
		return nil, fmt.Errorf("%s: the plugin's reward function has an empty name", cfg.label)
	}
	r.name, r.components, r.metrics = info.GetName(), info.GetComponents(), info.GetMetrics()
	r.proc, r.client = proc, client
	return r, nil
}

// remoteReward is a core.RewardFunc served by a plugin process.
type remoteReward struct {
	cfg        *pluginConfig
	name       string
	components []string
	metrics    []string // the metrics the reward needs (RewardInfo.metrics)

	mu     sync.Mutex
	proc   *process // nil after a failure; the next Score restarts
	client pb.RewardClient
	closed bool
}

func (r *remoteReward) start() (*process, pb.RewardClient, *pb.RewardInfo, error) {
	proc, err := startProcess(r.cfg, RewardPluginName)
	if err != nil {
		return nil, nil, nil, err
	}
	client := proc.conn.(pb.RewardClient)
	ctx, cancel := proc.callContext()
	info, err := client.Open(ctx, &pb.OpenRequest{ParamsJson: r.cfg.paramsJSON})
	cancel()
	if err != nil {
		err := openFailure(proc, "a reward function", "serve.Reward", err)
		proc.kill(false)
		return nil, nil, nil, err
	}
	if r.name != "" && (info.GetName() != r.name || !slices.Equal(info.GetComponents(), r.components) || !slices.Equal(info.GetMetrics(), r.metrics)) {
		proc.kill(false)
		return nil, nil, nil, fmt.Errorf("%s: the restarted plugin describes a different reward function (was %s %v needing %v, now %s %v needing %v)",
			proc.describe(), r.name, r.components, r.metrics, info.GetName(), info.GetComponents(), info.GetMetrics())
	}
	return proc, client, info, nil
}

// Name returns the name the plugin's reward function reports.
func (r *remoteReward) Name() string { return r.name }

// RequiredMetrics returns the episode metrics the plugin's reward function
// declared it needs (none from a plugin built before the field), which the
// runtime checks against the env's before training (core.MetricReader).
func (r *remoteReward) RequiredMetrics() []string { return slices.Clone(r.metrics) }

// Components returns the component names the plugin reported at load.
func (r *remoteReward) Components() []string { return slices.Clone(r.components) }

// Score sends the episode to the plugin.
func (r *remoteReward) Score(ep *core.Episode) (components, metrics map[string]float64, err error) {
	if ep == nil {
		return nil, nil, fmt.Errorf("%s: Score: nil episode", r.cfg.label)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, nil, fmt.Errorf("%s: Score: %w", r.cfg.label, ErrClosed)
	}
	if r.proc == nil {
		proc, client, _, err := r.start()
		if err != nil {
			r.mu.Unlock()
			return nil, nil, fmt.Errorf("restarting after a failure: %w", err)
		}
		r.proc, r.client = proc, client
	}
	proc, client := r.proc, r.client
	r.mu.Unlock()

	ctx, cancel := proc.callContext()
	defer cancel()
	reply, err := client.Score(ctx, &pb.ScoreRequest{Episode: episodeToPB(ep)})
	if err != nil {
		err, broken := proc.callFailure("Score", err)
		if broken {
			r.mu.Lock()
			if r.proc == proc {
				r.proc, r.client = nil, nil
			}
			r.mu.Unlock()
		}
		return nil, nil, err
	}
	return nilIfEmpty(reply.GetComponents()), nilIfEmpty(reply.GetMetrics()), nil
}

// Close stops the plugin process; later Scores fail with ErrClosed.
func (r *remoteReward) Close() error {
	r.mu.Lock()
	r.closed = true
	proc := r.proc
	r.proc, r.client = nil, nil
	r.mu.Unlock()
	if proc != nil {
		proc.kill(false)
	}
	return nil
}
