package grpcplugin

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/testplugins/grpc/counter"
)

// The value Open returns implements exactly the optional interfaces that the
// plugin's env implements.
func TestOptionalInterfacesExposed(t *testing.T) {
	noLeftovers(t)
	for _, tc := range []struct {
		path                       string
		truncate, prompt, sim, bas bool
	}{
		{bin.example, false, false, false, false},
		{bin.lbf, true, false, false, false},
		{bin.faulty, true, true, true, true},
	} {
		env := open(t, loadEnv(t, ref(tc.path, nil)))
		_, truncate := env.(core.Truncater)
		_, prompt := env.(core.Prompter)
		_, sim := env.(core.Simulator)
		_, bas := env.(core.BaselineProvider)
		if truncate != tc.truncate || prompt != tc.prompt || sim != tc.sim || bas != tc.bas {
			t.Errorf("%s: Truncater %v Prompter %v Simulator %v BaselineProvider %v, want %v %v %v %v",
				tc.path, truncate, prompt, sim, bas, tc.truncate, tc.prompt, tc.sim, tc.bas)
		}
	}
	for c := capSet(0); c < 16; c++ {
		env := c.wrap(&remoteEnv{})
		_, truncate := env.(core.Truncater)
		_, prompt := env.(core.Prompter)
		_, sim := env.(core.Simulator)
		_, bas := env.(core.BaselineProvider)
		if truncate != (c&capTruncate != 0) || prompt != (c&capPrompt != 0) || sim != (c&capSimulate != 0) || bas != (c&capBaseline != 0) {
			t.Errorf("wrap(%v) implements T %v P %v S %v B %v", c, truncate, prompt, sim, bas)
		}
	}
}

// TestConformanceOptional runs the counter env in-process and in the faulty
// plugin and requires the same prompts, simulated completions (the plugin's
// generator seeded as SimulateSeedStream says), baseline decisions and
// steps, with text and usage carried in the actions.
func TestConformanceOptional(t *testing.T) {
	noLeftovers(t)
	params := map[string]any{"steps": 12}
	native, err := counter.New(params)
	if err != nil {
		t.Fatal(err)
	}
	plugged := open(t, loadEnv(t, ref(bin.faulty, params)))
	spec := native.Spec()
	if !reflect.DeepEqual(spec, plugged.Spec()) {
		t.Fatalf("spec %+v vs %+v", spec, plugged.Spec())
	}
	nb := map[string]core.Baseline{}
	pb := map[string]core.Baseline{}
	for _, name := range spec.Baselines {
		if nb[name], err = native.Baseline(name); err != nil {
			t.Fatal(err)
		}
		if pb[name], err = plugged.(core.BaselineProvider).Baseline(name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := plugged.(core.BaselineProvider).Baseline("nope"); err == nil || !strings.Contains(err.Error(), `no baseline "nope"`) {
		t.Errorf("unknown baseline: err = %v", err)
	}
	for seed := uint64(1); seed <= 6; seed++ {
		no, err1 := native.Reset(seed)
		po, err2 := plugged.Reset(seed)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		sameObs(t, "reset", no, po)
		hostRNG := rand.New(rand.NewPCG(seed, 7))
		nativeRNG := rand.New(rand.NewPCG(seed, 7))
		for step := 0; ; step++ {
			at := fmt.Sprintf("seed %d step %d", seed, step)
			name := spec.Baselines[step%len(spec.Baselines)]
			nd, err1 := nb[name].Act(no)
			pd, err2 := pb[name].Act(po)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(nd, pd) {
				t.Fatalf("%s: baseline %s: %v, %v vs %v, %v", at, name, nd, err1, pd, err2)
			}
			actions := make([]core.Action, len(nd))
			for i, d := range nd {
				actions[i].Decision = d
				if !spec.Decisions[d].NeedsText {
					continue
				}
				nreq, preq := native.Prompt(i, d), plugged.(core.Prompter).Prompt(i, d)
				if !reflect.DeepEqual(nreq, preq) {
					t.Fatalf("%s: prompt %+v vs %+v", at, nreq, preq)
				}
				nc, err1 := native.Simulate(i, d, nreq, rand.New(rand.NewPCG(nativeRNG.Uint64(), SimulateSeedStream)))
				pc, err2 := plugged.(core.Simulator).Simulate(i, d, preq, hostRNG)
				if err1 != nil || err2 != nil || nc != pc {
					t.Fatalf("%s: simulate %+v, %v vs %+v, %v", at, nc, err1, pc, err2)
				}
				actions[i].Text = pc.Text
				actions[i].Usage = core.Usage{PromptTokens: pc.PromptTokens, CompletionTokens: pc.CompletionTokens, Latency: time.Duration(step) * time.Millisecond, Backend: "sim"}
			}
			nr, err1 := native.Step(actions)
			pr, err2 := plugged.Step(actions)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v / %v", at, err1, err2)
			}
			sameResult(t, at, nr, pr)
			if t.Failed() {
				return
			}
			if nr.Done() {
				if string(pr.Artifacts["total.txt"]) != string(nr.Artifacts["total.txt"]) || len(pr.Artifacts) != 2 {
					t.Errorf("%s: artifacts %q", at, pr.Artifacts)
				}
				break
			}
			no, po = nr.Observations, pr.Observations
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
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("the failure took %v: the host waited for an exit", d)
	}
	if !alive(pid) || pidOf(env) != pid {
		t.Fatal("the healthy plugin process was stopped")
	}
	if _, err := env.Step(joint(0, 0)); err != nil {
		t.Fatalf("Step after the failure: %v", err)
	}
}
