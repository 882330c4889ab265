package agentfile

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/cluster"
	"github.com/troupe-dev/troupe/core/rollout"
)

// Plugins returns the plugin files of c's env and rewards, as a cluster
// trainer sends them to its workers: Wasm modules shipped, go-plugin
// binaries to be installed on every worker at the same path. Paths are
// resolved against c.Dir.
func (c Config) Plugins() []cluster.Plugin {
	r := c.Resolved()
	var out []cluster.Plugin
	add := func(key, source string) {
		ref, err := core.ParseSourceRef(source)
		if err != nil || (ref.Scheme != "wasm" && ref.Scheme != "grpc") {
			return
		}
		out = append(out, cluster.Plugin{Key: key, Path: ref.Path, Ship: ref.Scheme == "wasm"})
	}
	add("env.source", r.Env.Source)
	for i, rw := range r.Rewards {
		add(fmt.Sprintf("rewards.%d.source", i), rw.Source)
	}
	return out
}

// OpenResolved builds the rollout setup of a run's resolved configuration
// (the text [Config.Encode] writes) with its plugins played from the
// given files, each pinned to the sha256 the trainer read: what a cluster
// worker plays a trainer's jobs with ([cluster.OpenFunc]). A go-plugin
// binary (not shipped) must be installed at the trainer's path with the
// same content; the error says so when it is not.
func OpenResolved(ctx context.Context, text []byte, plugins []cluster.Plugin) (*rollout.Setup, func(), error) {
	var overrides []string
	for _, p := range plugins {
		table := strings.TrimSuffix(p.Key, ".source")
		if p.Ship {
			overrides = append(overrides, p.Key+"="+strconv.Quote("wasm:"+p.Path))
		}
		overrides = append(overrides, table+".sha256="+strconv.Quote(p.SHA256))
	}
	cfg, err := Parse("resolved configuration", text, overrides...)
	if err != nil {
		return nil, nil, err
	}
	b, err := cfg.Build(ctx)
	if err != nil {
		for _, p := range plugins {
			if !p.Ship {
				return nil, nil, fmt.Errorf("%w (go-plugin binaries are not shipped: this worker must have %s (%s) installed at that path with sha256 %s, as the trainer has)", err, p.Path, p.Key, p.SHA256)
			}
		}
		return nil, nil, err
	}
	return &b.Setup, func() { _ = b.Close() }, nil
}

var _ cluster.OpenFunc = OpenResolved
