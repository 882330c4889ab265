package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// fakeServer is an in-process OpenAI-compatible endpoint whose behaviour per
// request is scripted by handle(n, w, r), n counting requests from 1.
type fakeServer struct {
	*httptest.Server
	handle func(n int, w http.ResponseWriter, r *http.Request)

	count atomic.Int64
	mu    sync.Mutex
	times []time.Time
	conns atomic.Int64 // new TCP connections
	auth  []string
}

func newFakeServer(t testing.TB, handle func(n int, w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	fs := &fakeServer{handle: handle}
	fs.Server = httptest.NewUnstartedServer(http.HandlerFunc(fs.serve))
	fs.Server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			fs.conns.Add(1)
		}
	}
	fs.Start()
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	// Read the whole body first: only then does the server notice a client
	// that goes away (r.Context() is cancelled).
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	n := int(fs.count.Add(1))
	fs.mu.Lock()
	fs.times = append(fs.times, time.Now())
	fs.auth = append(fs.auth, r.Header.Get("Authorization"))
	fs.mu.Unlock()
	fs.handle(n, w, r)
}

func (fs *fakeServer) requests() int { return int(fs.count.Load()) }

func (fs *fakeServer) arrivals() []time.Time {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]time.Time(nil), fs.times...)
}

// chatRequest is the part of the request body the fake server reads.
type chatRequest struct {
	Model       string         `json:"model"`
	Messages    []core.Message `json:"messages"`
	MaxTokens   int            `json:"max_tokens"`
	Temperature *float64       `json:"temperature"`
	Seed        *int64         `json:"seed"`
}

func decodeChat(r *http.Request) (chatRequest, error) {
	var req chatRequest
	err := json.NewDecoder(r.Body).Decode(&req)
	return req, err
}

// writeCompletion writes a successful completion with the given usage.
func writeCompletion(w http.ResponseWriter, text string, prompt, completion int) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		text, prompt, completion, prompt+completion)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"test_error"}}`, msg)
}
