package cluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/cluster"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
	"github.com/troupe-dev/troupe/internal/testenv"
	_ "github.com/troupe-dev/troupe/plugins/all"
)

// startServer starts an in-process NATS server with JetStream on a
// loopback port and a temporary store, and returns its URL.
func startServer(t testing.TB) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	t.Cleanup(ns.Shutdown)
	return ns.ClientURL()
}

func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := cluster.Connect(url, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// project is a small lbf run; CREDIT is replaced by a credit setting.
const project = `[project]
name = "cluster-test"
seed = 7
[env]
source = "builtin:lbf"
[env.params]
size = 6
max_steps = 30
[[rewards]]
source = "builtin:return"
[reward.weights]
return = 1.0
[train]
iterations = 3
tasks_per_iteration = 2
group_size = 4
CREDIT
[rollout]
workers = 2
`

// train runs the project to out, on the in-process pool when url is "",
// else on the cluster at url, and returns metrics.jsonl without timing
// and policy.safetensors.
func train(t *testing.T, text, out, url string, o cluster.Config, overrides ...string) ([]string, []byte) {
	t.Helper()
	ctx := context.Background()
	cfg, err := agentfile.Parse("agentfile.toml", []byte(text), overrides...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	resolved, err := cfg.Resolved().Encode()
	if err != nil {
		t.Fatal(err)
	}
	var sampler trainer.Sampler
	if url != "" {
		c, err := cluster.NewClient(ctx, connect(t, url), resolved, cfg.Plugins(), o, nil)
		if err != nil {
			t.Fatal(err)
		}
		sampler = c
	}
	tr, err := trainer.NewWithSampler(b.Setup, b.Train, sampler)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := tr.Run(tctx, trainer.RunOptions{Out: out, Config: resolved}); err != nil {
		t.Fatal(err)
	}
	p, err := os.ReadFile(filepath.Join(out, "policy.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return testenv.MetricsWithoutTiming(t, filepath.Join(out, "metrics.jsonl")), p
}

// clusterSetup parses the project text with overrides, connects a cluster client for it
// to the server at url and builds its setup; both close when the test
// ends.
func clusterSetup(ctx context.Context, t testing.TB, url, text string, o cluster.Config, overrides ...string) (*cluster.Client, *agentfile.Built) {
	t.Helper()
	cfg, err := agentfile.Parse("agentfile.toml", []byte(text), overrides...)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := cfg.Resolved().Encode()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.NewClient(ctx, connect(t, url), resolved, cfg.Plugins(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b, err := cfg.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return c, b
}

// startWorkers runs n workers, each on its own connection, with plugin
// cache cache, until the test ends; hook (may be nil) is set on worker 0.
func startWorkers(t *testing.T, url string, n int, cache string, hook func(cluster.Job) bool) []*cluster.Worker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ws []*cluster.Worker
	for i := range n {
		w, err := cluster.NewWorker(ctx, connect(t, url), agentfile.OpenResolved, workerOpts(1, cache))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && hook != nil {
			cluster.SetAfterWrite(w, hook)
		}
		ws = append(ws, w)
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return ws
}

// runWorker runs one worker on its own connection to url, building
// setups with open, until ctx ends or stop is called; stop waits for the
// worker to return.
func runWorker(ctx context.Context, t *testing.T, url string, open cluster.OpenFunc, o cluster.WorkerOptions) (w *cluster.Worker, stop func()) {
	t.Helper()
	w, err := cluster.NewWorker(ctx, connect(t, url), open, o)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { _ = w.Run(wctx); close(ran) }()
	return w, func() { cancel(); <-ran }
}

// sample samples jobs of iteration it on c with a fresh policy for the
// env of b (policyFor), failing the test on an error.
func sample(ctx context.Context, t *testing.T, c *cluster.Client, b *agentfile.Built, it int, jobs ...rollout.Job) []rollout.EpisodeResult {
	t.Helper()
	pol, err := policyFor(b)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Sample(ctx, it, jobs, pol)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestClusterRunIsIdentical trains on 1 trainer + 3 workers and checks
// metrics.jsonl (timing aside) and policy.safetensors against the
// in-process pool, with joint credit and with counterfactual branches
// (Replay jobs). Worker 0 "dies" after writing its first result and
// before acking it: the job is delivered again, and the duplicate result
// is ignored.
func TestClusterRunIsIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("trains twice per credit")
	}
	url := startServer(t)
	o := delivery(time.Second, 3)
	var skipped atomic.Int32
	var dupKey atomic.Value
	ws := startWorkers(t, url, 3, t.TempDir(), func(j cluster.Job) bool {
		if skipped.CompareAndSwap(0, 1) {
			dupKey.Store(j.Key())
			return false // killed between writing and acking
		}
		return true
	})
	for _, credit := range []string{`credit = "joint"`, "credit = \"counterfactual\"\nbranch_points = 2\nbranch_partners = 1", `credit = "value"`} {
		text := strings.Replace(project, "CREDIT", credit, 1)
		dir := t.TempDir()
		wantM, wantP := train(t, text, filepath.Join(dir, "local"), "", o)
		gotM, gotP := train(t, text, filepath.Join(dir, "cluster"), url, o)
		if len(wantM) != 3 {
			t.Fatalf("%s: %d lines of metrics, want 3", credit, len(wantM))
		}
		if strings.Join(gotM, "\n") != strings.Join(wantM, "\n") {
			t.Errorf("%s: metrics differ:\nlocal:\n%s\ncluster:\n%s", credit, strings.Join(wantM, "\n"), strings.Join(gotM, "\n"))
		}
		if !bytes.Equal(gotP, wantP) {
			t.Errorf("%s: policy.safetensors differs from the local run's", credit)
		}
		if strings.Contains(credit, "counterfactual") && !strings.Contains(gotM[0], `"branch_episodes":`) {
			t.Errorf("%s: no branch episodes in %s", credit, gotM[0])
		}
		if strings.Contains(credit, "value") && !strings.Contains(gotM[0], `"value_loss":`) {
			t.Errorf("%s: no critic loss in %s (the states did not travel?)", credit, gotM[0])
		}
	}
	// The writing task: LLM texts (simulated), artifacts and many metrics
	// travel in the results.
	writing, err := os.ReadFile(filepath.Join("..", "..", "agentfile.toml"))
	if err != nil {
		t.Fatal(err)
	}
	small := []string{"train.iterations=2", "train.tasks_per_iteration=2", "train.group_size=3", "env.params.writers=3", "agents.0.count=3"}
	dir := t.TempDir()
	wantM, wantP := train(t, string(writing), filepath.Join(dir, "local"), "", o, small...)
	gotM, gotP := train(t, string(writing), filepath.Join(dir, "cluster"), url, o, small...)
	if len(wantM) != 2 || !strings.Contains(wantM[0], `"quality"`) {
		t.Fatalf("writing: metrics %q", wantM)
	}
	if strings.Join(gotM, "\n") != strings.Join(wantM, "\n") || !bytes.Equal(gotP, wantP) {
		t.Errorf("writing: the cluster run differs:\nlocal:\n%s\ncluster:\n%s", strings.Join(wantM, "\n"), strings.Join(gotM, "\n"))
	}
	// The unacked job comes back after AckWait; its second result is a
	// duplicate, acked and ignored.
	deadline := time.Now().Add(15 * time.Second)
	var dups int64
	for time.Now().Before(deadline) {
		dups = 0
		for _, w := range ws {
			dups += w.Duplicates()
		}
		if dups > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// (A late ack on a loaded machine may add duplicates: they are
	// ignored all the same, as the identical metrics show.)
	if skipped.Load() != 1 || dups < 1 {
		t.Errorf("the job left unacked (%v) was not written again as a duplicate (%d duplicates)", dupKey.Load(), dups)
	}
}

// TestPoisonJobFailsItsEpisode: a job whose setup cannot be built on any
// delivery fails its episode after MaxDeliver deliveries, as a local
// failure does, and the other results still arrive.
func TestPoisonJobFailsItsEpisode(t *testing.T) {
	url := startServer(t)
	o := delivery(time.Second, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	broken := func(context.Context, []byte, []cluster.Plugin) (*rollout.Setup, func(), error) {
		return nil, nil, errors.New("no such env on this worker")
	}
	_, stop := runWorker(ctx, t, url, broken, workerOpts(2, t.TempDir()))
	defer stop()

	c, b := clusterSetup(ctx, t, url, strings.Replace(project, "CREDIT", "", 1), o)
	tr, err := trainer.NewWithSampler(b.Setup, b.Train, c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, results, err := tr.Step(ctx)
	if err == nil || !strings.Contains(err.Error(), "8 of 8 episodes failed") {
		t.Fatalf("step: %v, want every episode failed", err)
	}
	for _, r := range results {
		if !r.Failed || !strings.Contains(r.Reason, "failed on 2 deliveries") || !strings.Contains(r.Reason, "no such env on this worker") {
			t.Fatalf("result: failed %v, reason %q", r.Failed, r.Reason)
		}
	}
}

// buildPlugins builds the lbf env as a Wasm module and as a go-plugin
// binary into dir.
func buildPlugins(t *testing.T, dir string) (wasm, plug string) {
	t.Helper()
	wasm, plug = filepath.Join(dir, "lbf.wasm"), filepath.Join(dir, "lbf-plugin")
	for _, b := range []struct {
		out, pkg string
		env      []string
	}{{wasm, "./examples/wasm-lbf", []string{"GOOS=wasip1", "GOARCH=wasm"}}, {plug, "./internal/testplugins/grpc/lbf", nil}} {
		cmd := exec.Command("go", "build", "-o", b.out)
		if b.env != nil {
			cmd.Args = append(cmd.Args, "-buildmode=c-shared")
		}
		cmd.Args = append(cmd.Args, b.pkg)
		cmd.Env, cmd.Dir = append(os.Environ(), b.env...), "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return wasm, plug
}

// A Wasm env is shipped to the workers through the object store (and
// cached by hash) and gives the local run; a go-plugin binary is not
// shipped, and a worker whose binary at the trainer's path differs fails
// the job, saying so.
func TestPluginsOnWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two plugins")
	}
	dir := t.TempDir()
	wasm, plug := buildPlugins(t, dir)
	url := startServer(t)
	o := delivery(time.Second, 2)

	// Wasm: identical to the local run. The worker's cache holds the
	// module under its hash (it never reads the trainer's path).
	shipped := filepath.Join(dir, "shipped.wasm")
	data, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shipped, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	startWorkers(t, url, 2, cache, nil)
	text := strings.Replace(strings.Replace(project, "CREDIT", "", 1), "builtin:lbf", "wasm:"+shipped, 1)
	wantM, wantP := train(t, text, filepath.Join(dir, "local"), "", o)
	gotM, gotP := train(t, text, filepath.Join(dir, "cluster"), url, o)
	if strings.Join(gotM, "\n") != strings.Join(wantM, "\n") || !bytes.Equal(gotP, wantP) {
		t.Errorf("wasm env: the cluster run differs from the local one:\n%s\n---\n%s", strings.Join(wantM, "\n"), strings.Join(gotM, "\n"))
	}
	sum := sha256.Sum256(data)
	if _, err := os.Stat(filepath.Join(cache, hex.EncodeToString(sum[:])+".wasm")); err != nil {
		t.Errorf("the workers did not play the module from their cache: %v", err)
	}

	// go-plugin: the binary at the trainer's path changes after the
	// trainer read it; the worker's loader refuses it.
	bin := filepath.Join(dir, "lbf-plugin-copy")
	data, err = os.ReadFile(plug)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, b := clusterSetup(ctx, t, url, strings.Replace(strings.Replace(project, "CREDIT", "", 1), "builtin:lbf", "grpc:"+bin, 1), o)
	// Replaced, not rewritten: the trainer's plugin process runs the old one.
	if err := os.WriteFile(bin+".new", append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	res := sample(ctx, t, c, b, 1, rollout.Job{Task: 2, Rollout: 3})
	if !res[0].Failed || !strings.Contains(res[0].Reason, "go-plugin binaries are not shipped") || !strings.Contains(res[0].Reason, bin) {
		t.Errorf("a worker with another binary: failed %v, reason %q", res[0].Failed, res[0].Reason)
	}
}

// policyFor returns a fresh policy for the env of b.
func policyFor(b *agentfile.Built) (*policy.Policy, error) {
	spec := b.Setup.Env.Spec()
	return policy.New(policy.Config{ObsSize: spec.ObsSize, NumDecisions: len(spec.Decisions), NumAgents: spec.NumAgents(), Hidden: []int{8}, Seed: 1})
}

// A job whose worker dies on every delivery (never writes, never acks) is
// given up by the server after MaxDeliver deliveries; the trainer then
// fails its episode, as a local failure.
func TestJobNoWorkerFinishes(t *testing.T) {
	url := startServer(t)
	o := delivery(500*time.Millisecond, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := agentfile.Parse("agentfile.toml", []byte(strings.Replace(project, "CREDIT", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	resolved, _ := cfg.Resolved().Encode()
	nc := connect(t, url)
	c, err := cluster.NewClient(ctx, nc, resolved, nil, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The dying worker: takes each delivery and drops it.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, cluster.JobStream, cluster.WorkerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	var deliveries atomic.Int32
	dctx, stopDying := context.WithCancel(ctx)
	defer stopDying()
	go func() {
		for dctx.Err() == nil {
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
			if err != nil {
				continue
			}
			for range batch.Messages() {
				deliveries.Add(1)
			}
		}
	}()
	res := sample(ctx, t, c, b, 1, rollout.Job{Task: 2, Rollout: 3})
	if !res[0].Failed || !strings.Contains(res[0].Reason, "no worker finished the episode in 2 deliveries") {
		t.Errorf("failed %v, reason %q", res[0].Failed, res[0].Reason)
	}
	if n := deliveries.Load(); n != 2 {
		t.Errorf("%d deliveries, want 2", n)
	}
}

// A worker killed in the middle of an iteration (after playing a job,
// before writing its result; it takes no more jobs) and a worker started
// later in its place still give the run of the in-process pool: the job
// is delivered again after AckWait.
func TestKilledWorkerAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("trains twice")
	}
	url := startServer(t)
	o := delivery(time.Second, 3)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	run := func(w *cluster.Worker) {
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	ncA := connect(t, url)
	a, err := cluster.NewWorker(ctx, ncA, agentfile.OpenResolved, workerOpts(1, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var played atomic.Int32
	killed := make(chan struct{})
	cluster.SetBeforeWrite(a, func(cluster.Job) bool {
		if played.Add(1) == 3 {
			ncA.Close() // the process dies: no result, no ack, no more jobs
			close(killed)
			return false
		}
		return true
	})
	run(a)
	go func() {
		<-killed
		time.Sleep(200 * time.Millisecond)
		b, err := cluster.NewWorker(ctx, connect(t, url), agentfile.OpenResolved, workerOpts(2, t.TempDir()))
		if err != nil {
			t.Error(err)
			return
		}
		run(b)
	}()
	text := strings.Replace(project, "CREDIT", "", 1)
	dir := t.TempDir()
	wantM, wantP := train(t, text, filepath.Join(dir, "local"), "", o)
	gotM, gotP := train(t, text, filepath.Join(dir, "cluster"), url, o)
	if played.Load() < 3 {
		t.Fatalf("worker A played %d jobs; the test wants it killed at its third", played.Load())
	}
	if strings.Join(gotM, "\n") != strings.Join(wantM, "\n") || !bytes.Equal(gotP, wantP) {
		t.Errorf("the run with a killed worker differs:\nlocal:\n%s\ncluster:\n%s", strings.Join(wantM, "\n"), strings.Join(gotM, "\n"))
	}
}

// An evaluation of the writing task (sim LLM) played on the workers
// (rollout.EvaluateOn with the client as the player) gives the report of
// the in-process pool byte for byte: with a trained policy greedy and
// sampled, and with the baselines only; the client reports each episode
// done (rollout.WithEpisodeDone).
func TestEvalOnWorkers(t *testing.T) {
	url := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	writing, err := os.ReadFile(filepath.Join("..", "..", "agentfile.toml"))
	if err != nil {
		t.Fatal(err)
	}
	c, b := clusterSetup(ctx, t, url, string(writing), clusterOptions(), "env.params.writers=3", "agents.0.count=3")
	startWorkers(t, url, 2, t.TempDir(), nil)
	pol, err := policyFor(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		trained *policy.Policy
		sampled bool
	}{{"greedy", pol, false}, {"sampled", pol, true}, {"baselines", nil, false}} {
		e := b.Eval
		e.Episodes, e.Sampled = 4, tc.sampled
		want, err := rollout.Evaluate(ctx, b.Setup, tc.trained, e)
		if err != nil {
			t.Fatal(err)
		}
		var episodes atomic.Int32
		got, err := rollout.EvaluateOn(rollout.WithEpisodeDone(ctx, func() { episodes.Add(1) }), b.Setup, c, tc.trained, e)
		if err != nil {
			t.Fatal(err)
		}
		if n := int(episodes.Load()); n != len(got.Policies)*e.Episodes {
			t.Errorf("%s: the client reported %d episodes done, want %d (%d policies × %d)", tc.name, n, len(got.Policies)*e.Episodes, len(got.Policies), e.Episodes)
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if !bytes.Equal(wj, gj) {
			t.Errorf("%s: the evaluation on workers differs:\nlocal:   %s\nworkers: %s", tc.name, wj, gj)
		}
		_, random := got.Policies["random"]
		if _, ok := got.Policies["grpo"]; ok != (tc.trained != nil) || !random {
			t.Errorf("%s: policies %v", tc.name, slices.Collect(maps.Keys(got.Policies)))
		}
	}
}
