package wasm

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/envs/matrix"
	"github.com/troupe-dev/troupe/examples/wasm-go-env/notes"
	"github.com/troupe-dev/troupe/internal/testenv"
)

func loadEnv(t testing.TB, name string, params map[string]any, sb core.Sandbox) *EnvSource {
	t.Helper()
	src, err := testLoad.loadEnvSource(context.Background(), core.SourceRef{Scheme: "wasm", Path: mod(name), Params: params, Sandbox: sb})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func startEnv(t testing.TB, src *EnvSource) core.Env {
	t.Helper()
	e, err := src.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// sameStep compares two step results, treating nil and empty metric maps
// alike.
func sameStep(t *testing.T, where string, got, want core.StepResult) {
	t.Helper()
	if len(got.Metrics) == 0 && len(want.Metrics) == 0 {
		got.Metrics, want.Metrics = nil, nil
	}
	if len(got.Artifacts) == 0 && len(want.Artifacts) == 0 {
		got.Artifacts, want.Artifacts = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n wasm   %+v\n native %+v", where, got, want)
	}
}

// The Go example env behaves exactly like the same code in-process, and
// every optional interface crosses the ABI.
func TestGoExampleEnvMatchesNative(t *testing.T) {
	params := map[string]any{"agents": 3, "max_steps": 6}
	src := loadEnv(t, "notes.wasm", params, core.Sandbox{})
	native, err := core.NewEnvSource(notes.New, params)
	if err != nil {
		t.Fatal(err)
	}
	all := core.CapTruncate | core.CapPrompt | core.CapSimulate | core.CapBaseline
	if got := src.Spec().Capabilities; got != all {
		t.Fatalf("capabilities %v, want %v", got, all)
	}
	st := envtest.SameTrajectories(t, native, src, 1, 2, 3, 4, 5, 6, 7, 8)
	if st.Baseline == 0 || st.Truncations == 0 || st.Ended < 6 {
		t.Errorf("%+v: too few to compare", st)
	}
	env := startEnv(t, src)
	if _, ok := env.(*Env); !ok {
		t.Errorf("Open returned a %T, want a *Env", env)
	}
	for _, iface := range []struct {
		name string
		ok   bool
	}{
		{"Truncater", found(core.TruncaterOf(env))}, {"Prompter", found(core.PrompterOf(env))},
		{"Simulator", found(core.SimulatorOf(env))}, {"BaselineProvider", found(core.BaselineProviderOf(env))},
	} {
		if !iface.ok {
			t.Errorf("the runtime does not find the wasm env's core.%s", iface.name)
		}
	}
	if _, err := env.(core.BaselineProvider).Baseline("nope"); err == nil {
		t.Error("unknown baseline: no error")
	}
	// Simulate: deterministic for the same generator state.
	env.Reset(9)
	sim := env.(core.Simulator)
	req := env.(core.Prompter).Prompt(0, notes.Write)
	a, err := sim.Simulate(0, notes.Write, req, rand.New(rand.NewPCG(4, 2)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sim.Simulate(0, notes.Write, req, rand.New(rand.NewPCG(4, 2)))
	if a != b || !strings.HasPrefix(a.Text, "Writer 0 thinks") || a.CompletionTokens == 0 {
		t.Fatalf("simulate: %+v then %+v", a, b)
	}
	if _, err := sim.Simulate(0, notes.Wait, req, rand.New(rand.NewPCG(4, 2))); err == nil || !strings.Contains(err.Error(), "needs no text") {
		t.Fatalf("simulate of a non-text decision: %v", err)
	}
	// Truncate.
	res, err := env.(core.Truncater).Truncate()
	if err != nil || !res.Truncated || res.Metrics == nil {
		t.Fatalf("truncate: %+v, %v", res, err)
	}
	// An env error is reported and keeps the instance.
	if _, err := env.Step(make([]core.Action, 3)); err == nil || !strings.Contains(err.Error(), "Step after the episode ended") {
		t.Fatalf("step after end: %v", err)
	}
	if _, err := env.Reset(1); err != nil {
		t.Fatalf("reset after an env error: %v", err)
	}
}

// found returns the ok of a core.XOf lookup.
func found[T any](_ T, ok bool) bool { return ok }

// The C matrix example plays exactly like the built-in matrix env.
func TestCMatrixMatchesNative(t *testing.T) {
	needC(t)
	for _, params := range []map[string]any{nil, {"game": "penalty", "k": -50, "steps": 7}} {
		src := loadEnv(t, "matrix.wasm", params, core.Sandbox{})
		if got := src.Spec().Capabilities; got != core.CapTruncate {
			t.Fatalf("C matrix capabilities: %v, want truncate", got)
		}
		native, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: matrix.Name, Params: params})
		if err != nil {
			t.Fatal(err)
		}
		if st := envtest.SameTrajectories(t, native, src, 0, 1, 2, 3, 4, 5); st.Truncations == 0 {
			t.Errorf("%+v: no truncation compared", st)
		}
		env := startEnv(t, src)
		env.Reset(0)
		env.Step([]core.Action{{Decision: 0}, {Decision: 0}})
		if _, err := env.(core.Truncater).Truncate(); err != nil {
			t.Fatal(err)
		}
		_, err = env.Step([]core.Action{{Decision: 0}, {Decision: 5}})
		if err == nil || !strings.Contains(err.Error(), "Step after the episode ended") {
			t.Fatalf("step after truncate: %v", err)
		}
		env.Reset(0)
		_, err = env.Step([]core.Action{{Decision: 0}, {Decision: 5}})
		if err == nil || !strings.Contains(err.Error(), "agent 1: decision 5 out of range 0..2") {
			t.Fatalf("bad decision: %v", err)
		}
		var ce *CallError
		if !errors.As(err, &ce) || ce.Code != -1 || ce.Discarded {
			t.Fatalf("bad decision: want a kept instance and code -1, got %#v", err)
		}
	}
	_, err := testLoad.LoadEnv(context.Background(), core.SourceRef{Path: mod("matrix.wasm"), Params: map[string]any{"gmae": "x"}})
	if err == nil || !strings.Contains(err.Error(), `unknown key "gmae"`) {
		t.Fatalf("bad params: %v", err)
	}
}

func TestABIVersionChecked(t *testing.T) {
	needC(t)
	ctx := context.Background()
	_, err := testLoad.LoadEnv(ctx, core.SourceRef{Path: mod("fault_abiv2.wasm")})
	var ae *ABIError
	if !errors.As(err, &ae) || !reflect.DeepEqual(ae.Have, []int{2}) || ae.Want != 1 {
		t.Fatalf("v2 module: %#v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "fault_abiv2.wasm") || !strings.Contains(msg, "the module speaks troupe ABI version 2, this host speaks version 1") {
		t.Fatalf("message: %s", msg)
	}
	_, err = testLoad.LoadReward(ctx, core.SourceRef{Path: mod("fault_noabi.wasm")})
	if !errors.As(err, &ae) || len(ae.Have) != 0 || !strings.Contains(err.Error(), "exports no troupe_abi_vN marker") {
		t.Fatalf("module without marker: %v", err)
	}
	info, err := Inspect(ctx, mod("fault_abiv2.wasm"))
	if !errors.As(err, &ae) || info.ABIVersion != 2 || info.Env != nil {
		t.Fatalf("inspect v2: %+v, %v", info, err)
	}
	_, err = testLoad.LoadEnv(ctx, core.SourceRef{Path: mod("fault_import.wasm")})
	if err == nil || !strings.Contains(err.Error(), "imports env.host_secret; a troupe plugin may import only from wasi_snapshot_preview1") {
		t.Fatalf("foreign import: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	needC(t)
	ctx := context.Background()
	for _, c := range []struct {
		ref  core.SourceRef
		want string
	}{
		{core.SourceRef{Path: mod("missing.wasm")}, "no such file"},
		{core.SourceRef{Path: "wasm_test.go"}, `wasm module wasm_test.go: not a WebAssembly binary module (no \0asm header)`},
		{core.SourceRef{Path: mod("fault_none.wasm"), SHA256: strings.Repeat("0", 64)}, "the agentfile pins 0000"},
		{core.SourceRef{Path: mod("fault_badspec.wasm")}, `wasm module fault_badspec.wasm: open: malformed spec JSON`},
		{core.SourceRef{Path: mod("fault_none.wasm"), Sandbox: core.Sandbox{MemoryLimitMiB: -1}}, "wasm module fault_none.wasm: sandbox.memory_limit_mib: must be in [0, 4096] (0 = default), got -1"},
		{core.SourceRef{Path: mod("fault_none.wasm"), Sandbox: core.Sandbox{CallTimeout: time.Microsecond}}, "wasm module fault_none.wasm: sandbox.call_timeout: must be 0 (the default), negative (no limit) or at least 1ms, got 1µs"},
		{core.SourceRef{Path: mod("faultgo.wasm"), Params: map[string]any{"bogus": 1}}, `params: unknown key "bogus"`},
		{core.SourceRef{Path: mod("faultgo.wasm"), Params: map[string]any{"fault": "initloop"}, Sandbox: core.Sandbox{CallTimeout: 200 * time.Millisecond}}, "open: timed out after 200ms"},
	} {
		_, err := testLoad.LoadEnv(ctx, c.ref)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.ref.Path, err, c.want)
		}
	}
	// A module that serves only an env is no reward function, and the
	// reverse.
	if _, err := testLoad.LoadReward(ctx, core.SourceRef{Path: mod("matrix.wasm")}); err == nil || !strings.Contains(err.Error(), "missing export troupe_score") {
		t.Errorf("env module as reward: %v", err)
	}
	bin, _ := os.ReadFile(mod("fault_none.wasm"))
	if _, err := testLoad.LoadEnv(ctx, core.SourceRef{Path: mod("fault_none.wasm"), SHA256: sha256hex(bin)}); err != nil {
		t.Errorf("correct pin: %v", err)
	}
}

// Every kind of guest failure gives a clear error, discards the instance,
// and the next Reset of the same env works with a fresh instance.
func TestFaults(t *testing.T) {
	needC(t)
	act := []core.Action{{Decision: 1}, {Decision: 0}}
	for _, c := range []struct {
		name    string
		module  string
		params  map[string]any
		sandbox core.Sandbox
		actions []core.Action
		want    []string
		code    int32
		kept    bool // the instance survives
	}{
		{name: "go panic", module: "faultgo.wasm", params: map[string]any{"fault": "panic"}, actions: act,
			want: []string{"wasm module faultgo.wasm: step: panic: faultgo: deliberate panic (at main.misbehave main.go:"}, code: -6},
		{name: "go infinite loop", module: "faultgo.wasm", params: map[string]any{"fault": "loop"}, actions: act,
			sandbox: core.Sandbox{CallTimeout: 300 * time.Millisecond}, want: []string{"step: timed out after 300ms"}},
		{name: "go out of memory", module: "faultgo.wasm", params: map[string]any{"fault": "oom"}, actions: act,
			sandbox: core.Sandbox{MemoryLimitMiB: 64}, want: []string{"step: trap: unreachable; guest stderr: runtime: out of memory: cannot allocate"}},
		{name: "go exit", module: "faultgo.wasm", params: map[string]any{"fault": "exit"}, actions: act,
			want: []string{"step: the module exited with code 3"}},
		{name: "go env error", module: "faultgo.wasm", params: map[string]any{"fault": "error"}, actions: act,
			want: []string{"step: failed: faultgo: deliberate error"}, code: -1, kept: true},
		{name: "go bad observation", module: "faultgo.wasm", params: map[string]any{"fault": "badobs"}, actions: act,
			want: []string{"step: failed: step result: observation of agent 0 has 3 features, obs_size is 2"}, code: -1, kept: true},
		{name: "wrong action count", module: "faultgo.wasm", actions: act[:1],
			want: []string{"step: 1 actions for 2 agents"}, kept: true},
		{name: "c infinite loop", module: "fault_loop.wasm", actions: act[:1], sandbox: core.Sandbox{CallTimeout: 200 * time.Millisecond},
			want: []string{"step: timed out after 200ms"}},
		{name: "c trap", module: "fault_trap.wasm", actions: act[:1], want: []string{"step: trap: unreachable"}},
		{name: "c reply beyond buffer", module: "fault_biglen.wasm", actions: act[:1],
			want: []string{"step: reply length 65636 beyond the buffer's capacity of 65536 bytes"}},
		{name: "c malformed reply", module: "fault_badreply.wasm", actions: act[:1],
			want: []string{"step: malformed reply: step result: at byte 4: 7 observations, the spec has 1 agents"}},
		{name: "c memory growth", module: "fault_grow.wasm", actions: act[:1], sandbox: core.Sandbox{MemoryLimitMiB: 8},
			want: []string{"step: trap: unreachable"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := loadEnv(t, c.module, c.params, c.sandbox)
			if !src.m.interruptible {
				t.Fatal("the module was not instrumented for interrupts")
			}
			env := startEnv(t, src)
			if _, err := env.Reset(1); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := env.Step(c.actions)
			if err == nil {
				t.Fatal("no error")
			}
			if testenv.Timing() && time.Since(start) > 3*time.Second {
				t.Errorf("the failure took %v", time.Since(start))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			var ce *CallError
			if !errors.As(err, &ce) || ce.Code != c.code || ce.Discarded == c.kept {
				t.Fatalf("error %#v: want code %d, discarded %v", err, c.code, !c.kept)
			}
			if !c.kept {
				_, err := env.Step(c.actions)
				if err == nil || !strings.Contains(err.Error(), "no live instance (discarded after: ") {
					t.Errorf("step after the failure: %v", err)
				}
				if env.State() != nil {
					t.Error("state of a discarded instance is not nil")
				}
			}
			// The same env value recovers on Reset.
			obs, err := env.Reset(2)
			if err != nil || len(obs) != len(src.Spec().Agents) {
				t.Fatalf("reset after the failure: %v", err)
			}
		})
	}
}

// A runaway guest is stopped even with a single P and a garbage collector
// that keeps stopping the world (the instrumented loop leaves native code
// regularly, so neither waits for the other).
func TestTimeoutUnderGCPressure(t *testing.T) {
	needC(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	for _, name := range []string{"fault_loop.wasm", "faultgo.wasm"} {
		src := loadEnv(t, name, map[string]any{"fault": "loop"}, core.Sandbox{CallTimeout: 300 * time.Millisecond})
		if name == "fault_loop.wasm" {
			src = loadEnv(t, name, nil, core.Sandbox{CallTimeout: 300 * time.Millisecond})
		}
		env := startEnv(t, src)
		env.Reset(1)
		acts := make([]core.Action, len(src.Spec().Agents))
		start := time.Now()
		if _, err := env.Step(acts); err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
			t.Fatalf("%s: %v", name, err)
		}
		if d := time.Since(start); testenv.Timing() && d > 5*time.Second {
			t.Errorf("%s: stopping took %v", name, d)
		}
	}
}

// Without the instrumentation, wazero's own termination stops a runaway
// call just as well (only more slowly in the normal case).
func TestTimeoutWithoutInstrumentation(t *testing.T) {
	needC(t)
	instrument = false
	defer func() { instrument = true }()
	sb := core.Sandbox{CallTimeout: 200 * time.Millisecond}
	src := loadEnv(t, "fault_loop.wasm", nil, sb)
	if src.m.interruptible {
		t.Fatal("instrumented although disabled")
	}
	env := startEnv(t, src)
	env.Reset(1)
	if _, err := env.Step([]core.Action{{}}); err == nil || !strings.Contains(err.Error(), "step: timed out after 200ms") {
		t.Fatalf("loop in step: %v", err)
	}
	if _, err := env.Reset(1); err != nil {
		t.Fatalf("reset after the timeout: %v", err)
	}
	// A loop in open is stopped too. The C module loops in open when its
	// params are the JSON string "loop", which no params map encodes to,
	// so call it directly.
	in, _, err := src.m.openInstance(context.Background(), openEnv, []byte(`"loop"`))
	if err == nil || !strings.Contains(err.Error(), "open: timed out after 200ms") {
		t.Fatalf("loop in open: %v", err)
	}
	if in != nil {
		t.Fatal("instance returned after a failed open")
	}
}

func TestSandbox(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "granted.txt")
	os.WriteFile(file, []byte("hello"), 0o644)
	t.Setenv("HOME", "/home/secret")
	probe := func(sb core.Sandbox) string {
		src := loadEnv(t, "faultgo.wasm", map[string]any{"fault": "probe", "file": file}, sb)
		obs, err := startEnv(t, src).Reset(1)
		if err != nil {
			t.Fatal(err)
		}
		return obs[0].Text
	}
	closed := probe(core.Sandbox{})
	for _, want := range []string{"read=error: ", "write=error: ", `home=""`, "now=1640995200"} {
		if !strings.Contains(closed, want) {
			t.Errorf("default sandbox: %q lacks %q", closed, want)
		}
	}
	granted := probe(core.Sandbox{ReadOnlyDirs: []string{dir}})
	for _, want := range []string{"read=ok: hello", "write=error: ", `home=""`} {
		if !strings.Contains(granted, want) {
			t.Errorf("read-only dir: %q lacks %q", granted, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "written")); err == nil {
		t.Error("the guest wrote into a read-only directory")
	}
}

func TestGuestOutputLoggedAndRateLimited(t *testing.T) {
	src := loadEnv(t, "faultgo.wasm", map[string]any{"fault": "print"}, core.Sandbox{})
	env := startEnv(t, src)
	before := strings.Count(logBuf.String(), "faultgo line")
	env.Reset(1)
	if _, err := env.Step([]core.Action{{}, {}}); err != nil {
		t.Fatal(err)
	}
	src.Close()
	out := logBuf.String()
	logged := strings.Count(out, "faultgo line") - before
	if logged < 40 || logged > 45 {
		t.Errorf("logged %d of 1000 lines, want about the burst of 40", logged)
	}
	if !strings.Contains(out, `msg="wasm faultgo.wasm: faultgo line 0"`) || !strings.Contains(out, "module=faultgo.wasm stream=stdout") {
		t.Errorf("lines not prefixed with the module name:\n%s", clip([]byte(out), 400))
	}
	if !strings.Contains(out, "suppressed 9") || !strings.Contains(out, "lines of guest output") {
		t.Errorf("no suppression note in the log")
	}
}

func TestRewardConcurrentAndFaults(t *testing.T) {
	ctx := context.Background()
	rf, err := testLoad.LoadRewardFunc(ctx, core.SourceRef{Path: mod("faultgo.wasm")})
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	if rf.Name() != "faultgo.return" || !reflect.DeepEqual(rf.Components(), []string{"quality"}) {
		t.Fatalf("reward %q %v", rf.Name(), rf.Components())
	}
	// A reward that declares no metrics has none; one that does has them
	// through the spec's "reward.metrics".
	if got := core.RequiredMetricsOf(rf); got != nil {
		t.Fatalf("required metrics %v, want none", got)
	}
	needs, err := testLoad.LoadRewardFunc(ctx, core.SourceRef{Path: mod("faultgo.wasm"), Params: map[string]any{"needs": []any{"return", "makespan_s"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer needs.Close()
	if got := core.RequiredMetricsOf(needs); !reflect.DeepEqual(got, []string{"return", "makespan_s"}) {
		t.Fatalf("required metrics %v, want [return makespan_s] as the module declares", got)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				ep := &core.Episode{Env: "x", Steps: i, AgentReturns: []float64{float64(g), float64(i)}, Artifacts: map[string][]byte{"a": {1}}}
				c, m, err := rf.Score(ep)
				if err != nil {
					errs <- err
					return
				}
				if c["quality"] != float64(g+i) || m["steps"] != float64(i) {
					errs <- errors.New("wrong score")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rf.mu.Lock()
	idle := len(rf.idle)
	rf.mu.Unlock()
	if idle < 1 || idle > maxIdle() {
		t.Errorf("%d idle instances", idle)
	}
	bad, err := testLoad.LoadRewardFunc(ctx, core.SourceRef{Path: mod("faultgo.wasm"), Params: map[string]any{"fault": "panic"}})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	for range 2 {
		_, _, err := bad.Score(&core.Episode{})
		if err == nil || !strings.Contains(err.Error(), "score: panic: faultgo: deliberate panic (at main.misbehave main.go:") {
			t.Fatalf("panicking reward: %v", err)
		}
	}
	// Through the registered loader.
	r, err := core.LoadReward(ctx, core.SourceRef{Scheme: "wasm", Path: mod("faultgo.wasm")})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, err := r.Score(&core.Episode{AgentReturns: []float64{2}}); err != nil || c["quality"] != 2 {
		t.Fatalf("registered loader: %v %v", c, err)
	}
}

// A second loader on the same cache directory (as a second process would
// be) finds the compiled code on disk; two loaders compiling into an empty
// directory at once both succeed.
func TestCompilationCacheOnDisk(t *testing.T) {
	needC(t)
	dir := t.TempDir()
	ctx := context.Background()
	load := func() time.Duration {
		l := NewLoader(Options{CacheDir: dir})
		defer l.Close(ctx)
		src, err := l.loadEnvSource(ctx, core.SourceRef{Path: mod("notes.wasm")})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		if l.cacheDirInUse() != dir {
			t.Fatalf("cache dir %q", l.cacheDirInUse())
		}
		return src.compileDuration()
	}
	cold := load()
	entries, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if len(entries) == 0 {
		t.Fatal("no cache entries written")
	}
	warm := load()
	if testenv.Timing() && warm*3 > cold {
		t.Errorf("compile from the disk cache took %v, cold %v", warm, cold)
	}
	t.Logf("cold compile %v, from disk cache %v", cold, warm)

	shared := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := NewLoader(Options{CacheDir: shared})
			defer l.Close(ctx)
			src, err := l.loadEnvSource(ctx, core.SourceRef{Path: mod("matrix.wasm")})
			if err == nil {
				_, err = startEnv(t, src).Reset(1)
				src.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestResolveCacheDir(t *testing.T) {
	t.Setenv(CacheDirEnv, "/tmp/x")
	if got := resolveCacheDir(""); got != "/tmp/x" {
		t.Errorf("env var: %q", got)
	}
	if got := resolveCacheDir("/a"); got != "/a" {
		t.Errorf("explicit: %q", got)
	}
	t.Setenv(CacheDirEnv, "off")
	if got := resolveCacheDir(""); got != "" {
		t.Errorf("off: %q", got)
	}
	t.Setenv(CacheDirEnv, "")
	base, _ := os.UserCacheDir()
	if got := resolveCacheDir(""); got != filepath.Join(base, "troupe", "wazero") {
		t.Errorf("default: %q", got)
	}
}

func TestInspect(t *testing.T) {
	needC(t)
	ctx := context.Background()
	info, err := Inspect(ctx, mod("faultgo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if info.ABIVersion != 1 || info.Env == nil || info.Env.Name != "faultgo" || info.Reward == nil || info.Reward.Name != "faultgo.return" {
		t.Fatalf("info %+v", info)
	}
	if !slices.Contains(info.Imports, "wasi_snapshot_preview1.fd_write") || !slices.Contains(info.Exports, "troupe_step") || info.Size == 0 || len(info.SHA256) != 64 {
		t.Fatalf("imports %v exports %v size %d", info.Imports, info.Exports, info.Size)
	}
	info, err = Inspect(ctx, mod("matrix.wasm"))
	if err != nil || info.Env.NumAgents() != 2 || !reflect.DeepEqual(info.Capabilities, []string{"truncate"}) || info.Reward != nil {
		t.Fatalf("matrix: %+v %v", info, err)
	}
}

// Through core.LoadEnv and the registered "wasm" loader.
func TestRegisteredLoader(t *testing.T) {
	needC(t)
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "wasm", Path: mod("matrix.wasm")})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	env, err := src.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.Reset(0); err != nil {
		t.Fatal(err)
	}
	if DefaultLoader().cacheDirInUse() != filepath.Join(modDir, "cache") {
		t.Errorf("default loader ignores $%s: %q", CacheDirEnv, DefaultLoader().cacheDirInUse())
	}
}
