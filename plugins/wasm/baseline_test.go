package wasm

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/internal/testenv"
)

// A baseline call that fails in the guest is an error, never decisions the
// host made up. A failure that leaves the instance unusable discards it,
// and the next Reset of the same env starts a new one.
func TestBaselineFaults(t *testing.T) {
	for _, c := range []struct {
		name    string
		fault   string
		sandbox core.Sandbox
		want    string
		code    int32
		kept    bool // the instance survives
	}{
		{name: "go env error", fault: "error", want: "wasm module faultgo.wasm: baseline: failed: faultgo: deliberate error", code: -1, kept: true},
		{name: "go panic", fault: "panic", want: "wasm module faultgo.wasm: baseline: panic: faultgo: deliberate panic (at main.misbehave main.go:", code: -6},
		{name: "go exit", fault: "exit", want: "baseline: the module exited with code 3"},
		{name: "go infinite loop", fault: "loop", sandbox: core.Sandbox{CallTimeout: 300 * time.Millisecond}, want: "baseline: timed out after 300ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := loadEnv(t, "faultgo.wasm", map[string]any{"fault": c.fault}, c.sandbox)
			env := startEnv(t, src)
			b, err := env.(core.BaselineProvider).Baseline("fault")
			if err != nil {
				t.Fatal(err)
			}
			obs, err := env.Reset(1)
			if err != nil {
				t.Fatal(err)
			}
			d, err := b.Act(obs)
			if err == nil {
				t.Fatalf("no error; decisions %v", d)
			}
			if d != nil {
				t.Errorf("decisions %v along with the error", d)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nlacks %q", err, c.want)
			}
			var ce *CallError
			if !errors.As(err, &ce) || ce.Code != c.code || ce.Discarded == c.kept {
				t.Fatalf("error %#v: want code %d, discarded %v", err, c.code, !c.kept)
			}
			if !c.kept {
				if _, err := b.Act(obs); err == nil || !strings.Contains(err.Error(), "baseline: no live instance (discarded after: ") {
					t.Errorf("baseline after the failure: %v", err)
				}
				if _, err := env.Step(make([]core.Action, 2)); err == nil || !strings.Contains(err.Error(), "no live instance") {
					t.Errorf("step after the failure: %v", err)
				}
			}
			if _, err := env.Reset(2); err != nil {
				t.Fatalf("reset after the failure: %v", err)
			}
		})
	}
	// Without a fault the same baseline decides.
	env := startEnv(t, loadEnv(t, "faultgo.wasm", nil, core.Sandbox{}))
	b, err := env.(core.BaselineProvider).Baseline("fault")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := env.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := b.Act(obs); err != nil || !reflect.DeepEqual(d, []int{0, 0}) {
		t.Fatalf("baseline without a fault: %v, %v", d, err)
	}
}

// Through the runtime, a baseline whose guest fails fails the episode with
// the guest's error as its reason, whether or not the instance survives
// (before, an env error that kept the instance let the episode play on with
// decision 0 for every agent).
func TestBaselineFaultFailsEpisode(t *testing.T) {
	ctx := context.Background()
	rf, err := testLoad.LoadRewardFunc(ctx, core.SourceRef{Path: mod("faultgo.wasm")})
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	for fault, want := range map[string]string{
		"":      "",
		"error": "baseline fault: wasm module faultgo.wasm: baseline: failed: faultgo: deliberate error",
		"exit":  "baseline fault: wasm module faultgo.wasm: baseline: the module exited with code 3",
	} {
		s := rollout.Setup{
			Name: "faultgo", Env: loadEnv(t, "faultgo.wasm", map[string]any{"fault": fault}, core.Sandbox{}),
			Rewards: []core.RewardFunc{rf}, Weights: map[string]float64{"quality": 1},
		}
		res, err := rollout.RunEpisode(ctx, s, nil, "fault", 1, nil)
		if fault == "" {
			if err != nil || res.Failed || res.Episode.Steps != 5 {
				t.Fatalf("without a fault: %+v, %v", res, err)
			}
			continue
		}
		if err == nil || !res.Failed || !strings.Contains(res.Reason, want) || !strings.Contains(err.Error(), want) {
			t.Fatalf("fault %s: failed %v, reason %q, err %v; want the reason to contain %q", fault, res.Failed, res.Reason, err, want)
		}
	}
}

// A Go guest's panic is reported as its value and the panicking frame
// (function, file name, line), without the stack or build paths; the
// stack goes to the log at debug level only.
func TestGuestPanicStackOnlyAtDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var log testenv.SyncBuffer
		l := NewLoader(Options{CacheDir: filepath.Join(modDir, "cache"),
			Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: level}))})
		src, err := l.loadEnvSource(context.Background(), core.SourceRef{Scheme: "wasm", Path: mod("faultgo.wasm"), Params: map[string]any{"fault": "panic"}})
		if err != nil {
			t.Fatal(err)
		}
		env := startEnv(t, src)
		if _, err := env.Reset(1); err != nil {
			t.Fatal(err)
		}
		_, err = env.Step([]core.Action{{Decision: 1}, {Decision: 0}})
		want := "wasm module faultgo.wasm: step: panic: faultgo: deliberate panic (at main.misbehave main.go:"
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.ContainsAny(err.Error(), "\n/") {
			t.Fatalf("error %q; want one line beginning %q, no stack, no paths", err, want)
		}
		src.Close()
		logged := strings.Contains(log.String(), "guest panic stack") && strings.Contains(log.String(), "goroutine")
		if logged != (level == slog.LevelDebug) {
			t.Errorf("at level %v the stack was logged: %v; want only at debug:\n%s", level, logged, log.String())
		}
	}
}
