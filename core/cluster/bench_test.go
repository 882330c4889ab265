package cluster_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
)

// latencyServer is an OpenAI-compatible chat-completions server that
// answers every request after a fixed latency with a Markdown section
// that depends only on the prompt, and counts the requests. (Episodes
// still differ a little from run to run: the openai backend reports the
// measured latency, which the writing env's clock adds.) It serves any number of requests at once, so
// it is not the bottleneck.
func latencyServer(tb testing.TB, latency time.Duration, calls *atomic.Int64) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := calls.Add(1)
		time.Sleep(latency)
		h := fnv.New32a()
		for _, m := range req.Messages {
			h.Write([]byte(m.Content))
		}
		text := fmt.Sprintf("## Section %d\n\nWe describe the design in plain words. We keep one style.\n\n- one point\n- another point\n", h.Sum32()%1000)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c" + strconv.FormatInt(n, 10), "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140},
		})
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// writingProject is the writing task with every text from the
// OpenAI-compatible server at url (no key needed), WORKERS in-process
// workers.
func writingProject(url string, workers int) string {
	return fmt.Sprintf(`[project]
name = "cluster-bench"
seed = 3
[env]
source = "builtin:writing"
[env.params]
writers = 4
rfcs = ["2707-dotdot-patterns"]
[[agents]]
role = "writer"
count = 4
llm = "default"
[llm.default]
backend = "openai"
model = "test-model"
base_url = "%s/v1"
api_key_env = "TROUPE_CLUSTER_BENCH_NO_KEY"
max_concurrency = 64
timeout = "30s"
[[rewards]]
source = "builtin:writing.consistency"
[[rewards]]
source = "builtin:makespan"
[[rewards]]
source = "builtin:tokens"
[reward.weights]
quality = 1.0
speed = 0.5
cost = 0.1
[rollout]
workers = %d
`, url, workers)
}

// benchJobs returns n training jobs of iteration 1 (groups of 4).
func benchJobs(n int) []rollout.Job {
	jobs := make([]rollout.Job, n)
	for i := range jobs {
		ts := rollout.TrainTaskSeed(3, 1, i/4)
		jobs[i] = rollout.Job{Task: ts, Rollout: rollout.RolloutSeed(ts, i%4)}
	}
	return jobs
}

// buildProject parses and builds text, closing the build when b ends.
func buildProject(b *testing.B, text string) (agentfile.Config, *agentfile.Built) {
	b.Helper()
	cfg, err := agentfile.Parse("agentfile.toml", []byte(text))
	if err != nil {
		b.Fatal(err)
	}
	built, err := cfg.Build(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { built.Close() })
	return cfg, built
}

// sampler is what both the in-process pool and the cluster client do.
type sampler interface {
	Sample(ctx context.Context, it int, jobs []rollout.Job, pol *policy.Policy) ([]rollout.EpisodeResult, error)
}

// poolSampler is the in-process pool as a sampler.
type poolSampler struct{ p *rollout.Pool }

func (s poolSampler) Sample(ctx context.Context, _ int, jobs []rollout.Job, pol *policy.Policy) ([]rollout.EpisodeResult, error) {
	return s.p.Sample(ctx, jobs, pol)
}

// runEpisodes plays warm (untimed: the workers open their setups and
// fetch the policy), then jobs b.N times on s, and reports episodes/s and
// the wall time per episode (ms/episode); a failed episode fails b.
func runEpisodes(b *testing.B, s sampler, warm, jobs []rollout.Job, pol *policy.Policy) {
	b.Helper()
	ctx := context.Background()
	if len(warm) > 0 {
		if _, err := s.Sample(ctx, 1, warm, pol); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res, err := s.Sample(ctx, 2+i, jobs, pol)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Failed {
				b.Fatalf("an episode failed: %s", r.Reason)
			}
		}
	}
	el := time.Since(start)
	b.StopTimer()
	n := float64(b.N * len(jobs))
	b.ReportMetric(n/el.Seconds(), "episodes/s")
	b.ReportMetric(el.Seconds()*1000/n, "ms/episode")
}

// benchEpisodes is the round of BenchmarkDistributedRollouts: small
// for CI's single pass, larger for figures (scripts/cluster-bench.sh).
var benchEpisodes = flag.Int("cluster.episodes", 8, "episodes per round of BenchmarkDistributedRollouts (a multiple of 4)")

// BenchmarkDistributedRollouts plays writing episodes whose every LLM
// call goes to an OpenAI-compatible test server with a fixed 50 ms
// latency: on the in-process pool (one worker: inproc-c1; and as many
// as the largest cluster: inproc-c4) and on 1, 2 and 4 worker processes
// (each one episode at a time) through an in-process NATS server. The
// scaling of N processes is their episodes/s over inproc-c1's
// (scripts/cluster-bench.sh prints the ratios). A round is
// -cluster.episodes episodes (default 8; ~14 calls each, ~12 in
// sequence); the first round of each process count is untimed (n
// episodes: each process builds its setup).
func BenchmarkDistributedRollouts(b *testing.B) {
	var calls atomic.Int64
	srv := latencyServer(b, 50*time.Millisecond, &calls)
	url := startServer(b)
	jobs := benchJobs(*benchEpisodes)
	for _, c := range []int{1, 4} {
		b.Run(fmt.Sprintf("inproc-c%d", c), func(b *testing.B) {
			_, built := buildProject(b, writingProject(srv.URL, c))
			p, err := rollout.NewPool(&built.Setup)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			pol := benchPolicy(b, built)
			runEpisodes(b, poolSampler{p}, nil, jobs, pol)
		})
	}
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("procs-%d", n), func(b *testing.B) {
			c, built := clusterSetup(context.Background(), b, url, writingProject(srv.URL, 1), clusterOptions())
			startProcs(b, url, n, 1, b.TempDir())
			runEpisodes(b, c, jobs[:n], jobs, benchPolicy(b, built))
		})
	}
	b.Logf("%d LLM calls", calls.Load())
}

// BenchmarkJobOverhead measures what going through JetStream adds to an
// episode: LBF episodes (microseconds of work, no LLM) played by the
// in-process pool with one worker (inproc), and by one worker process
// through the cluster, 16 jobs a round (batch-16) or one (batch-1). The
// overhead per episode is a cluster ms/episode minus inproc's.
func BenchmarkJobOverhead(b *testing.B) {
	url := startServer(b)
	text := strings.Replace(strings.Replace(project, "CREDIT", "", 1), "workers = 2", "workers = 1", 1)
	b.Run("inproc", func(b *testing.B) {
		_, built := buildProject(b, text)
		p, err := rollout.NewPool(&built.Setup)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		runEpisodes(b, poolSampler{p}, nil, benchJobs(16), benchPolicy(b, built))
	})
	c, built := clusterSetup(context.Background(), b, url, text, clusterOptions())
	startProcs(b, url, 1, 1, b.TempDir())
	pol := benchPolicy(b, built)
	for _, n := range []int{16, 1} {
		b.Run(fmt.Sprintf("batch-%d", n), func(b *testing.B) {
			runEpisodes(b, c, benchJobs(1), benchJobs(n), pol)
		})
	}
}

func benchPolicy(b *testing.B, built *agentfile.Built) *policy.Policy {
	b.Helper()
	pol, err := policyFor(built)
	if err != nil {
		b.Fatal(err)
	}
	return pol
}
