package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/safetensors"
)

// OpenFunc builds the rollout setup of a resolved configuration (the
// agentfile text a trainer stored) whose plugin sources are to be played
// from the given files, each checked against its sha256; close releases
// what it opened.
type OpenFunc func(ctx context.Context, config []byte, plugins []Plugin) (s *rollout.Setup, close func(), err error)

// Worker pulls episode jobs and plays them. Run it with [Worker.Run].
type Worker struct {
	r           *resources
	open        OpenFunc
	concurrency int
	log         *slog.Logger
	cache       string // where shipped plugin files are kept

	mu       sync.Mutex
	setups   map[string]*openSetup // by configuration hash
	policies map[string]*policy.Policy
	order    []string // policy hashes, oldest first

	// beforeWrite and afterWrite, if set (tests), are called before and
	// after a result is written; returning false ends the handling there,
	// as a worker killed at that point would.
	beforeWrite, afterWrite func(Job) bool
	duplicates              atomic.Int64
}

// Duplicates returns how many results this worker found already written
// (by an earlier delivery of the same job) and so did not count.
func (w *Worker) Duplicates() int64 { return w.duplicates.Load() }

// openSetup is a configuration's setup and the idle pools of one env
// instance each, reused across jobs.
type openSetup struct {
	s     *rollout.Setup
	close func()
	err   error
	pools chan *rollout.Pool
}

// policyCacheSize is how many policies a worker keeps decoded: the
// current iteration's and the previous one's.
const policyCacheSize = 2

// NewWorker opens the cluster's resources on nc for a worker playing up
// to concurrency episodes at once (at least 1), keeping the plugin files
// it fetches in cache (by content hash). log may be nil.
func NewWorker(ctx context.Context, nc *nats.Conn, build OpenFunc, concurrency int, cache string, o Options, log *slog.Logger) (*Worker, error) {
	if concurrency < 1 {
		return nil, fmt.Errorf("cluster: concurrency must be at least 1, got %d", concurrency)
	}
	r, err := open(ctx, nc, o, false)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Worker{r: r, open: build, concurrency: concurrency, cache: cache, log: log, setups: map[string]*openSetup{}, policies: map[string]*policy.Policy{}}, nil
}

// Run plays jobs until ctx is cancelled, then closes what it opened and
// returns nil.
func (w *Worker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range w.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx)
		}()
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.setups {
		if s.pools != nil {
			close(s.pools)
			for p := range s.pools {
				p.Close()
			}
		}
		if s.close != nil {
			s.close()
		}
	}
	return nil
}

func (w *Worker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		batch, err := w.r.consumer.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if errors.Is(err, nats.ErrConnectionClosed) {
			w.log.Error("cluster worker: the connection to the NATS server is closed; this worker stops")
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("cluster worker: fetching a job", "err", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		for m := range batch.Messages() {
			w.handle(ctx, m)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// handle plays one delivered job, writes its result and acks it.
func (w *Worker) handle(ctx context.Context, m jetstream.Msg) {
	var j Job
	if err := json.Unmarshal(m.Data(), &j); err != nil {
		w.log.Error("cluster worker: a job that is not JSON; dropping it", "err", err)
		_ = m.Term()
		return
	}
	md, err := m.Metadata()
	if err != nil {
		_ = m.Nak()
		return
	}
	// Report progress while the episode runs, so it is not redelivered.
	hctx, stop := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(w.r.opts.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	res, err := w.play(ctx, j)
	stop()
	if ctx.Err() != nil {
		_ = m.Nak() // shutting down: another worker takes it
		return
	}
	if err != nil {
		if int(md.NumDelivered) < w.r.opts.MaxDeliver {
			w.log.Warn("cluster worker: job failed; it will be delivered again", "job", j.Key(), "delivery", md.NumDelivered, "err", err)
			_ = m.NakWithDelay(time.Duration(md.NumDelivered) * time.Second)
			return
		}
		w.log.Error("cluster worker: job failed on its last delivery; its episode fails", "job", j.Key(), "err", err)
		res = failedResult(j, fmt.Sprintf("failed on %d deliveries: %v", md.NumDelivered, err))
	}
	if w.beforeWrite != nil && !w.beforeWrite(j) {
		return
	}
	data, err := encodeResult(j, res)
	if err != nil {
		w.log.Error("cluster worker", "err", err)
		_ = m.Nak()
		return
	}
	if _, err := w.r.results.Create(ctx, j.Key(), data); errors.Is(err, jetstream.ErrKeyExists) {
		w.duplicates.Add(1)
		w.log.Info("cluster worker: the job's result was already written; this one is not counted", "job", j.Key())
	} else if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("cluster worker: writing a result", "job", j.Key(), "err", err)
		}
		_ = m.Nak()
		return
	}
	// An existing key is the result of an earlier delivery: the first one
	// counts, and this one is acked all the same.
	if w.afterWrite != nil && !w.afterWrite(j) {
		return
	}
	_ = m.Ack()
}

// play plays job j on a pool of its configuration with its policy.
func (w *Worker) play(ctx context.Context, j Job) (rollout.EpisodeResult, error) {
	st, err := w.setup(ctx, j.Config)
	if err != nil {
		return rollout.EpisodeResult{}, err
	}
	var pol *policy.Policy
	if j.Policy != "" {
		if pol, err = w.policy(ctx, j.Policy); err != nil {
			return rollout.EpisodeResult{}, err
		}
	} else if j.Eval == "" {
		return rollout.EpisodeResult{}, errors.New("the job names no policy")
	}
	var p *rollout.Pool
	select {
	case p = <-st.pools:
	default:
		s := *st.s
		s.Rollout.Workers = 1
		if p, err = rollout.NewPool(&s); err != nil {
			return rollout.EpisodeResult{}, fmt.Errorf("opening the env: %w", err)
		}
	}
	jobs := []rollout.Job{{Task: j.Task, Rollout: j.Rollout, Prefix: j.Prefix}}
	var out []rollout.EpisodeResult
	switch {
	case j.Eval != "":
		out, err = p.PlayEval(ctx, jobs, j.Eval, pol, j.Sampled)
	case j.Replay:
		out, err = p.Replay(ctx, jobs, pol)
	default:
		out, err = p.Sample(ctx, jobs, pol)
	}
	select {
	case st.pools <- p:
	default:
		p.Close()
	}
	if err != nil {
		return rollout.EpisodeResult{}, err
	}
	return out[0], nil
}

// setup returns the setup of configuration h, fetching and building it on
// first use.
func (w *Worker) setup(ctx context.Context, h string) (*openSetup, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.setups[h]; ok {
		return s, s.err
	}
	s := &openSetup{pools: make(chan *rollout.Pool, w.concurrency)}
	b, err := w.r.fetchBundle(ctx, h, w.cache)
	if err == nil {
		s.s, s.close, err = w.open(ctx, b.Config, b.Plugins)
		if err != nil {
			err = fmt.Errorf("building the run's setup from configuration %s: %w", h[:12], err)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // not cached: a shutdown is no property of the configuration
		}
		s.err = err
		s.pools = nil
	}
	w.setups[h] = s
	return s, s.err
}

// policy returns the policy of hash h, fetching and decoding it on first
// use; it keeps the last policyCacheSize.
func (w *Worker) policy(ctx context.Context, h string) (*policy.Policy, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.policies[h]; ok {
		return p, nil
	}
	data, err := w.r.getArtifact(ctx, h)
	if err != nil {
		return nil, err
	}
	tensors, meta, err := safetensors.Read(data)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", h[:12], err)
	}
	p, err := policy.FromTensors("", tensors, meta)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", h[:12], err)
	}
	w.policies[h] = p
	w.order = append(w.order, h)
	if len(w.order) > policyCacheSize {
		delete(w.policies, w.order[0])
		w.order = w.order[1:]
	}
	return p, nil
}
