package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/atomicfile"
)

// replayPrefix prefixes the Usage.Backend of replayed completions, e.g.
// "replay:openai".
const replayPrefix = "replay:"

// recordFormat versions the key derivation and the file layout.
const recordFormat = 1

// ErrNotRecorded is wrapped by the error of a request that a backend in
// CacheReplay mode has no recording of.
var ErrNotRecorded = errors.New("no recording")

// recorder is a core.LLM that records completions of an inner backend in a
// directory, one JSON file per request key, and replays them offline and
// bit-identically (same text, same token counts, same latency). It is safe
// for concurrent use; concurrent calls with the same key make one inner
// call.
type recorder struct {
	inner core.LLM
	dir   string
	mode  CacheMode
	cfg   Config // the settings New built it from

	mu       sync.Mutex
	inflight map[string]*flight

	hits, misses, recorded atomic.Int64
}

type flight struct {
	done chan struct{}
	resp core.ChatResponse
	err  error
}

// recording is the content of one recording file, <dir>/<key>.json.
type recording struct {
	Format  int        `json:"format"`
	Key     string     `json:"key"`
	Request keyRequest `json:"request"`
	Text    string     `json:"text"`
	// Usage is the inner backend's usage, Backend included (e.g. "openai").
	Usage core.Usage `json:"usage"`
}

// keyRequest is the part of a ChatRequest that identifies a completion:
// what an endpoint sees. Agent, Decision and Tier are not part of it.
type keyRequest struct {
	Model       string         `json:"model"`
	Messages    []core.Message `json:"messages"`
	MaxTokens   int            `json:"max_tokens"`
	Temperature float64        `json:"temperature"`
	Stop        []string       `json:"stop"`
	Seed        uint64         `json:"seed"`
}

// newKeyRequest extracts the keyed fields of req, with nil slices as empty.
func newKeyRequest(req core.ChatRequest) keyRequest {
	k := keyRequest{Model: req.Model, Messages: req.Messages, MaxTokens: req.MaxTokens,
		Temperature: req.Temperature, Stop: req.Stop, Seed: req.Seed}
	if k.Messages == nil {
		k.Messages = []core.Message{}
	}
	if k.Stop == nil {
		k.Stop = []string{}
	}
	return k
}

// requestKey returns the hex sha256 of "troupe-llm-record-v1\n" followed
// by the JSON (encoding/json, no spaces) of req's keyed fields in this
// order: model, messages, max_tokens, temperature, stop, seed, with nil
// slices written as []. The model is taken as given.
func requestKey(req core.ChatRequest) string {
	b, err := json.Marshal(newKeyRequest(req))
	if err != nil {
		// Only NaN or ±Inf temperatures fail to encode; key them apart.
		b = fmt.Appendf(nil, "%#v", newKeyRequest(req))
	}
	h := sha256.New()
	fmt.Fprintf(h, "troupe-llm-record-v%d\n", recordFormat)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// newRecorder returns a recorder over inner storing files in dir. Record
// and auto modes create dir if needed and need an inner backend; replay
// mode needs dir to exist and never calls inner, which may be nil.
//
// The key includes the model. A request with an empty Model is keyed with
// the inner backend's default model when it has one (the openai backend's),
// so recordings of different configured models never mix; a replaying
// recorder needs the same inner backend (it is not called) or requests
// that name their model, else it misses with an error naming model "".
func newRecorder(inner core.LLM, dir string, mode CacheMode) (*recorder, error) {
	if dir == "" {
		return nil, errors.New("recorder: empty directory")
	}
	switch mode {
	case CacheRecord, CacheAuto:
		if inner == nil {
			return nil, fmt.Errorf("recorder: mode %q needs an inner backend", mode)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("recorder: %w", err)
		}
	case CacheReplay:
		fi, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("recorder: replay directory: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("recorder: replay directory %s is not a directory", dir)
		}
	default:
		return nil, fmt.Errorf("recorder: unknown mode %q (want record, replay or auto)", mode)
	}
	return &recorder{inner: inner, dir: dir, mode: mode, inflight: map[string]*flight{}}, nil
}

// recorderStats counts what a recorder did.
type recorderStats struct {
	// Hits are completions answered from a recording.
	Hits int `json:"hits"`
	// Misses are requests with no recording (errors in replay mode).
	Misses int `json:"misses"`
	// Recorded are completions written to disk.
	Recorded int `json:"recorded"`
}

// Stats returns the recorder's counters.
func (r *recorder) Stats() recorderStats {
	return recorderStats{Hits: int(r.hits.Load()), Misses: int(r.misses.Load()), Recorded: int(r.recorded.Load())}
}

// Path returns the file that holds (or would hold) the recording of key.
func (r *recorder) Path(key string) string { return filepath.Join(r.dir, key+".json") }

// Name returns "record:NAME", "replay:NAME" or "auto:NAME" after the mode
// and the inner backend's name.
func (r *recorder) Name() string {
	inner := "none"
	if n, ok := r.inner.(interface{ Name() string }); ok {
		inner = n.Name()
	}
	return string(r.mode) + ":" + inner
}

// String names the recorder, its mode and directory.
func (r *recorder) String() string {
	return fmt.Sprintf("recorder(mode=%s dir=%s inner=%v)", r.mode, r.dir, r.inner)
}

// Config returns the settings New built the recorder from.
func (r *recorder) Config() Config { return r.cfg }

// Close closes the inner backend if it is an io.Closer.
func (r *recorder) Close() error {
	if c, ok := r.inner.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Chat answers req from its recording or the inner backend, by mode.
// Replayed completions carry the recorded Usage with Backend
// "replay:<original backend>"; fresh ones the inner backend's Usage.
func (r *recorder) Chat(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	if req.Model == "" {
		if d, ok := r.inner.(interface{ DefaultModel() string }); ok {
			req.Model = d.DefaultModel()
		}
	}
	key := requestKey(req)
	if r.mode != CacheRecord {
		rec, err := r.read(key)
		switch {
		case err == nil:
			r.hits.Add(1)
			return replayed(rec), nil
		case !errors.Is(err, os.ErrNotExist):
			return core.ChatResponse{}, err
		}
		if r.mode == CacheReplay {
			r.misses.Add(1)
			return core.ChatResponse{}, fmt.Errorf("recorder: replay: %w for key %s (agent %d, decision %q, model %q) in %s",
				ErrNotRecorded, key, req.Agent, req.Decision, req.Model, r.dir)
		}
		r.misses.Add(1)
	}
	for {
		r.mu.Lock()
		if f := r.inflight[key]; f != nil {
			r.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return core.ChatResponse{}, fmt.Errorf("recorder: %w", ctx.Err())
			}
			// A leader stopped by its own context does not speak for us.
			if f.err != nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) && ctx.Err() == nil {
				continue
			}
			return f.resp, f.err
		}
		f := &flight{done: make(chan struct{})}
		r.inflight[key] = f
		r.mu.Unlock()
		f.resp, f.err = r.callAndWrite(ctx, key, req)
		r.mu.Lock()
		delete(r.inflight, key)
		r.mu.Unlock()
		close(f.done)
		return f.resp, f.err
	}
}

func (r *recorder) callAndWrite(ctx context.Context, key string, req core.ChatRequest) (core.ChatResponse, error) {
	if r.mode == CacheAuto {
		// Another call may have recorded key since our first look.
		if rec, err := r.read(key); err == nil {
			return replayed(rec), nil
		}
	}
	resp, err := r.inner.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	rec := recording{Format: recordFormat, Key: key, Request: newKeyRequest(req), Text: resp.Text, Usage: resp.Usage}
	if err := r.write(rec); err != nil {
		return core.ChatResponse{}, err
	}
	r.recorded.Add(1)
	return resp, nil
}

func replayed(rec recording) core.ChatResponse {
	u := rec.Usage
	if !strings.HasPrefix(u.Backend, replayPrefix) {
		u.Backend = replayPrefix + u.Backend
	}
	return core.ChatResponse{Text: rec.Text, Usage: u}
}

func (r *recorder) read(key string) (recording, error) {
	path := r.Path(key)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return recording{}, err
		}
		return recording{}, fmt.Errorf("recorder: %w", err)
	}
	var rec recording
	if err := json.Unmarshal(b, &rec); err != nil {
		return recording{}, fmt.Errorf("recorder: %s: %w", path, err)
	}
	if rec.Format != recordFormat {
		return recording{}, fmt.Errorf("recorder: %s: format %d, want %d", path, rec.Format, recordFormat)
	}
	if rec.Key != key {
		return recording{}, fmt.Errorf("recorder: %s: holds key %s, want %s", path, rec.Key, key)
	}
	return rec, nil
}

// write stores rec atomically: a temporary file in the same directory,
// synced, then renamed over the final name.
func (r *recorder) write(rec recording) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("recorder: encode %s: %w", rec.Key, err)
	}
	b = append(b, '\n')
	if err := atomicfile.WriteFile(r.Path(rec.Key), b, 0o644); err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	return nil
}

// offline stands in for the backend behind a replaying recorder, which
// never calls it: it names the backend and the default model (which key the
// recordings) without a client, an endpoint or an API key. Its Chat fails.
type offline struct {
	Backend string // the recorded backend's name, e.g. "openai"
	Model   string // the model requests without one are keyed with
}

// Name returns o.Backend.
func (o offline) Name() string { return o.Backend }

// DefaultModel returns o.Model.
func (o offline) DefaultModel() string { return o.Model }

// Chat fails: an offline backend has no endpoint.
func (o offline) Chat(context.Context, core.ChatRequest) (core.ChatResponse, error) {
	return core.ChatResponse{}, fmt.Errorf("%s: offline stand-in for replay: no endpoint to call", o.Backend)
}
