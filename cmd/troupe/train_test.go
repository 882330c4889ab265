package main

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/matrix"
)

// liveEnvs counts the test.livematrix envs open at once.
var liveEnvs struct {
	sync.Mutex
	now, max int
}

// liveMatrix is the matrix env, counted while open.
type liveMatrix struct{ *matrix.Env }

func (e liveMatrix) Close() error {
	liveEnvs.Lock()
	liveEnvs.now--
	liveEnvs.Unlock()
	return e.Env.Close()
}

func init() {
	core.RegisterEnv("test.livematrix", func(params map[string]any) (core.Env, error) {
		e, err := matrix.New(params)
		if err != nil {
			return nil, err
		}
		liveEnvs.Lock()
		liveEnvs.now++
		liveEnvs.max = max(liveEnvs.max, liveEnvs.now)
		liveEnvs.Unlock()
		return liveMatrix{e}, nil
	})
}

// troupe train with W workers has at most W envs open at a time (W
// processes of a go-plugin env): the source's load-time env is the first
// worker's, and the trainer's workers end before the evaluation opens its
// own; all are closed at the end.
func TestTrainOpensWorkersEnvsAtATime(t *testing.T) {
	liveEnvs.Lock()
	liveEnvs.now, liveEnvs.max = 0, 0
	liveEnvs.Unlock()
	af := writeAgentfile(t, strings.Replace(climbing, "builtin:matrix", "builtin:test.livematrix", 1))
	if code, _, stderr := troupe(t, "train", "-f", af, "--out", filepath.Join(t.TempDir(), "run")); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	liveEnvs.Lock()
	defer liveEnvs.Unlock()
	if liveEnvs.max != 2 || liveEnvs.now != 0 {
		t.Fatalf("with 2 workers, %d envs were open at once and %d are left open; want 2 and 0", liveEnvs.max, liveEnvs.now)
	}
}

// troupe run says when its LLM is the simulated one, as train does.
func TestRunLabelsSimulatedLLM(t *testing.T) {
	code, stdout, stderr := troupe(t, "run", "-f", filepath.Join("..", "..", "agentfile.toml"), "--baseline", "sop")
	const want = ", LLM sim (simulated LLM: results are simulations)\n"
	if code != exitOK || !strings.Contains(stdout, want) {
		t.Fatalf("run: exit %d, stdout %q, stderr %q; want a line ending %q", code, stdout, stderr, want)
	}
}
