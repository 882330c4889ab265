package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/propagation"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/safetensors"
)

// Client is the trainer's side of a cluster: a trainer.Sampler (and a
// rollout.Player) that plays an iteration's episodes on the workers. It is
// not safe for concurrent use (a trainer calls it from one goroutine).
type Client struct {
	nc     *nats.Conn
	r      *resources
	cfg    Config
	log    *slog.Logger
	run    string
	config string // hash of the resolved configuration
	batch  int
	// policy caches the hash of the last policy stored, by its bits.
	lastParams []float64
	lastHash   string
	adv        *nats.Subscription
}

// NewClient opens the cluster's resources on nc for a run with the
// delivery settings of cfg and stores its resolved configuration (the
// agentfile text the workers build their setup from) with its plugin
// files: the shipped ones (Wasm modules) in the object store, the sha256
// of the others (go-plugin binaries), which the workers must have
// installed at the same path. Warnings (no worker takes the jobs) go to
// log (slog.Default() when nil). The client does not own nc.
func NewClient(ctx context.Context, nc *nats.Conn, config []byte, plugins []Plugin, cfg Config, log *slog.Logger) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err.(*core.SettingError).In("cluster"))
	}
	if log == nil {
		log = slog.Default()
	}
	r, err := open(ctx, nc, cfg, true)
	if err != nil {
		return nil, err
	}
	h, err := r.putBundle(ctx, config, plugins)
	if err != nil {
		return nil, err
	}
	c := &Client{nc: nc, r: r, cfg: cfg, log: log, run: nuid.Next(), config: h}
	subj := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + JobStream + "." + WorkerConsumer
	c.adv, err = nc.Subscribe(subj, c.onMaxDeliveries)
	if err != nil {
		return nil, fmt.Errorf("cluster: subscribing to %s: %w", subj, err)
	}
	return c, nil
}

// Run returns the run id that keys the client's jobs and results.
func (c *Client) Run() string { return c.run }

// Close stops listening for advisories; the connection stays open.
// Closing twice is harmless.
func (c *Client) Close() {
	if c.adv != nil {
		_ = c.adv.Unsubscribe()
	}
}

// Sample plays the jobs of iteration it on the workers, as
// rollout.Pool.Sample does in process.
func (c *Client) Sample(ctx context.Context, it int, jobs []rollout.Job, pol *policy.Policy) ([]rollout.EpisodeResult, error) {
	for k, j := range jobs {
		if j.Prefix != nil {
			return nil, fmt.Errorf("cluster: Sample: job %d has a forced prefix (use Replay)", k)
		}
	}
	return c.play(ctx, it, jobs, pol, Job{})
}

// Replay plays the branch jobs of iteration it on the workers, as
// rollout.Pool.Replay does in process.
func (c *Client) Replay(ctx context.Context, it int, jobs []rollout.Job, pol *policy.Policy) ([]rollout.EpisodeResult, error) {
	return c.play(ctx, it, jobs, pol, Job{Replay: true})
}

// PlayEval plays evaluation jobs on the workers, as rollout.Pool.PlayEval
// does in process: the client is a rollout.Player, for
// rollout.EvaluateOn. trained may be nil when name is not "grpo".
func (c *Client) PlayEval(ctx context.Context, jobs []rollout.Job, name string, trained *policy.Policy, sampled bool) ([]rollout.EpisodeResult, error) {
	if name == "" {
		return nil, errors.New("cluster: PlayEval: no policy name")
	}
	if trained == nil && name == "grpo" {
		return nil, errors.New("cluster: PlayEval: policy grpo without a trained policy")
	}
	return c.play(ctx, 0, jobs, trained, Job{Eval: name, Sampled: sampled})
}

var _ rollout.Player = (*Client)(nil)

// policyHash stores the policy's weights (once per distinct weights) and
// returns their hash.
func (c *Client) policyHash(ctx context.Context, pol *policy.Policy) (string, error) {
	params := pol.Params()
	if c.lastHash != "" && equalBits(params, c.lastParams) {
		return c.lastHash, nil
	}
	tensors := map[string]safetensors.Tensor{}
	if err := pol.EncodeVector("", params, tensors); err != nil {
		return "", err
	}
	data, err := safetensors.Marshal(tensors, pol.Metadata())
	if err != nil {
		return "", err
	}
	h, err := c.r.putArtifact(ctx, data)
	if err != nil {
		return "", err
	}
	c.lastParams, c.lastHash = append(c.lastParams[:0], params...), h
	return h, nil
}

func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}

// play publishes the jobs of iteration it as kind (Replay, Eval and
// Sampled set) and collects their results in job order.
func (c *Client) play(ctx context.Context, it int, jobs []rollout.Job, pol *policy.Policy, kind Job) ([]rollout.EpisodeResult, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	ph := ""
	if pol != nil {
		var err error
		if ph, err = c.policyHash(ctx, pol); err != nil {
			return nil, err
		}
	}
	c.batch++
	prefix := fmt.Sprintf("%s.%d.%d.", c.run, it, c.batch)
	// Watch before publishing, so no result is missed.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := c.r.results.Watch(wctx, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("cluster: watching results: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var seqs []uint64
	for i, j := range jobs {
		m := Job{Run: c.run, Iteration: it, Batch: c.batch, Index: i, Task: j.Task, Rollout: j.Rollout, Prefix: j.Prefix,
			Replay: kind.Replay, Eval: kind.Eval, Sampled: kind.Sampled, Policy: ph, Config: c.config,
			Progress: c.cfg.Progress(), MaxDeliver: c.cfg.MaxDeliver, RateLimitPause: c.cfg.RateLimitPause, MaxRateLimited: c.cfg.MaxRateLimited}
		msg, err := jobMsg(ctx, m, nil)
		if err != nil {
			return nil, err
		}
		ack, err := c.r.js.PublishMsg(ctx, msg)
		if err != nil {
			c.withdraw(seqs)
			return nil, fmt.Errorf("cluster: publishing job %s: %w", m.Key(), err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	var warn <-chan time.Time
	if c.cfg.WarnAfter > 0 {
		t := time.NewTicker(c.cfg.WarnAfter)
		defer t.Stop()
		warn = t.C
	}
	start := time.Now()
	results := make([]rollout.EpisodeResult, len(jobs))
	got := make([]bool, len(jobs))
	episodeDone := rollout.EpisodeDoneFunc(ctx)
	n := 0
	for n < len(jobs) {
		var e jetstream.KeyValueEntry
		select {
		case <-ctx.Done():
			c.withdraw(seqs)
			return nil, ctx.Err()
		case <-warn:
			if n == 0 {
				c.warnIdle(ctx, it, len(jobs), time.Since(start))
			}
			continue
		case e = <-w.Updates():
		}
		if e == nil || e.Operation() != jetstream.KeyValuePut {
			continue // the end of the initial values, or a deletion
		}
		idx, err := strconv.Atoi(strings.TrimPrefix(e.Key(), prefix))
		if err != nil || idx < 0 || idx >= len(jobs) || got[idx] {
			continue // not a key of this batch, or a duplicate
		}
		env, err := decodeResult(e.Value())
		if err != nil {
			return nil, fmt.Errorf("cluster: result %s: %w", e.Key(), err)
		}
		if env.Run != c.run || env.Iteration != it || env.Batch != c.batch || env.Index != idx {
			continue // stored under a key that is not its own
		}
		results[idx], got[idx] = env.Result, true
		n++
		episodeDone()
	}
	return results, nil
}

// withdraw removes the jobs of stream sequences seqs that are still in
// the stream (not yet acked): the trainer stopped waiting for them, so no
// worker should spend an LLM's time on them. (A job a worker holds, or
// has handed back, is played all the same; its result is never read.)
func (c *Client) withdraw(seqs []uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range seqs {
		_ = c.r.stream.DeleteMsg(ctx, s)
	}
}

// warnIdle warns, when no worker holds a job, that none has taken the
// jobs of iteration it after waited.
func (c *Client) warnIdle(ctx context.Context, it, jobs int, waited time.Duration) {
	info, err := c.r.consumer.Info(ctx)
	if err != nil || info.NumAckPending > 0 {
		return // a worker is playing one (or the server cannot say)
	}
	what := fmt.Sprintf("the %d jobs of iteration %d", jobs, it)
	if it == 0 {
		what = fmt.Sprintf("the %d evaluation jobs", jobs)
	}
	c.log.Warn(fmt.Sprintf("cluster: no worker has taken %s after %v; is one running? Start workers with: troupe worker --nats %s", what, waited.Round(time.Second), c.nc.ConnectedUrlRedacted()),
		"waiting_workers", info.NumWaiting, "pending_jobs", info.NumPending)
}

// maxDeliveries is the server's advisory that it stopped delivering a job.
type maxDeliveries struct {
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries int    `json:"deliveries"`
}

// onMaxDeliveries fails the episode of a job of this run the server gave
// up on (its workers died or never acked on every delivery), unless a
// worker wrote its result, and removes the job from the stream.
func (c *Client) onMaxDeliveries(m *nats.Msg) {
	var a maxDeliveries
	if err := json.Unmarshal(m.Data, &a); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := c.r.stream.GetMsg(ctx, a.StreamSeq)
	if err != nil {
		return // gone already
	}
	var j Job
	if err := json.Unmarshal(raw.Data, &j); err != nil || j.Run != c.run {
		return // another run's job: its trainer handles it
	}
	res := failedResult(j, fmt.Sprintf("cluster: no worker finished the episode in %d deliveries", a.Deliveries))
	if data, err := encodeResult(j, res); err == nil {
		if _, err := c.r.results.Create(ctx, j.Key(), data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return
		}
	}
	_ = c.r.stream.DeleteMsg(ctx, a.StreamSeq)
}

// jobMsg returns the message of job j: its JSON, the trace context of ctx
// in the headers (W3C traceparent, so an episode is one trace wherever it
// is played), and the header of a message it replaces (hand-back), if
// any. Nats-Msg-Id names the job and its hand-back, so a hand-back
// published twice (a worker that died before acking the original) is
// stored once.
func jobMsg(ctx context.Context, j Job, from nats.Header) (*nats.Msg, error) {
	data, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(JobSubject)
	msg.Data = data
	for k, v := range from {
		msg.Header[k] = append([]string(nil), v...)
	}
	traceContext.Inject(ctx, propagation.HeaderCarrier(msg.Header))
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s.r%d", j.Key(), j.RateLimited))
	return msg, nil
}

// traceContext is the propagation of trace context in job headers.
var traceContext = propagation.TraceContext{}

// failedResult is the result of a job that failed with reason.
func failedResult(j Job, reason string) rollout.EpisodeResult {
	r := rollout.EpisodeResult{Failed: true, Reason: reason, Components: map[string]float64{}, Metrics: map[string]float64{}}
	r.Episode.Seed = j.Task
	return r
}
