package wasmabi

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

// The host decodes what a guest returns (observations, step results, state,
// decisions, scores, error messages) and a guest decodes what the host
// sends (joint actions, baseline calls, episodes): to each side the other's
// bytes are untrusted. Every decoder must return an error rather than
// panic, and what it accepts must survive encoding: decode(encode(x))
// encodes to the same bytes again.

// fuzzShape turns three fuzzed bytes into a small shape.
func fuzzShape(agents, obsSize, decisions uint8) Shape {
	return Shape{Agents: int(agents % 6), ObsSize: int(obsSize % 9), Decisions: int(decisions % 20)}
}

// FuzzDecodeStepResult decodes a step reply as the host does, with and
// without a slab, and checks that both agree, that the result fits the
// shape and that re-encoding it is stable.
func FuzzDecodeStepResult(f *testing.F) {
	step := sampleStep()
	b, err := AppendStepResult(nil, &step, shape)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, uint8(shape.Agents), uint8(shape.ObsSize), uint8(shape.Decisions))
	small := core.StepResult{Observations: []core.Observation{{Features: []float64{0.5}, Mask: []bool{true, false, true}}}, Truncated: true}
	sh := Shape{Agents: 1, ObsSize: 1, Decisions: 3}
	b, err = AppendStepResult(nil, &small, sh)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, uint8(1), uint8(1), uint8(3))
	f.Add([]byte{}, uint8(1), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, agents, obsSize, decisions uint8) {
		sh := fuzzShape(agents, obsSize, decisions)
		res, err := DecodeStepResult(b, sh)
		var slab Slab
		res2, err2 := slab.DecodeStepResult(b, sh)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("with a slab err = %v, without %v", err2, err)
		}
		if err != nil {
			return
		}
		enc, err := AppendStepResult(nil, &res, sh)
		if err != nil {
			t.Fatalf("a decoded step result does not encode (it does not fit %+v): %v", sh, err)
		}
		enc2, err := AppendStepResult(nil, &res2, sh)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("the slab's decoding differs: %v", err)
		}
		again, err := DecodeStepResult(enc, sh)
		if err != nil {
			t.Fatalf("re-encoded step result does not decode: %v", err)
		}
		enc3, _ := AppendStepResult(nil, &again, sh)
		if !bytes.Equal(enc, enc3) {
			t.Fatalf("encoding is not stable:\n%x\n%x", enc, enc3)
		}
	})
}

// FuzzDecodeActions decodes a joint action as a guest does: the encoding
// has one form, so what decodes must encode to the very same bytes.
func FuzzDecodeActions(f *testing.F) {
	f.Add(AppendActions(nil, []core.Action{
		{Decision: 3, Text: "draft", Usage: core.Usage{PromptTokens: 10, CompletionTokens: 20, Latency: 1500, Backend: "sim"}},
		{Decision: -1},
	}))
	f.Add(AppendActions(nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		acts, err := DecodeActions(b, nil)
		if err != nil {
			return
		}
		if enc := AppendActions(nil, acts); !bytes.Equal(enc, b) || ActionsSize(acts) != len(b) {
			t.Fatalf("decoded %+v re-encodes to %x (size %d), not the input %x", acts, enc, ActionsSize(acts), b)
		}
	})
}

// FuzzDecodeReplies runs the other decoders on the same bytes: state,
// decisions, score, episode, baseline call and error message.
func FuzzDecodeReplies(f *testing.F) {
	step := sampleStep()
	call, err := AppendBaselineCall(nil, "sop", step.Observations, shape)
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range [][]byte{
		AppendFloats(nil, []float64{1, -2, 3.5}),
		AppendDecisions(nil, []int{2, 0, -1}),
		AppendScore(nil, map[string]float64{"quality": 0.75, "speed": 0.5}, map[string]float64{"tokens": 100}),
		AppendEpisode(nil, sampleEpisode()),
		call,
		AppendError(nil, "boom"),
	} {
		f.Add(b, uint8(shape.Agents), uint8(shape.ObsSize), uint8(shape.Decisions))
	}
	f.Fuzz(func(t *testing.T, b []byte, agents, obsSize, decisions uint8) {
		if v, err := DecodeFloats(b, -1); err == nil && !bytes.Equal(AppendFloats(nil, v), b) {
			t.Errorf("state %v does not re-encode to the input", v)
		}
		if len(b) >= 4 {
			want := int(binary.LittleEndian.Uint32(b))
			if d, err := DecodeDecisions(b, want); err == nil && !bytes.Equal(AppendDecisions(nil, d), b) {
				t.Errorf("decisions %v do not re-encode to the input", d)
			}
		}
		if c, m, err := DecodeScore(b); err == nil {
			enc := AppendScore(nil, c, m)
			c2, m2, err := DecodeScore(enc)
			if err != nil || !bytes.Equal(AppendScore(nil, c2, m2), enc) {
				t.Errorf("score %v %v: encoding is not stable (%v)", c, m, err)
			}
		}
		if ep, err := DecodeEpisode(b); err == nil {
			enc := AppendEpisode(nil, ep)
			ep2, err := DecodeEpisode(enc)
			if err != nil || !bytes.Equal(AppendEpisode(nil, ep2), enc) {
				t.Errorf("episode %+v: encoding is not stable (%v)", ep, err)
			}
		}
		sh := fuzzShape(agents, obsSize, decisions)
		if name, obs, err := DecodeBaselineCall(b, sh); err == nil {
			enc, err := AppendBaselineCall(nil, name, obs, sh)
			if err != nil {
				t.Fatalf("a decoded baseline call does not encode: %v", err)
			}
			name2, obs2, err := DecodeBaselineCall(enc, sh)
			if err != nil {
				t.Fatal(err)
			}
			if enc2, _ := AppendBaselineCall(nil, name2, obs2, sh); !bytes.Equal(enc, enc2) {
				t.Errorf("baseline call %q: encoding is not stable", name)
			}
		}
		if msg := DecodeError(b); len(msg) > MaxErrorLen {
			t.Errorf("error message of %d bytes, more than MaxErrorLen", len(msg))
		}
	})
}
