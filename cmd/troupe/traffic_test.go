package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
)

// flakyOpenAI is fakeOpenAI behind a gate that answers every third
// request with 429 and every seventh other one with 503, both with a
// 5 ms retry-after-ms, and counts what it answered.
type flakyOpenAI struct {
	requests, rateLimited, serverErrors atomic.Int64
}

func (f *flakyOpenAI) start(t *testing.T) *httptest.Server {
	var calls atomic.Int64
	inner := fakeOpenAI(t, &calls)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := f.requests.Add(1)
		switch {
		case n%3 == 0:
			f.rateLimited.Add(1)
			w.Header().Set("retry-after-ms", "5")
			http.Error(w, `{"error":{"message":"rate limited","type":"requests"}}`, http.StatusTooManyRequests)
		case n%7 == 0:
			f.serverErrors.Add(1)
			w.Header().Set("retry-after-ms", "5")
			http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
		default:
			inner.Config.Handler.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Every request, 429 and 5xx the server answered during training and the
// final evaluation is in metrics.jsonl (per iteration) and eval.json (per
// policy), as the server counted them; the report and the progress output
// say so.
func TestTrafficCountedEndToEnd(t *testing.T) {
	var f flakyOpenAI
	srv := f.start(t)
	t.Setenv("TROUPE_TEST_KEY", "sk-test-secret-key")
	text := strings.Replace(openaiWriting(srv.URL), `timeout = "10s"`, "timeout = \"10s\"\nmax_retries = 10", 1)
	af := writeAgentfile(t, text)
	out := filepath.Join(t.TempDir(), "run")
	began := time.Now()
	code, stdout, stderr := troupe(t, "train", "-f", af, "--out", out, "--set", `eval.policies=["grpo","sop"]`)
	took := time.Since(began)
	if code != exitOK {
		t.Fatalf("train: exit %d\n%s\n%s", code, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var total core.Traffic
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var st trainer.IterationStats
		if err := json.Unmarshal(line, &st); err != nil {
			t.Fatal(err)
		}
		total = total.Add(st.LLMTraffic)
		if st.LLMTraffic.Requests > 0 && st.Metrics[core.MetricLLMRequests] == 0 {
			t.Errorf("iteration %d: no mean %s among the metrics: %v", st.Iteration, core.MetricLLMRequests, st.Metrics)
		}
	}
	trainTraffic := total
	raw, err = os.ReadFile(filepath.Join(out, "eval.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep rollout.EvalReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	for name, p := range rep.Policies {
		// sop always drafts, so it calls the LLM; whether the trained
		// policy does depends on what it learned from a server whose
		// 429s fall on whichever concurrent request comes third.
		if name == "sop" && p.LLMTraffic.Requests == 0 {
			t.Errorf("eval.json: policy %s has no requests", name)
		}
		if _, ok := p.CI95.Metrics[core.MetricLLMRateLimited]; !ok {
			t.Errorf("eval.json: policy %s has no interval for %s", name, core.MetricLLMRateLimited)
		}
		total = total.Add(p.LLMTraffic)
	}
	if int64(total.Requests) != f.requests.Load() || int64(total.RateLimited) != f.rateLimited.Load() || int64(total.ServerErrors) != f.serverErrors.Load() {
		t.Errorf("counted %d requests, %d 429s, %d 5xx; the server answered %d, %d, %d",
			total.Requests, total.RateLimited, total.ServerErrors, f.requests.Load(), f.rateLimited.Load(), f.serverErrors.Load())
	}
	if total.Retries != total.RateLimited+total.ServerErrors || total.WaitSeconds <= 0 {
		t.Errorf("%d retries and %.3f s waiting for %d 429s and %d 5xx", total.Retries, total.WaitSeconds, total.RateLimited, total.ServerErrors)
	}
	t.Logf("server: %d requests, %d 429s, %d 503s; counted %+v", f.requests.Load(), f.rateLimited.Load(), f.serverErrors.Load(), total)
	if f.rateLimited.Load() == 0 || f.serverErrors.Load() == 0 {
		t.Fatalf("the server answered no 429 or no 503 (%d requests)", f.requests.Load())
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "LLM traffic during training"; !strings.Contains(string(md), want) || !strings.Contains(string(md), "| policy | requests | retries | 429 |") {
		t.Errorf("report.md lacks the traffic:\n%s", md)
	}
	if want := "for the LLM endpoint (429, Retry-After)"; !strings.Contains(stderr, want) && !strings.Contains(stderr, "for the LLM endpoint (503, Retry-After)") {
		t.Errorf("stderr never said what the run waits for:\n%s", stderr)
	}
	if want := "llm " + itoa(trainTraffic.Requests) + " req"; !strings.Contains(stderr, want) {
		t.Errorf("the progress line lacks %q:\n%s", want, stderr)
	}
	if !strings.Contains(stdout, "LLM traffic per policy") {
		t.Errorf("the evaluation table lacks the traffic:\n%s", stdout)
	}
	// Hundreds of retries, but one status line per quiet period.
	if n, most := strings.Count(stderr, "troupe: waiting"), 1+int(took/statusQuiet); n > most {
		t.Errorf("%d waiting lines in %s (at most %d): stderr is flooded:\n%s", n, took, most, stderr)
	}
}

// withoutTraffic returns the evaluation JSON js without its LLM traffic
// (each policy's llm_traffic, and the traffic metrics, their intervals
// and their paired differences).
func withoutTraffic(t *testing.T, js string) string {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	names := core.Traffic{}.Metrics()
	for _, p := range rep["policies"].(map[string]any) {
		p := p.(map[string]any)
		delete(p, "llm_traffic")
		for _, m := range []any{p["metrics"], p["ci95"].(map[string]any)["metrics"]} {
			for k := range names {
				delete(m.(map[string]any), k)
			}
		}
	}
	for _, key := range []string{"paired", "best_baseline_paired"} {
		pairs, _ := rep[key].(map[string]any)
		for _, d := range pairs {
			for k := range names {
				delete(d.(map[string]any)["metrics"].(map[string]any), k)
			}
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// The waiting status is paced: retries in a burst print one line, but a
// long wait is always announced, and on a terminal the status follows the
// last iteration's line.
func TestWaitingStatusPacing(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 3)
	t0 := time.Unix(1e9, 0)
	p.retrying(retryEvent{delay: 300 * time.Millisecond, status: 503}, t0)
	for i := range 20 {
		p.retrying(retryEvent{delay: time.Second, status: 429}, t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	if got := strings.Count(b.String(), "\n"); got != 1 {
		t.Fatalf("a burst of 21 short retries printed %d lines:\n%s", got, b.String())
	}
	p.retrying(retryEvent{delay: 60 * time.Second, status: 429, retryAfter: true}, t0.Add(3*time.Second))
	want := "troupe: waiting 60s for the LLM endpoint (429, Retry-After), 22 retries so far (21× 429, 1× 5xx)\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Fatalf("a 60 s Retry-After inside the quiet period was not announced; got:\n%s", b.String())
	}
	// Fifteen more calls told to wait as long are the same silence.
	for i := range 15 {
		p.retrying(retryEvent{delay: 60 * time.Second, status: 429, retryAfter: true}, t0.Add(3*time.Second+time.Duration(i)*time.Millisecond))
	}
	if got := strings.Count(b.String(), "\n"); got != 2 {
		t.Fatalf("16 concurrent 60 s waits printed %d lines:\n%s", got, b.String())
	}
	p.retrying(retryEvent{delay: 2 * time.Second, err: "timed out after 1m0s"}, t0.Add(20*time.Second))
	if !strings.HasSuffix(b.String(), "waiting 2.0s for the LLM endpoint (timed out after 1m0s), 38 retries so far (36× 429, 1× 5xx)\n") {
		t.Fatalf("after the quiet period: %s", b.String())
	}

	b.Reset()
	p.tty, p.line = true, "iter 2/3  reward 0.5"
	p.retrying(retryEvent{delay: 30 * time.Second, status: 429, retryAfter: true}, t0.Add(40*time.Second))
	if want := "\r\033[Kiter 2/3  reward 0.5  | waiting 30s for the LLM endpoint (429, Retry-After)"; !strings.HasPrefix(b.String(), want) {
		t.Fatalf("terminal status %q, want prefix %q", b.String(), want)
	}
}
