package wasmabi

import (
	"testing"
	"unsafe"

	"github.com/troupe-dev/troupe/core"
)

// TestSlabDecodesIndependentResults decodes the same reply many times
// through one slab (crossing several slab boundaries) and checks that
// every result is right and shares no memory with any other: writing into
// one result's features, rewards and masks changes no other result.
func TestSlabDecodesIndependentResults(t *testing.T) {
	shape := Shape{Agents: 3, ObsSize: 5, Decisions: 10}
	mask := []bool{true, false, true, true, false, false, true, false, true, true}
	res := core.StepResult{Rewards: []float64{1, 2, 3}}
	for i := range shape.Agents {
		res.Observations = append(res.Observations, core.Observation{Features: []float64{1, 2, 3, 4, float64(i)}, Mask: mask})
	}
	b, err := AppendStepResult(nil, &res, shape)
	if err != nil {
		t.Fatal(err)
	}
	var slab Slab
	var got []core.StepResult
	for range 500 {
		r, err := slab.DecodeStepResult(b, shape)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	regions := map[uintptr]int{}
	for k, r := range got {
		for i, o := range r.Observations {
			if o.Features[4] != float64(i) || len(o.Mask) != 10 || !o.Mask[0] || o.Mask[1] || !o.Mask[9] {
				t.Fatalf("result %d agent %d decoded as %+v", k, i, o)
			}
			if cap(o.Features) != 5 || cap(o.Mask) != 10 {
				t.Fatalf("result %d agent %d: capacities %d and %d let an append overwrite a neighbour", k, i, cap(o.Features), cap(o.Mask))
			}
		}
		if cap(r.Rewards) != 3 {
			t.Fatalf("result %d: rewards capacity %d", k, cap(r.Rewards))
		}
		// Scribble over this result; nothing else may change.
		for _, o := range r.Observations {
			regions[uintptr(unsafe.Pointer(&o.Features[0]))]++
			for j := range o.Features {
				o.Features[j] = -1
			}
			clear(o.Mask)
		}
		r.Rewards[0] = -1
	}
	for p, n := range regions {
		if n != 1 {
			t.Fatalf("features at %#x handed out %d times", p, n)
		}
	}
	fresh, _ := DecodeStepResult(b, shape)
	if fresh.Observations[2].Features[4] != 2 || !fresh.Observations[2].Mask[0] {
		t.Fatal("decoding without a slab sees the scribbles")
	}
}
