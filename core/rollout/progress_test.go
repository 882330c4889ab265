package rollout

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
)

// An evaluation under WithEpisodeDone calls the hook once per episode,
// failed ones included, on every worker; Eval.Progress is called once
// before the first policy and after each one, in order.
func TestEvaluateReportsProgress(t *testing.T) {
	s := stallSetup(true, progressReward{})
	const n = 12
	var episodes atomic.Int32
	ctx := WithEpisodeDone(context.Background(), func() { episodes.Add(1) })
	var steps []string
	var progressed []int
	e := Eval{Episodes: n, Seed: 5, Policies: []string{"workers", "flaky"}, Progress: func(policy string, done, total int) {
		if total != 2 {
			t.Errorf("progress total %d, want 2", total)
		}
		steps, progressed = append(steps, policy), append(progressed, done)
	}}
	rep, err := Evaluate(ctx, s, nil, e)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Policies["flaky"].FailedEpisodes == 0 {
		t.Fatal("no flaky episode failed: the case does not show that failed episodes count")
	}
	if got := episodes.Load(); got != 2*n {
		t.Errorf("episode hook called %d times, want %d (2 policies × %d episodes, failed ones included)", got, 2*n, n)
	}
	if !slices.Equal(steps, []string{"", "workers", "flaky"}) || !slices.Equal(progressed, []int{0, 1, 2}) {
		t.Errorf("progress calls %v %v, want [\"\" workers flaky] [0 1 2]", steps, progressed)
	}
	// Without the hook nothing is called and nothing breaks.
	EpisodeDoneFunc(context.Background())()
}
