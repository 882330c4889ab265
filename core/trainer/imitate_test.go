package trainer

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/internal/testenv"
)

// lbfProject is Level-Based Foraging 8x8-2p-2f-coop (the env's defaults)
// scored by its return.
func lbfProject(t *testing.T, workers int) (rollout.Setup, Config) {
	t.Helper()
	src, err := core.NewEnvSource(func(p map[string]any) (core.Env, error) { return lbf.New(p) }, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Iterations, cfg.TasksPerIteration, cfg.GroupSize, cfg.Hidden = 1, 2, 2, []int{64}
	s := rollout.Setup{Name: "lbf", Env: src, Rewards: []core.RewardFunc{matrixReturn{}}, Weights: map[string]float64{"return": 1},
		Rollout: rollout.Config{Workers: workers, MaxSteps: 1000}, Seed: 7}
	return s, cfg
}

// Imitating greedy_food fits the policy to its decisions (the fit is
// measured, and the greedy imitated policy collects food where the
// untrained one does not), the same on 1 worker and on 2, and the
// imitated policy is the KL term's reference afterwards.
func TestImitateLearnsBaseline(t *testing.T) {
	var policies [][]byte
	var first []ImitationStats
	for _, workers := range []int{1, 2} {
		s, cfg := lbfProject(t, workers)
		cfg.Imitate, cfg.ImitateEpisodes, cfg.ImitateEpochs, cfg.KL = lbf.BaselineGreedyFood, 128, 60, 0.1
		tr, err := New(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		untrained := evalReturn(t, s, tr)
		st, _, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Imitation == nil {
			t.Fatal("the first iteration reports no imitation")
		}
		is := *st.Imitation
		if is.Episodes != 128 || is.FailedEpisodes != 0 || is.Decisions < 64 {
			t.Fatalf("imitation %+v: want 128 episodes, none failed, decisions recorded", is)
		}
		if !(is.LossAfter < is.LossBefore/2) || is.Agreement < 0.6 {
			t.Errorf("imitation %+v: the fit did not take (loss should halve, agreement ≥ 0.6)", is)
		}
		// The KL term's reference is the imitated policy, not the random
		// start: the update's KL to it is small (to the start it is about
		// the fit's loss difference, > 1 nat).
		if st.KL > 0.1 {
			t.Errorf("KL %.3f to the reference after imitation: the reference is not the imitated policy", st.KL)
		}
		if r := evalReturn(t, s, tr); r <= untrained+0.2 {
			t.Errorf("greedy return after imitation %.3f, untrained %.3f: want clearly more", r, untrained)
		}
		st2, _, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st2.Imitation != nil {
			t.Error("the second iteration imitates again")
		}
		b := policyBytes(t, tr.Policy())
		tr.Close()
		policies, first = append(policies, b), append(first, is)
	}
	if first[0] != first[1] || string(policies[0]) != string(policies[1]) {
		t.Errorf("imitation differs on 1 and 2 workers: %+v vs %+v", first[0], first[1])
	}
}

// evalReturn is the trained policy's greedy mean return on 20 evaluation
// episodes.
func evalReturn(t *testing.T, s rollout.Setup, tr *Trainer) float64 {
	t.Helper()
	rep, err := rollout.Evaluate(context.Background(), s, tr.Policy(), rollout.Eval{Episodes: 20, Seed: 1, Policies: []string{"grpo"}})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Policies["grpo"].Metrics[core.MetricReturn]
}

// A name the env does not offer is refused at setup, naming the key.
func TestImitateUnknownBaseline(t *testing.T) {
	s, cfg := lbfProject(t, 1)
	cfg.Imitate = "oracle"
	_, err := New(s, cfg)
	if err == nil || !strings.Contains(err.Error(), `train.imitate`) || !strings.Contains(err.Error(), `no baseline "oracle"`) || !strings.Contains(err.Error(), lbf.BaselineGreedyFood) {
		t.Fatalf("got %v", err)
	}
	cfg.Imitate, cfg.ImitateEpisodes = lbf.BaselineGreedyFood, 0
	if _, err := New(s, cfg); err == nil || !strings.Contains(err.Error(), "imitate_episodes: must be at least 1") {
		t.Fatalf("got %v", err)
	}
}

// A first iteration interrupted after the imitation (here: cancelled as
// the imitation is logged, so the rollouts that follow stop) leaves the
// policy as it started, so the iteration-0 checkpoint is the initial
// policy and a resume imitates again from it.
func TestImitateInterruptedLeavesStart(t *testing.T) {
	s, cfg := lbfProject(t, 1)
	cfg.Imitate, cfg.ImitateEpisodes, cfg.ImitateEpochs = lbf.BaselineGreedyFood, 16, 5
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Logger = slog.New(cancelOn{"imitation", cancel})
	tr, err := New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	before := policyBytes(t, tr.Policy())
	if _, _, err := tr.Step(ctx); err == nil {
		t.Fatal("the cancelled iteration completed")
	}
	if !bytes.Equal(policyBytes(t, tr.Policy()), before) {
		t.Error("the interrupted warm start changed the policy")
	}
	// The same trainer then imitates and trains as a fresh one does.
	st, _, err := tr.Step(context.Background())
	if err != nil || st.Imitation == nil {
		t.Fatalf("after the interruption: %v, imitation %v", err, st.Imitation)
	}
}

// cancelOn is a slog handler that calls cancel when a record with message
// msg is logged.
type cancelOn struct {
	msg    string
	cancel context.CancelFunc
}

func (h cancelOn) Enabled(context.Context, slog.Level) bool { return true }
func (h cancelOn) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.cancel()
	}
	return nil
}
func (h cancelOn) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h cancelOn) WithGroup(string) slog.Handler      { return h }

// A warm start that does not take the baseline's decisions says so: one
// pass over greedy_food's decisions logs the partial-fit warning with its
// agreement; a fit at fullFit or above does not warn.
func TestImitatePartialFitWarns(t *testing.T) {
	s, cfg := lbfProject(t, 1)
	cfg.Imitate, cfg.ImitateEpisodes, cfg.ImitateEpochs = lbf.BaselineGreedyFood, 16, 1
	var logs testenv.SyncBuffer
	s.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	st, _ := firstIteration(t, s, cfg)
	if st.Imitation == nil || st.Imitation.Agreement >= fullFit {
		t.Fatalf("imitation %+v: one pass should not fit greedy_food", st.Imitation)
	}
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "raise imitate_epochs") || !strings.Contains(out, "agreement=") {
		t.Errorf("no partial-fit warning in the log:\n%s", out)
	}
	for _, c := range []struct {
		agreement float64
		warn      bool
	}{{1, false}, {fullFit, false}, {0.973, true}, {0, true}} {
		msg := ImitationStats{Baseline: "rule", Agreement: c.agreement}.partialFit()
		if (msg != "") != c.warn {
			t.Errorf("agreement %v: warning %q, want one: %v", c.agreement, msg, c.warn)
		}
	}
	if msg := (ImitationStats{Baseline: "strong_by_team", Agreement: 0.973}).partialFit(); !strings.Contains(msg, "97.3 % of strong_by_team's decisions") {
		t.Errorf("warning %q does not say the fit and the baseline", msg)
	}
}
