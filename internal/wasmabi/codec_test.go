package wasmabi

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
)

var shape = Shape{Agents: 2, ObsSize: 3, Decisions: 10}

func sampleStep() core.StepResult {
	return core.StepResult{
		Observations: []core.Observation{
			{Features: []float64{1, -2.5, math.Inf(1)}, Text: "héllo", Mask: []bool{true, false, false, true, false, false, false, false, true, true}},
			{Features: []float64{0, math.SmallestNonzeroFloat64, 3}},
		},
		Rewards:    []float64{0.5, -1},
		Terminated: true,
		Metrics:    map[string]float64{"return": 3, "makespan_s": 12.5},
		Artifacts:  map[string][]byte{"doc.md": []byte("# hi\n"), "empty": {}},
	}
}

func TestActionsRoundTrip(t *testing.T) {
	in := []core.Action{
		{Decision: 3, Text: "draft", Usage: core.Usage{PromptTokens: 10, CompletionTokens: 20, Latency: 1500 * time.Millisecond, Backend: "sim"}},
		{Decision: -1},
		{Decision: 0, Usage: core.Usage{Backend: "custom-backend"}},
	}
	b := AppendActions(nil, in)
	if len(b) != ActionsSize(in) {
		t.Fatalf("ActionsSize = %d, encoded %d bytes", ActionsSize(in), len(b))
	}
	out, err := DecodeActions(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
	// The destination is reused.
	out2, err := DecodeActions(b, out)
	if err != nil || &out2[0] != &out[0] {
		t.Fatalf("dst not reused (err %v)", err)
	}
}

func TestStepResultRoundTrip(t *testing.T) {
	in := sampleStep()
	b, err := AppendStepResult(nil, &in, shape)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeStepResult(b, shape)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
	// Same input, same bytes (maps are sorted).
	b2, _ := AppendStepResult(nil, &in, shape)
	if string(b) != string(b2) {
		t.Fatal("encoding is not deterministic")
	}
}

func TestStepResultShapeErrors(t *testing.T) {
	in := sampleStep()
	if _, err := AppendStepResult(nil, &in, Shape{Agents: 2, ObsSize: 4, Decisions: 10}); err == nil || !strings.Contains(err.Error(), "obs_size is 4") {
		t.Errorf("wrong obs size: %v", err)
	}
	if _, err := AppendStepResult(nil, &in, Shape{Agents: 3, ObsSize: 3, Decisions: 10}); err == nil || !strings.Contains(err.Error(), "for 3 agents") {
		t.Errorf("wrong agent count: %v", err)
	}
	b, _ := AppendStepResult(nil, &in, shape)
	if _, err := DecodeStepResult(b, Shape{Agents: 2, ObsSize: 3, Decisions: 9}); err == nil || !strings.Contains(err.Error(), "10 decisions, the spec has 9") {
		t.Errorf("decode with wrong decisions: %v", err)
	}
	if _, err := DecodeStepResult(append(b, 0), shape); err == nil || !strings.Contains(err.Error(), "1 unexpected bytes") {
		t.Errorf("trailing byte: %v", err)
	}
}

// Every truncation and random corruption of a valid reply decodes to an
// error or a value, never a panic, and truncations are always errors.
func TestDecodeMalformed(t *testing.T) {
	in := sampleStep()
	b, _ := AppendStepResult(nil, &in, shape)
	for n := range len(b) {
		if _, err := DecodeStepResult(b[:n], shape); err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, len(b))
		}
	}
	ep := sampleEpisode()
	eb := AppendEpisode(nil, ep)
	for n := range len(eb) {
		if _, err := DecodeEpisode(eb[:n]); err == nil {
			t.Fatalf("episode truncated to %d bytes: no error", n)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		c := append([]byte(nil), b...)
		for range 1 + rng.IntN(4) {
			c[rng.IntN(len(c))] = byte(rng.Uint32())
		}
		DecodeStepResult(c, shape)
		DecodeActions(c, nil)
		DecodeEpisode(c)
		DecodeScore(c)
		DecodeFloats(c, -1)
		DecodeBaselineCall(c, shape)
	}
}

func TestHugeCountsRejected(t *testing.T) {
	b := AppendU32(nil, 0xFFFFFFFF)
	if _, err := DecodeActions(b, nil); err == nil || !strings.Contains(err.Error(), "agent count 4294967295") {
		t.Errorf("actions: %v", err)
	}
	if _, err := DecodeFloats(b, -1); err == nil {
		t.Error("floats: no error")
	}
}

func sampleEpisode() *core.Episode {
	return &core.Episode{
		Env: "lbf", Seed: 1<<63 + 5, Steps: 17,
		AgentReturns: []float64{1, 2.5},
		Metrics:      map[string]float64{"tokens": 100, "return": 3.5},
		Artifacts:    map[string][]byte{"a.txt": []byte("x")},
		AgentUsage:   []core.Usage{{PromptTokens: 1, CompletionTokens: 2, Latency: time.Second, Backend: "sim"}, {}},
		Terminated:   true, BudgetStopped: true,
	}
}

func TestEpisodeAndScoreRoundTrip(t *testing.T) {
	ep := sampleEpisode()
	got, err := DecodeEpisode(AppendEpisode(nil, ep))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ep, got) {
		t.Fatalf("episode:\n got %+v\nwant %+v", got, ep)
	}
	c, m, err := DecodeScore(AppendScore(nil, map[string]float64{"quality": 0.75}, nil))
	if err != nil || c["quality"] != 0.75 || m != nil {
		t.Fatalf("score: %v %v %v", c, m, err)
	}
}

func TestDecisionsStateBaselineError(t *testing.T) {
	d, err := DecodeDecisions(AppendDecisions(nil, []int{2, 0}), 2)
	if err != nil || !reflect.DeepEqual(d, []int{2, 0}) {
		t.Fatalf("decisions %v %v", d, err)
	}
	if _, err := DecodeDecisions(AppendDecisions(nil, []int{2}), 2); err == nil {
		t.Error("one decision for two agents: no error")
	}
	s, err := DecodeFloats(AppendFloats(nil, []float64{1, 2}), 2)
	if err != nil || !reflect.DeepEqual(s, []float64{1, 2}) {
		t.Fatalf("state %v %v", s, err)
	}
	if _, err := DecodeFloats(AppendFloats(nil, []float64{1}), 2); err == nil {
		t.Error("state of wrong size: no error")
	}
	in := sampleStep()
	b, _ := AppendBaselineCall(nil, "sop", in.Observations, shape)
	name, obs, err := DecodeBaselineCall(b, shape)
	if err != nil || name != "sop" || !reflect.DeepEqual(obs, in.Observations) {
		t.Fatalf("baseline call %q %v", name, err)
	}
	if got := DecodeError(AppendError(nil, "boom")); got != "boom" {
		t.Errorf("error message %q", got)
	}
	if got := DecodeError([]byte{200, 0, 0, 0, 'x'}); !strings.Contains(got, "beyond") {
		t.Errorf("bad error message %q", got)
	}
}

func TestMaskPaddingBitsRejected(t *testing.T) {
	obs := []core.Observation{{Features: []float64{0}, Mask: []bool{true, true, true}}}
	sh := Shape{Agents: 1, ObsSize: 1, Decisions: 3}
	b, _ := AppendObservations(nil, obs, sh)
	maskAt := 12 + 4 + 8
	b[maskAt] |= 0x80
	if _, err := DecodeObservations(b, sh); err == nil || !strings.Contains(err.Error(), "mask bits set beyond") {
		t.Fatalf("padding bits: %v", err)
	}
}

func TestMarkerVersion(t *testing.T) {
	for name, want := range map[string]int{"troupe_abi_v1": 1, "troupe_abi_v12": 12, "troupe_abi_v0": 0, "troupe_abi_v01": 0, "troupe_abi_v": 0, "troupe_abi_vx": 0, "other": 0} {
		got, ok := MarkerVersion(name)
		if got != want || ok != (want > 0) {
			t.Errorf("MarkerVersion(%q) = %d, %v", name, got, ok)
		}
	}
}

func BenchmarkDecodeStepResult(b *testing.B) {
	in := sampleStep()
	in.Metrics, in.Artifacts = nil, nil
	buf, _ := AppendStepResult(nil, &in, shape)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeStepResult(buf, shape); err != nil {
			b.Fatal(err)
		}
	}
}

// A guest encodes a step reply on every step, and in a Go guest an
// allocation costs more than the encoding; a reply without artifacts (most
// steps) into a buffer with room must allocate nothing.
func TestAppendStepResultAllocatesNothing(t *testing.T) {
	res := &core.StepResult{
		Observations: []core.Observation{{Features: []float64{1, 2}, Mask: []bool{true, false}}, {Features: []float64{3, 4}}},
		Rewards:      []float64{0.5, 0},
	}
	sh := Shape{Agents: 2, ObsSize: 2, Decisions: 2}
	buf := make([]byte, 0, 4096)
	var err error
	if n := testing.AllocsPerRun(1000, func() { buf, err = AppendStepResult(buf[:0], res, sh) }); n != 0 {
		t.Errorf("AppendStepResult without artifacts: %v allocations, want 0", n)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// repeatedPrefix returns the first "x: x:" in msg, or "".
func repeatedPrefix(msg string) string {
	parts := strings.Split(msg, ": ")
	for i := 1; i < len(parts); i++ {
		if parts[i] == parts[i-1] {
			return parts[i] + ": " + parts[i]
		}
	}
	return ""
}

// Every decoder names what it reads once: a trailing byte is reported as
// "step result: 1 unexpected bytes …", not "step result: step result: …".
func TestDecodeErrorsNameOnce(t *testing.T) {
	in := sampleStep()
	step, _ := AppendStepResult(nil, &in, shape)
	obs, _ := AppendObservations(nil, in.Observations, shape)
	call, _ := AppendBaselineCall(nil, "sop", in.Observations, shape)
	cases := map[string]func() error{
		"step result": func() error { _, err := DecodeStepResult(append(step, 0), shape); return err },
		"observations": func() error {
			_, err := DecodeObservations(append(obs, 0), shape)
			return err
		},
		"state":              func() error { _, err := DecodeFloats(append(AppendFloats(nil, []float64{1}), 0), 1); return err },
		"baseline decisions": func() error { _, err := DecodeDecisions(append(AppendDecisions(nil, []int{1}), 0), 1); return err },
		"baseline call":      func() error { _, _, err := DecodeBaselineCall(append(call, 0), shape); return err },
		"episode":            func() error { _, err := DecodeEpisode(append(AppendEpisode(nil, sampleEpisode()), 0)); return err },
		"score": func() error {
			_, _, err := DecodeScore(append(AppendScore(nil, map[string]float64{"q": 1}, nil), 0))
			return err
		},
	}
	for what, decode := range cases {
		err := decode()
		if err == nil || !strings.HasPrefix(err.Error(), what+": 1 unexpected bytes after byte ") {
			t.Errorf("%s with a trailing byte: %v; want %q first", what, err, what+": 1 unexpected bytes")
			continue
		}
		if r := repeatedPrefix(err.Error()); r != "" {
			t.Errorf("%s: %q repeats %q", what, err, r)
		}
	}
	if r := repeatedPrefix("step result: step result: 1 unexpected bytes"); r != "step result: step result" {
		t.Errorf("repeatedPrefix misses a doubled prefix: %q", r)
	}
}
