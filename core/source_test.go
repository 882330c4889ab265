package core_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

// countedEnv records what was done to it.
type countedEnv struct {
	simEnv
	resets, closes int
}

func (e *countedEnv) Reset(uint64) ([]core.Observation, error) { e.resets++; return nil, nil }
func (e *countedEnv) Close() error                             { e.closes++; return nil }

// A built-in source keeps the env it made at load, never reset, for the
// first Open, so W workers make W envs; Close closes it if no Open took it.
func TestNewEnvSourceHandsOutTheLoadedEnv(t *testing.T) {
	var made []*countedEnv
	f := func(map[string]any) (core.Env, error) {
		e := &countedEnv{simEnv: simEnv{caps: core.CapSimulate}}
		made = append(made, e)
		return e, nil
	}
	src, err := core.NewEnvSource(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(made) != 1 || made[0].resets != 0 || made[0].closes != 0 {
		t.Fatalf("loading made %d envs (first reset %d, closed %d times); want 1, untouched", len(made), made[0].resets, made[0].closes)
	}
	first, err := src.Open()
	if err != nil {
		t.Fatal(err)
	}
	if len(made) != 1 || first != core.Env(made[0]) {
		t.Fatalf("the first Open made a new env (%d in all); want the one made at load", len(made))
	}
	second, err := src.Open()
	if err != nil {
		t.Fatal(err)
	}
	if len(made) != 2 || second != core.Env(made[1]) {
		t.Fatalf("the second Open: %d envs made; want a new one", len(made))
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if made[0].closes != 0 || made[1].closes != 0 {
		t.Errorf("the source's Close closed envs an Open handed out (%d, %d)", made[0].closes, made[1].closes)
	}

	made = nil
	src, err = core.NewEnvSource(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if len(made) != 1 || made[0].closes != 1 {
		t.Fatalf("closing a source never opened: %d envs made, the first closed %d times; want 1, 1", len(made), made[0].closes)
	}
	if e, err := src.Open(); err == nil || len(made) != 1 {
		t.Fatalf("Open after Close: %v, %v (%d made); want an error and no env", e, err, len(made))
	}
}

// Open after Close is an error for a built-in source, as for the plugin
// hosts' sources.
func TestOpenAfterCloseIsAnError(t *testing.T) {
	src, err := core.NewEnvSource(func(map[string]any) (core.Env, error) {
		return &countedEnv{simEnv: simEnv{caps: core.CapSimulate}}, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err := src.Open(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Open after Close: %v, %v", e, err)
	}
}

// A built-in env registered with RegisterSandboxedEnv gets the source's
// [env.sandbox] settings; Validate rejects an unknown isolation.
func TestSandboxedEnvGetsTheSandboxSettings(t *testing.T) {
	var got []core.Sandbox
	core.RegisterSandboxedEnv("test-sandboxed", func(_ map[string]any, sb core.Sandbox) (core.Env, error) {
		got = append(got, sb)
		return &countedEnv{simEnv: simEnv{caps: core.CapSimulate}}, nil
	})
	want := core.Sandbox{Isolation: core.IsolationNone, ReadOnlyDirs: []string{"/opt/venv"}}
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: "test-sandboxed", Sandbox: want})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Open(); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Open(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Isolation != want.Isolation || got[1].ReadOnlyDirs[0] != "/opt/venv" {
		t.Fatalf("factory got %+v, want %+v twice", got, want)
	}
	if envs, _ := core.Builtins(); !slices.Contains(envs, "test-sandboxed") {
		t.Errorf("Builtins() = %v lacks the sandboxed env", envs)
	}
	for _, iso := range []string{"", core.IsolationFull, core.IsolationNone} {
		if err := (core.Sandbox{Isolation: iso}).Validate(); err != nil {
			t.Errorf("isolation %q: %v", iso, err)
		}
	}
	err = core.Sandbox{Isolation: "partial"}.Validate()
	if err == nil || !strings.Contains(err.Error(), `isolation: must be "full" (the default) or "none", got "partial"`) {
		t.Errorf("isolation \"partial\": %v", err)
	}
}
