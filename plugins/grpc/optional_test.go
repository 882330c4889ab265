package grpcplugin

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/internal/testenv"
	"github.com/troupe-dev/troupe/internal/testplugins/grpc/counter"
	pb "github.com/troupe-dev/troupe/plugins/grpc/proto"
)

// The spec of the env Open returns declares exactly the optional
// interfaces that the plugin's env implements, and the runtime finds
// those and no others.
func TestOptionalInterfacesDeclared(t *testing.T) {
	noLeftovers(t)
	for _, tc := range []struct {
		path string
		caps core.Capabilities
	}{
		{bin.example, 0},
		{bin.lbf, core.CapTruncate | core.CapBaseline}, // lbf offers greedy_food
		{bin.faulty, core.CapTruncate | core.CapPrompt | core.CapSimulate | core.CapBaseline},
	} {
		src := loadEnv(t, ref(tc.path, nil))
		env := open(t, src)
		if got := src.Spec().Capabilities; got != tc.caps || env.Spec().Capabilities != got {
			t.Errorf("%s: source declares %v, instance %v; want %v", tc.path, got, env.Spec().Capabilities, tc.caps)
		}
		_, truncate := core.TruncaterOf(env)
		_, prompt := core.PrompterOf(env)
		_, sim := core.SimulatorOf(env)
		_, bas := core.BaselineProviderOf(env)
		got := [4]bool{truncate, prompt, sim, bas}
		want := [4]bool{tc.caps.Has(core.CapTruncate), tc.caps.Has(core.CapPrompt), tc.caps.Has(core.CapSimulate), tc.caps.Has(core.CapBaseline)}
		if got != want {
			t.Errorf("%s: found Truncater, Prompter, Simulator, BaselineProvider %v, want %v", tc.path, got, want)
		}
	}
}

// TestConformanceOptional plays the counter env in-process and in the
// faulty plugin and requires the same prompts, baseline decisions and
// steps, with text and usage carried in the actions (envtest), and the
// same simulated completions when the plugin's generator is seeded as
// SimulateSeedStream says.
func TestConformanceOptional(t *testing.T) {
	noLeftovers(t)
	params := map[string]any{"steps": 12}
	nativeSrc, err := core.NewEnvSource(func(p map[string]any) (core.Env, error) {
		e, err := counter.New(p)
		if err != nil {
			return nil, err
		}
		return e, nil
	}, params)
	if err != nil {
		t.Fatal(err)
	}
	pluggedSrc := loadEnv(t, ref(bin.faulty, params))
	if got := pluggedSrc.Spec().ReferenceBaseline; got != "ones" {
		t.Errorf("reference baseline %q, want ones (from the spec JSON)", got)
	}
	st := envtest.SameTrajectories(t, nativeSrc, pluggedSrc, 1, 2, 3, 4, 5, 6, 7, 8)
	if st.Baseline < 2 || st.Truncations < 1 || st.Ended < 5 {
		t.Errorf("%+v: too few to compare", st)
	}
	native, err := counter.New(params)
	if err != nil {
		t.Fatal(err)
	}
	plugged := open(t, pluggedSrc)
	if _, err := plugged.(core.BaselineProvider).Baseline("nope"); err == nil || !strings.Contains(err.Error(), `no baseline "nope"`) {
		t.Errorf("unknown baseline: err = %v", err)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		if _, err := native.Reset(seed); err != nil {
			t.Fatal(err)
		}
		if _, err := plugged.Reset(seed); err != nil {
			t.Fatal(err)
		}
		req := native.Prompt(0, 1)
		hostRNG := rand.New(rand.NewPCG(seed, 7))
		nativeRNG := rand.New(rand.NewPCG(seed, 7))
		nc, err1 := native.Simulate(0, 1, req, rand.New(rand.NewPCG(nativeRNG.Uint64(), SimulateSeedStream)))
		pc, err2 := plugged.(core.Simulator).Simulate(0, 1, req, hostRNG)
		if err1 != nil || err2 != nil || nc != pc {
			t.Fatalf("seed %d: simulate %+v, %v vs %+v, %v", seed, nc, err1, pc, err2)
		}
	}
	// A simulator error of the env's own reaches the caller.
	if _, err := plugged.(core.Simulator).Simulate(0, 0, core.ChatRequest{}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "needs no text") {
		t.Errorf("Simulate of a decision without text: err = %v", err)
	}
	// A bad decision index is refused by the plugin; Prompt then falls back.
	if req := plugged.(core.Prompter).Prompt(1, 9); req.Agent != 1 || req.Decision != "" || req.Messages != nil {
		t.Errorf("Prompt with a bad decision = %+v", req)
	}
}

// A baseline whose plugin process dies reports the crash, naming the call,
// instead of deciding 0 for every agent; the next Reset starts a new
// process.
func TestBaselinePluginExits(t *testing.T) {
	noLeftovers(t)
	env := open(t, loadEnv(t, ref(bin.faulty, map[string]any{"exit_in_act": true, "exit_code": 5})))
	b, err := env.(core.BaselineProvider).Baseline("ones")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := env.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	pid := pidOf(env)
	d, err := b.Act(obs)
	if !errors.Is(err, ErrExited) || d != nil {
		t.Fatalf("Act: %v, err = %v, want no decisions and ErrExited", d, err)
	}
	for _, w := range []string{bin.faulty, fmt.Sprintf("pid %d", pid), "Act", "exit status 5", "exiting on purpose in Act"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	if _, err := b.Act(obs); err == nil || !strings.Contains(err.Error(), "Reset starts a new one") {
		t.Errorf("Act after the crash: err = %v", err)
	}
	if _, err := env.Step(joint(0, 0)); err == nil || !strings.Contains(err.Error(), "Reset starts a new one") {
		t.Errorf("Step after the crash: err = %v", err)
	}
	if alive(pid) {
		t.Errorf("crashed plugin %d still running", pid)
	}
	if _, err := env.Reset(2); err != nil {
		t.Fatalf("Reset after the crash: %v", err)
	}
	if pidOf(env) == pid {
		t.Error("Reset did not start a new process")
	}
}

// A plugin whose own value cannot be encoded (a NaN temperature in its
// prompt) has that reported as a failure of the call, and keeps its process:
// the host neither waits for an exit nor stops a healthy plugin.
func TestPluginEncodingFailureKeepsProcess(t *testing.T) {
	noLeftovers(t)
	env := open(t, loadEnv(t, ref(bin.faulty, map[string]any{"nan_prompt": true})))
	if _, err := env.Reset(1); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(env)
	start := time.Now()
	// Prompt has no error result: it logs the failure and returns a request
	// with only Agent and Decision.
	if req := env.(core.Prompter).Prompt(0, 1); len(req.Messages) != 0 || req.Decision != "one" {
		t.Fatalf("Prompt returned %+v", req)
	}
	if d := time.Since(start); testenv.Timing() && d > 900*time.Millisecond {
		t.Errorf("the failure took %v: the host waited for an exit", d)
	}
	if !alive(pid) || pidOf(env) != pid {
		t.Fatal("the healthy plugin process was stopped")
	}
	if _, err := env.Step(joint(0, 0)); err != nil {
		t.Fatalf("Step after the failure: %v", err)
	}
}

// undeclaredPrompter is the counter env with core.CapPrompt left out of
// its spec: it implements core.Prompter without declaring it.
type undeclaredPrompter struct{ *counter.Env }

func (e undeclaredPrompter) Spec() core.EnvSpec {
	s := e.Env.Spec()
	s.Capabilities &^= core.CapPrompt
	return s
}

// The serve kit refuses to open a Go env that implements an optional
// interface without declaring it, naming the interface and the capability,
// instead of serving it without its prompts; a call of an interface the
// env does not declare says so.
func TestServeUndeclaredInterface(t *testing.T) {
	ctx := context.Background()
	s := &envServer{factory: func(p map[string]any) (core.Env, error) {
		e, err := counter.New(p)
		return undeclaredPrompter{e}, err
	}}
	_, err := s.Open(ctx, &pb.OpenRequest{})
	want := "env counter implements core.Prompter but its spec does not declare core.CapPrompt; add it to EnvSpec.Capabilities"
	if status.Code(err) != codes.Unknown || status.Convert(err).Message() != want {
		t.Fatalf("Open: %v; want code Unknown and %q", err, want)
	}
	s = &envServer{factory: func(p map[string]any) (core.Env, error) { return lbf.New(p) }}
	if _, err := s.Open(ctx, &pb.OpenRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Prompt(ctx, &pb.PromptRequest{})
	want = "the env's spec does not declare core.CapPrompt (core.Prompter)"
	if status.Code(err) != codes.Unimplemented || status.Convert(err).Message() != want {
		t.Fatalf("Prompt: %v; want code Unimplemented and %q", err, want)
	}
}
