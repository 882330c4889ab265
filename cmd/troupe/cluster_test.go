package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/troupe-dev/troupe/internal/testenv"
)

// troupe train --nats URL with three `troupe worker --nats URL` gives the
// run of the in-process pool: the same metrics.jsonl (timing aside),
// policy.safetensors and eval.json (the final evaluation is played on the
// workers too); and troupe eval --nats URL prints what troupe eval does.
func TestTrainOnWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("trains twice")
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	defer ns.Shutdown()
	url := ns.ClientURL()

	cache := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o, e bytes.Buffer
			if code := dispatch(ctx, []string{"worker", "--nats", url, "--cache", cache}, &o, &e); code != exitOK {
				t.Errorf("worker: exit %d: %s", code, e.String())
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()

	af := writeAgentfile(t, climbing)
	dir := t.TempDir()
	var metrics [][]string
	var policies, evals [][]byte
	for _, extra := range [][]string{nil, {"--nats", url}} {
		out := filepath.Join(dir, "run"+string(rune('0'+len(metrics))))
		args := append([]string{"train", "-f", af, "--out", out}, extra...)
		code, _, stderr := troupe(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if extra != nil && (!strings.Contains(stderr, "played by the workers of "+url) || !strings.Contains(stderr, "rollouts, on the cluster at "+url+", LLM")) {
			t.Errorf("stderr does not say the workers play: %s", stderr)
		}
		ev, err := os.ReadFile(filepath.Join(out, "eval.json"))
		if err != nil {
			t.Fatal(err)
		}
		evals = append(evals, ev)
		p, err := os.ReadFile(filepath.Join(out, "policy.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		metrics = append(metrics, testenv.MetricsWithoutTiming(t, filepath.Join(out, "metrics.jsonl")))
		policies = append(policies, p)
	}
	if len(metrics[0]) != 3 || strings.Join(metrics[1], "\n") != strings.Join(metrics[0], "\n") {
		t.Errorf("metrics differ:\nlocal:\n%s\nworkers:\n%s", strings.Join(metrics[0], "\n"), strings.Join(metrics[1], "\n"))
	}
	if !bytes.Equal(policies[0], policies[1]) {
		t.Error("policy.safetensors differs between the local and the cluster run")
	}
	if !bytes.Equal(evals[0], evals[1]) {
		t.Errorf("eval.json differs between the local and the cluster run:\n%s\n%s", evals[0], evals[1])
	}
	// troupe eval, greedy and sampled, on the workers and in process.
	pol := filepath.Join(dir, "run0", "policy.safetensors")
	for _, extra := range [][]string{nil, {"--sampled"}} {
		args := append([]string{"eval", "-f", af, "--policy", pol, "--episodes", "6", "--json"}, extra...)
		code, local, stderr := troupe(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		code, remote, stderr := troupe(t, append(args, "--nats", url)...)
		if code != exitOK || !strings.Contains(stderr, "played by the workers of "+url) {
			t.Fatalf("%v --nats: exit %d: %s", args, code, stderr)
		}
		if local != remote {
			t.Errorf("%v: the evaluation on the workers differs:\n%s\n%s", args, local, remote)
		}
	}
}

// A worker without --nats or with options that cannot work, a NATS URL
// that carries credentials and a [cluster] setting that cannot work are
// usage errors.
func TestWorkerUsage(t *testing.T) {
	if code, _, stderr := troupe(t, "worker"); code != exitUsage || !strings.Contains(stderr, "--nats URL is required") {
		t.Errorf("worker: exit %d, stderr %q", code, stderr)
	}
	for _, tc := range []struct{ flag, want string }{
		{"--concurrency=0", "concurrency must be at least 1, got 0"},
		{"--idle=0s", "idle must be at least 1ms, got 0s"},
	} {
		code, _, stderr := troupe(t, "worker", "--nats", "nats://127.0.0.1:9", tc.flag)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("worker %s: exit %d, stderr %q", tc.flag, code, stderr)
		}
	}
	af0 := writeAgentfile(t, climbing)
	code, _, stderr := troupe(t, "eval", "-f", af0, "--nats", "nats://127.0.0.1:4222", "--set", "cluster.progress_every=\"40s\"")
	if code != exitUsage || !strings.Contains(stderr, "cluster.progress_every") {
		t.Errorf("eval with progress_every ≥ ack_wait: exit %d, stderr %q", code, stderr)
	}
	af := writeAgentfile(t, climbing)
	code, _, stderr = troupe(t, "train", "-f", af, "--out", t.TempDir(), "--nats", "nats://user:secret@127.0.0.1:4222")
	if code != exitUsage || !strings.Contains(stderr, "cluster.nats") || !strings.Contains(stderr, "TROUPE_NATS_CREDS") {
		t.Errorf("train --nats with credentials: exit %d, stderr %q", code, stderr)
	}
}
