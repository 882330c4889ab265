//go:build unix

package llm

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// BenchmarkOpenAIInFlight256 measures the openai backend's own cost per
// call with 256 calls in flight against an in-process server that answers
// every request after a fixed 50 ms. Each iteration runs two closed-loop
// phases of 256 workers making callsPerWorker calls each: first through a
// raw net/http client (the baseline: pre-encoded body, the same tuned
// transport, body read to the end), then through OpenAI.Chat with
// max_concurrency 256; alternating the phases lets both see the same
// machine load. Reported:
//
//	overhead-us/call  mean Chat latency − mean baseline latency
//	chat-ms/call      mean Chat latency (ideal: 50)
//	raw-ms/call       mean baseline latency
//	calls/s           Chat throughput (calls ÷ wall time of the Chat phases)
//	pct-of-ideal      calls/s ÷ (256 ÷ 50 ms) × 100
//	pct-of-baseline   calls/s ÷ baseline calls/s × 100
//	baseline-pct      baseline calls/s ÷ (256 ÷ 50 ms) × 100
//	new-conns         connections opened during the timed phases (0 = all reused)
//	cpu-us/call       process CPU time (user+sys, client and server) per Chat call
//	raw-cpu-us/call   the same for a baseline call
//
// On a loaded machine the latency figures include waiting for a CPU; the
// difference of the CPU figures is the framework's own cost, independent
// of load.
//
// Run: go test -run '^$' -bench OpenAIInFlight256 -benchtime 5x ./core/llm/
func BenchmarkOpenAIInFlight256(b *testing.B) { benchInFlight(b, 256) }

// BenchmarkOpenAIInFlight64 is BenchmarkOpenAIInFlight256 with 64 calls in
// flight: a quarter of the CPU demand, to tell the framework's limits from
// a machine's lack of CPU.
func BenchmarkOpenAIInFlight64(b *testing.B) { benchInFlight(b, 64) }

func benchInFlight(b *testing.B, inflight int) {
	const callsPerWorker = 8
	const latency = 50 * time.Millisecond
	fs := newFakeServer(b, func(n int, w http.ResponseWriter, r *http.Request) {
		time.Sleep(latency)
		writeCompletion(w, "a reasonably sized completion of a few dozen tokens for the benchmark", 120, 30)
	})
	o := newTestOpenAI(b, fs, func(c *Config) { c.MaxConcurrency = inflight })
	req := core.ChatRequest{Messages: []core.Message{{Role: "system", Content: "You write RFC sections."}, {Role: "user", Content: "Write the Motivation section."}}, MaxTokens: 256, Temperature: 0.7}
	body := []byte(`{"model":"test-model","messages":[{"role":"system","content":"You write RFC sections."},{"role":"user","content":"Write the Motivation section."}],"max_tokens":256,"temperature":0.7}`)
	raw := &http.Client{Transport: newTransport(inflight)}
	url := fs.URL + "/v1/chat/completions"

	rawCall := func() {
		resp, err := raw.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	chatCall := func() {
		if _, err := o.Chat(context.Background(), req); err != nil {
			b.Error(err)
		}
	}
	// phase runs inflight workers making n calls each, returning the
	// summed per-call latency and the phase's wall time.
	phase := func(call func(), n int) (sum, wall time.Duration) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := time.Now()
		for range inflight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine time.Duration
				for range n {
					t0 := time.Now()
					call()
					mine += time.Since(t0)
				}
				mu.Lock()
				sum += mine
				mu.Unlock()
			}()
		}
		wg.Wait()
		return sum, time.Since(start)
	}
	// Warm up: open the connections of both clients.
	phase(rawCall, 1)
	phase(chatCall, 1)
	conns0 := fs.conns.Load()

	var rawSum, rawWall, chatSum, chatWall, rawCPU, chatCPU time.Duration
	b.ResetTimer()
	for range b.N {
		c0 := cpuTime()
		s, w := phase(rawCall, callsPerWorker)
		c1 := cpuTime()
		rawSum, rawWall, rawCPU = rawSum+s, rawWall+w, rawCPU+c1-c0
		s, w = phase(chatCall, callsPerWorker)
		chatSum, chatWall, chatCPU = chatSum+s, chatWall+w, chatCPU+cpuTime()-c1
	}
	b.StopTimer()
	calls := float64(b.N * inflight * callsPerWorker)
	ideal := float64(inflight) / latency.Seconds()
	b.ReportMetric((chatSum-rawSum).Seconds()/calls*1e6, "overhead-us/call")
	b.ReportMetric(chatSum.Seconds()/calls*1e3, "chat-ms/call")
	b.ReportMetric(rawSum.Seconds()/calls*1e3, "raw-ms/call")
	b.ReportMetric(calls/chatWall.Seconds(), "calls/s")
	b.ReportMetric(calls/chatWall.Seconds()/ideal*100, "pct-of-ideal")
	b.ReportMetric(rawWall.Seconds()/chatWall.Seconds()*100, "pct-of-baseline")
	b.ReportMetric(calls/rawWall.Seconds()/ideal*100, "baseline-pct")
	b.ReportMetric(float64(fs.conns.Load()-conns0), "new-conns")
	b.ReportMetric(chatCPU.Seconds()/calls*1e6, "cpu-us/call")
	b.ReportMetric(rawCPU.Seconds()/calls*1e6, "raw-cpu-us/call")
}

// cpuTime returns the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChatSerial measures one call at a time against a server that
// answers at once: "openai" through OpenAI.Chat, "raw" through a bare
// net/http client posting a pre-encoded body. The ns/op difference is the
// framework's own cost per call (request building, JSON, limits,
// accounting).
//
// Run: go test -run '^$' -bench ChatSerial ./core/llm/
func BenchmarkChatSerial(b *testing.B) {
	fs := newFakeServer(b, func(n int, w http.ResponseWriter, r *http.Request) {
		writeCompletion(w, "a reasonably sized completion of a few dozen tokens for the benchmark", 120, 30)
	})
	b.Run("raw", func(b *testing.B) {
		raw := &http.Client{Transport: newTransport(1)}
		body := []byte(`{"model":"test-model","messages":[{"role":"system","content":"You write RFC sections."},{"role":"user","content":"Write the Motivation section."}],"max_tokens":256,"temperature":0.7}`)
		url := fs.URL + "/v1/chat/completions"
		for b.Loop() {
			resp, err := raw.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("openai", func(b *testing.B) {
		o := newTestOpenAI(b, fs, func(c *Config) { c.MaxConcurrency = 1 })
		req := core.ChatRequest{Messages: []core.Message{{Role: "system", Content: "You write RFC sections."}, {Role: "user", Content: "Write the Motivation section."}}, MaxTokens: 256, Temperature: 0.7}
		for b.Loop() {
			if _, err := o.Chat(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
