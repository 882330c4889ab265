package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"

	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/safetensors"
)

// OpenFunc builds the rollout setup of a resolved configuration (the
// agentfile text a trainer stored) whose plugin sources are to be played
// from the given files, each checked against its sha256; close releases
// what it opened.
type OpenFunc func(ctx context.Context, config []byte, plugins []Plugin) (s *rollout.Setup, close func(), err error)

// WorkerOptions are a worker's own settings (`troupe worker`'s flags);
// everything about a job's delivery comes with the job from its trainer's
// [Config].
type WorkerOptions struct {
	// Concurrency is how many episodes the worker plays at once (one env
	// instance each). At least 1. Default 1.
	Concurrency int
	// Cache is the directory where the Wasm modules of the trainers' runs
	// are kept, by content hash. Required.
	Cache string
	// Idle is how long a run's setup (its env instances, plugin
	// processes, LLM clients) stays open without a job before the worker
	// closes it; a later job of the run opens it again. At least 1ms.
	// Default 10m.
	Idle time.Duration
	// Log receives the worker's messages (slog.Default() when nil).
	Log *slog.Logger
}

// DefaultWorkerOptions returns the defaults documented on
// [WorkerOptions]' fields (no cache directory: the caller names one).
func DefaultWorkerOptions() WorkerOptions {
	return WorkerOptions{Concurrency: 1, Idle: 10 * time.Minute}
}

// Validate reports the first option that cannot work.
func (o WorkerOptions) Validate() error {
	switch {
	case o.Concurrency < 1:
		return fmt.Errorf("cluster worker: concurrency must be at least 1, got %d", o.Concurrency)
	case o.Cache == "":
		return errors.New("cluster worker: no cache directory for the runs' plugin files")
	case o.Idle < time.Millisecond:
		return fmt.Errorf("cluster worker: idle must be at least 1ms, got %v", o.Idle)
	}
	return nil
}

// Worker pulls episode jobs and plays them. Run it with [Worker.Run].
type Worker struct {
	r    *resources
	open OpenFunc
	o    WorkerOptions
	log  *slog.Logger

	mu       sync.Mutex
	setups   map[string]*openSetup // by configuration hash
	policies map[string]*policy.Policy
	order    []string // policy hashes, oldest first
	// pauseUntil is when the worker takes jobs again after a rate-limited
	// episode; streak counts such episodes in a row.
	pauseUntil time.Time
	streak     int

	// beforeWrite and afterWrite, if set (tests), are called before and
	// after a result is written; returning false ends the handling there,
	// as a worker killed at that point would. onPlay, if set, is called
	// with the context an episode is played in.
	beforeWrite, afterWrite func(Job) bool
	onPlay                  func(context.Context, Job)
	duplicates              atomic.Int64
	handedBack              atomic.Int64
}

// Duplicates returns how many results this worker found already written
// (by an earlier delivery of the same job) and so did not count.
func (w *Worker) Duplicates() int64 { return w.duplicates.Load() }

// HandedBack returns how many rate-limited jobs this worker handed back.
func (w *Worker) HandedBack() int64 { return w.handedBack.Load() }

// openSetup is a configuration's setup and the idle pools of one env
// instance each, reused across jobs; inUse counts the jobs playing on it
// and last is when the last one ended.
type openSetup struct {
	s     *rollout.Setup
	close func()
	err   error
	pools chan *rollout.Pool
	inUse int
	last  time.Time
}

// release closes the setup's pools and the setup.
func (s *openSetup) release() {
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

// policyCacheSize is how many policies a worker keeps decoded: the
// current iteration's and the previous one's.
const policyCacheSize = 2

// NewWorker opens the cluster's resources on nc for a worker with options
// o (see [WorkerOptions]); build opens the setup of a run's
// configuration. When the server has no job consumer yet, the worker
// creates it with [DefaultConfig]'s delivery settings (a trainer sets its
// own).
func NewWorker(ctx context.Context, nc *nats.Conn, build OpenFunc, o WorkerOptions) (*Worker, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	r, err := open(ctx, nc, DefaultConfig(), false)
	if err != nil {
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	return &Worker{r: r, open: build, o: o, log: log, setups: map[string]*openSetup{}, policies: map[string]*policy.Policy{}}, nil
}

// Run plays jobs until ctx is cancelled, then closes what it opened and
// returns nil. It closes the setups that go unused for the Idle option.
func (w *Worker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range w.o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.closeIdle(ctx)
	}()
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for h, s := range w.setups {
		s.release()
		delete(w.setups, h)
	}
	return nil
}

// closeIdle closes, until ctx ends, the setups no job used for the Idle
// option.
func (w *Worker) closeIdle(ctx context.Context) {
	t := time.NewTicker(max(w.o.Idle/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		for h, s := range w.setups {
			if s.inUse == 0 && time.Since(s.last) >= w.o.Idle {
				s.release()
				delete(w.setups, h)
				w.log.Info("cluster worker: closed a run's setup unused for "+w.o.Idle.String(), "config", h[:12])
			}
		}
		w.mu.Unlock()
	}
}

// OpenSetups returns how many runs' setups the worker holds open.
func (w *Worker) OpenSetups() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.setups)
}

func (w *Worker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		w.mu.Lock()
		wait := time.Until(w.pauseUntil)
		w.mu.Unlock()
		if wait > 0 {
			sleep(ctx, wait)
			continue
		}
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

// rateLimited reports an episode that failed because the LLM endpoint
// refused a call with status 429 (after the backend's own retries).
func rateLimited(res rollout.EpisodeResult) bool {
	return res.Failed && res.Traffic.RateLimited > 0 && strings.Contains(res.Reason, "status 429")
}

// paused records the outcome of an episode for the worker's rate-limit
// pause: a rate-limited one pauses the worker for base, doubling with
// each one in a row up to 8× base; another resets the streak. It returns
// the pause.
func (w *Worker) paused(limited bool, base time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !limited {
		w.streak = 0
		return 0
	}
	w.streak++
	d := base << min(w.streak-1, 3)
	if until := time.Now().Add(d); until.After(w.pauseUntil) {
		w.pauseUntil = until
	}
	return d
}

// handle plays one delivered job, writes its result and acks it; a job
// whose episode was rate-limited is handed back (published again, and
// this delivery acked) until it was MaxRateLimited times.
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
	// The trainer's trace: the episode's spans are children of its span.
	jctx := traceContext.Extract(ctx, propagation.HeaderCarrier(m.Headers()))
	// Report progress while the episode runs, so it is not redelivered.
	hctx, stop := context.WithCancel(ctx)
	every := j.Progress
	if every <= 0 {
		every = DefaultConfig().Progress()
	}
	go func() {
		t := time.NewTicker(every)
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
	if w.onPlay != nil {
		w.onPlay(jctx, j)
	}
	res, err := w.play(jctx, j)
	stop()
	if ctx.Err() != nil {
		_ = m.Nak() // shutting down: another worker takes it
		return
	}
	maxDeliver := j.MaxDeliver
	if maxDeliver <= 0 {
		maxDeliver = w.r.consumer.CachedInfo().Config.MaxDeliver
	}
	if err != nil {
		if int(md.NumDelivered) < maxDeliver {
			w.log.Warn("cluster worker: job failed; it will be delivered again", "job", j.Key(), "delivery", md.NumDelivered, "err", err)
			_ = m.NakWithDelay(time.Duration(md.NumDelivered) * time.Second)
			return
		}
		w.log.Error("cluster worker: job failed on its last delivery; its episode fails", "job", j.Key(), "err", err)
		res = failedResult(j, fmt.Sprintf("failed on %d deliveries: %v", md.NumDelivered, err))
	}
	if limited := rateLimited(res); limited {
		pause := w.paused(true, j.RateLimitPause)
		if j.RateLimited < j.MaxRateLimited {
			next := j
			next.RateLimited++
			msg, err := jobMsg(jctx, next, m.Headers())
			if err == nil {
				_, err = w.r.js.PublishMsg(ctx, msg)
			}
			if err != nil {
				w.log.Warn("cluster worker: handing back a rate-limited job", "job", j.Key(), "err", err)
				_ = m.Nak()
				return
			}
			w.handedBack.Add(1)
			w.log.Warn("cluster worker: the LLM rate-limited the episode; the job is handed back and this worker pauses", "job", j.Key(), "hand_back", next.RateLimited, "pause", pause)
			_ = m.Ack()
			return
		}
		res.Reason = fmt.Sprintf("rate-limited by the LLM on %d tries (cluster.max_rate_limited = %d hand-backs): %s", j.RateLimited+1, j.MaxRateLimited, res.Reason)
	} else {
		w.paused(false, 0)
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
	defer w.done(st)
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

// done ends a job's use of setup st.
func (w *Worker) done(st *openSetup) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st.inUse--
	st.last = time.Now()
}

// setup returns the setup of configuration h, fetching and building it on
// first use.
func (w *Worker) setup(ctx context.Context, h string) (*openSetup, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.setups[h]; ok {
		if s.err != nil {
			return nil, s.err
		}
		s.inUse++
		return s, nil
	}
	s := &openSetup{pools: make(chan *rollout.Pool, w.o.Concurrency), last: time.Now()}
	b, err := w.r.fetchBundle(ctx, h, w.o.Cache)
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
		w.setups[h] = s
		return nil, err
	}
	s.inUse++
	w.setups[h] = s
	return s, nil
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
