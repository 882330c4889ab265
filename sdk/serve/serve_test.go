package serve

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/troupe-dev/troupe/core"
)

type nopEnv struct{ core.Env }

type nopReward struct{ core.RewardFunc }

func TestNoParamsWrappers(t *testing.T) {
	env := envConfig(func() core.Env { return nopEnv{} })
	if env.Reward != nil || env.Env == nil {
		t.Fatalf("envConfig = %+v", env)
	}
	if e, err := env.Env(nil); err != nil || e == nil {
		t.Errorf("no params: %v, %v", e, err)
	}
	_, err := env.Env(map[string]any{"size": 3, "alpha": 1})
	if err == nil || !strings.Contains(err.Error(), "unknown key(s) alpha, size") || !strings.Contains(err.Error(), "takes no params") {
		t.Errorf("with params: err = %v", err)
	}

	rw := rewardConfig(func() core.RewardFunc { return nopReward{} })
	if rw.Env != nil || rw.Reward == nil {
		t.Fatalf("rewardConfig = %+v", rw)
	}
	if r, err := rw.Reward(map[string]any{}); err != nil || r == nil {
		t.Errorf("empty params: %v, %v", r, err)
	}
	if _, err := rw.Reward(map[string]any{"w": 1}); err == nil || !strings.Contains(err.Error(), "unknown key(s) w") {
		t.Errorf("with params: err = %v", err)
	}
}

// The plugin's slog lines must be hclog JSON that go-plugin and the host
// read back: @level, @message, @timestamp in hclog's layout, and attributes.
func TestHCLogHandler(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(newHCLogHandler(&buf, hclog.Info))
	l.Debug("hidden")
	l.Info("hello", "seed", 5)
	l.Warn("careful")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2 (debug filtered): %q", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["@level"] != "info" || rec["@message"] != "hello" || rec["seed"] != 5.0 {
		t.Errorf("record = %v", rec)
	}
	ts, _ := rec["@timestamp"].(string)
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z07:00", ts); err != nil {
		t.Errorf("@timestamp %q not in go-plugin's layout: %v", ts, err)
	}
	if !strings.Contains(lines[1], `"@level":"warn"`) {
		t.Errorf("warn line = %s", lines[1])
	}

	buf.Reset()
	slog.New(newHCLogHandler(&buf, hclog.Debug)).Log(t.Context(), slog.LevelDebug-4, "deep")
	if buf.Len() != 0 {
		t.Errorf("trace line at debug level: %s", buf.String())
	}
	slog.New(newHCLogHandler(&buf, hclog.Trace)).Log(t.Context(), slog.LevelDebug-4, "deep")
	if !strings.Contains(buf.String(), `"@level":"trace"`) {
		t.Errorf("trace line = %s", buf.String())
	}
}

func TestLevelName(t *testing.T) {
	for l, want := range map[slog.Level]string{
		slog.LevelDebug - 4: "trace", slog.LevelDebug: "debug", slog.LevelInfo: "info",
		slog.LevelInfo + 2: "info", slog.LevelWarn: "warn", slog.LevelError: "error", slog.LevelError + 4: "error",
	} {
		if got := levelName(l); got != want || hclog.LevelFromString(got) == hclog.NoLevel {
			t.Errorf("levelName(%v) = %q, want %q", l, got, want)
		}
	}
}
