package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/cluster"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
)

func init() {
	commands["worker"] = command{"play a cluster trainer's episodes (jobs pulled from NATS JetStream)", runWorker}
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("worker", "worker --nats URL [--concurrency N] [--cache DIR] [--idle DURATION]", stdout, stderr)
	defaults := cluster.DefaultWorkerOptions()
	url := fs.String("nats", "", "the NATS server with JetStream at `URL` the trainer publishes to, e.g. nats://host:4222 (credentials from $"+cluster.EnvCreds+" or $"+cluster.EnvUser+"/$"+cluster.EnvPassword+"; TLS files from $"+cluster.EnvCA+", $"+cluster.EnvCert+", $"+cluster.EnvKey+")")
	concurrency := fs.Int("concurrency", defaults.Concurrency, "episodes played at once (one env instance each)")
	cache := fs.String("cache", defaultWorkerCache(), "directory where the Wasm modules of the trainers' runs are kept, by content hash")
	idle := fs.Duration("idle", defaults.Idle, "close a run's setup (env instances, plugin processes) after this long without a job of it")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *url == "" {
		fmt.Fprintln(fs.Output(), "troupe worker: --nats URL is required")
		fs.Usage()
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	o := cluster.WorkerOptions{Concurrency: *concurrency, Cache: *cache, Idle: *idle, Log: log}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(fs.Output(), "troupe worker: %v (--concurrency, --cache, --idle)\n", err)
		fs.Usage()
		return exitUsage
	}
	host, _ := os.Hostname()
	nc, err := cluster.Connect(*url, "troupe worker "+host)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitRuntime
	}
	defer nc.Close()
	w, err := cluster.NewWorker(ctx, nc, agentfile.OpenResolved, o)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitRuntime
	}
	fmt.Fprintf(stderr, "troupe: worker on %s, %d at a time; stop with Ctrl-C\n", *url, *concurrency)
	if err := w.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitRuntime
	}
	return exitOK
}

// defaultWorkerCache is the user's cache directory's troupe/modules, or
// one under the temporary directory when there is none.
func defaultWorkerCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "troupe", "modules")
	}
	return filepath.Join(os.TempDir(), "troupe-modules")
}

// clusterClient connects to the cluster of cfg's [cluster] nats and
// opens a client for a run of cfg (resolved: it is what the workers build
// their setup from) with cfg's plugin files; nil (and a no-op done) when
// [cluster] names no server. Its warnings go to stderr. done closes the
// client and the connection.
func clusterClient(ctx context.Context, cfg agentfile.Config, built *agentfile.Built, stderr io.Writer) (c *cluster.Client, done func(), err error) {
	if !built.Cluster.Enabled() {
		return nil, func() {}, nil
	}
	conf, err := cfg.Encode()
	if err != nil {
		return nil, nil, err
	}
	nc, err := cluster.Connect(built.Cluster.NATS, "troupe trainer")
	if err != nil {
		return nil, nil, err
	}
	c, err = cluster.NewClient(ctx, nc, conf, cfg.Plugins(), built.Cluster, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return c, func() { c.Close(); nc.Close() }, nil
}

// newTrainer returns the trainer of built: on the cluster client c when
// it is not nil, else on the in-process pool.
func newTrainer(built *agentfile.Built, c *cluster.Client) (*trainer.Trainer, error) {
	if c == nil {
		return trainer.New(built.Setup, built.Train)
	}
	return trainer.NewWithSampler(built.Setup, built.Train, openClient{c})
}

// openClient is a cluster client the trainer does not close when it
// closes (the final evaluation plays on it afterwards).
type openClient struct{ *cluster.Client }

// Close does nothing: the client's owner closes it.
func (openClient) Close() {}

// evaluate evaluates trained on the workers of c when it is not nil, else
// on the in-process pool.
func evaluate(ctx context.Context, s rollout.Setup, c *cluster.Client, trained *policy.Policy, e rollout.Eval) (rollout.EvalReport, error) {
	if c == nil {
		return rollout.Evaluate(ctx, s, trained, e)
	}
	return rollout.EvaluateOn(ctx, s, c, trained, e)
}
