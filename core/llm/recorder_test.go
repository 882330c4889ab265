package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// countingLLM answers with a text that changes on every call, so a replay
// that called it again would be noticed.
type countingLLM struct {
	n     atomic.Int64
	delay time.Duration
}

func (c *countingLLM) Chat(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	n := c.n.Add(1)
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	return core.ChatResponse{
		Text:  fmt.Sprintf("answer #%d to %q <&>", n, req.Messages[len(req.Messages)-1].Content),
		Usage: core.Usage{PromptTokens: 10 + int(n), CompletionTokens: 3, Latency: time.Duration(n)*time.Millisecond + 7, Backend: "fake"},
	}, nil
}

func recReq(content string) core.ChatRequest {
	return core.ChatRequest{Model: "m", Messages: []core.Message{{Role: "user", Content: content}}, MaxTokens: 16, Temperature: 0.7, Seed: 9, Agent: 1, Decision: "draft"}
}

func TestRecorderRecordThenReplayBitIdentical(t *testing.T) {
	dir := t.TempDir()
	inner := &countingLLM{}
	rec, err := newRecorder(inner, dir, CacheRecord)
	if err != nil {
		t.Fatal(err)
	}
	var recorded []core.ChatResponse
	for i := range 5 {
		resp, err := rec.Chat(context.Background(), recReq(fmt.Sprint("q", i)))
		if err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, resp)
	}
	rep, err := newRecorder(nil, dir, CacheReplay)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		resp, err := rep.Chat(context.Background(), recReq(fmt.Sprint("q", i)))
		if err != nil {
			t.Fatal(err)
		}
		want := recorded[i]
		want.Usage.Backend = "replay:fake"
		if resp != want {
			t.Errorf("replay %d: got %+v, want %+v", i, resp, want)
		}
	}
	if inner.n.Load() != 5 {
		t.Errorf("inner called %d times, want 5", inner.n.Load())
	}
	if st := rep.Stats(); st.Hits != 5 || st.Misses != 0 {
		t.Errorf("replay stats %+v", st)
	}
	if st := rec.Stats(); st.Recorded != 5 {
		t.Errorf("record stats %+v", st)
	}
	// A miss names the key and the request.
	_, err = rep.Chat(context.Background(), recReq("never asked"))
	key := requestKey(recReq("never asked"))
	if !errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), `decision "draft"`) {
		t.Errorf("miss: %v", err)
	}
	// Record mode overwrites: a new answer replaces the old one.
	if _, err := rec.Chat(context.Background(), recReq("q0")); err != nil {
		t.Fatal(err)
	}
	resp, _ := rep.Chat(context.Background(), recReq("q0"))
	if !strings.HasPrefix(resp.Text, "answer #6") {
		t.Errorf("after re-recording: %q", resp.Text)
	}
}

func TestRecorderAutoDedupesConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	inner := &countingLLM{delay: 20 * time.Millisecond}
	rec, err := newRecorder(inner, dir, CacheAuto)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	texts := make([]string, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := rec.Chat(context.Background(), recReq(fmt.Sprint("q", i%4)))
			if err != nil {
				t.Error(err)
				return
			}
			texts[i] = resp.Text
		}()
	}
	wg.Wait()
	if inner.n.Load() != 4 {
		t.Errorf("inner called %d times for 4 distinct requests", inner.n.Load())
	}
	for i := range texts {
		if texts[i] != texts[i%4] {
			t.Errorf("call %d got %q, call %d got %q", i, texts[i], i%4, texts[i%4])
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("dir holds %v, want 4 recordings and no temporary files", names)
	}
	// A second auto pass replays.
	resp, _ := rec.Chat(context.Background(), recReq("q1"))
	if resp.Usage.Backend != "replay:fake" || inner.n.Load() != 4 {
		t.Errorf("second pass: %+v, inner %d", resp.Usage, inner.n.Load())
	}
}

func TestRequestKey(t *testing.T) {
	base := recReq("hello")
	k := requestKey(base)
	// Pinned: changing the key derivation invalidates every recording.
	if k != goldenKey {
		t.Errorf("requestKey = %s, want %s", k, goldenKey)
	}
	same := base
	same.Agent, same.Decision, same.Tier = 3, "other", "small"
	if requestKey(same) != k {
		t.Error("agent/decision/tier changed the key")
	}
	emptyStop := base
	emptyStop.Stop = []string{}
	if requestKey(emptyStop) != k {
		t.Error("nil and empty stop differ")
	}
	variants := []func(*core.ChatRequest){
		func(r *core.ChatRequest) { r.Model = "m2" },
		func(r *core.ChatRequest) { r.Messages = []core.Message{{Role: "system", Content: "hello"}} },
		func(r *core.ChatRequest) { r.MaxTokens++ },
		func(r *core.ChatRequest) { r.Temperature = 0.70001 },
		func(r *core.ChatRequest) { r.Stop = []string{"\n"} },
		func(r *core.ChatRequest) { r.Seed++ },
	}
	for i, v := range variants {
		r := base
		v(&r)
		if requestKey(r) == k {
			t.Errorf("variant %d did not change the key", i)
		}
	}
}

// goldenKey is sha256("troupe-llm-record-v1\n" + `{"model":"m","messages":[{"role":"user","content":"hello"}],"max_tokens":16,"temperature":0.7,"stop":[],"seed":9}`),
// computed independently with Python's hashlib.
const goldenKey = "f11b6769a7076d834e8ae73ffdbb844a9be922a616356b7631c5437613ed0635"

func TestRecorderErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := newRecorder(&countingLLM{}, dir, "rewind"); err == nil || !strings.Contains(err.Error(), `unknown mode "rewind"`) {
		t.Errorf("bad mode: %v", err)
	}
	if _, err := newRecorder(nil, dir, CacheAuto); err == nil || !strings.Contains(err.Error(), "needs an inner backend") {
		t.Errorf("auto without inner: %v", err)
	}
	if _, err := newRecorder(nil, filepath.Join(dir, "missing"), CacheReplay); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing replay dir: %v", err)
	}
	rep, _ := newRecorder(nil, dir, CacheReplay)
	key := requestKey(recReq("x"))
	os.WriteFile(filepath.Join(dir, key+".json"), []byte("{truncated"), 0o644)
	if _, err := rep.Chat(context.Background(), recReq("x")); err == nil || !strings.Contains(err.Error(), key+".json") {
		t.Errorf("corrupt recording: %v", err)
	}
}

func TestRecorderReplaysOpenAIOffline(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		writeCompletion(w, fmt.Sprintf("live answer %d", n), 20+n, 5+n)
	})
	o := newTestOpenAI(t, fs, func(c *Config) { c.Model = "cfg-model" })
	dir := t.TempDir()
	rec, _ := newRecorder(o, dir, CacheRecord)
	live, err := rec.Chat(context.Background(), recReq("evaluate this"))
	if err != nil {
		t.Fatal(err)
	}
	// A request without a model is keyed with the backend's default model.
	noModel := recReq("no model")
	noModel.Model = ""
	liveDefault, err := rec.Chat(context.Background(), noModel)
	if err != nil {
		t.Fatal(err)
	}
	fs.Close() // the endpoint is gone
	rep, _ := newRecorder(nil, dir, CacheReplay)
	got, err := rep.Chat(context.Background(), recReq("evaluate this"))
	if err != nil {
		t.Fatal(err)
	}
	live.Usage.Backend = "replay:openai"
	live.Traffic = core.Traffic{} // a replay sends no request
	if got != live {
		t.Errorf("replay %+v, live %+v", got, live)
	}
	named := noModel
	named.Model = "cfg-model"
	got, err = rep.Chat(context.Background(), named)
	if err != nil || got.Text != liveDefault.Text {
		t.Errorf("replay with the default model named: %+v, %v; live %+v", got, err, liveDefault)
	}
	// Without the backend, an unnamed model cannot be resolved: a clear miss.
	if _, err := rep.Chat(context.Background(), noModel); !errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), `model ""`) {
		t.Errorf("want a miss naming model \"\", got %v", err)
	}
}
