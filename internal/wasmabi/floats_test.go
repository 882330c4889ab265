package wasmabi

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestFloatsLayout checks both the byte-copy path and the portable path
// against the ABI's layout (little-endian IEEE 754), bit for bit, with
// NaN payloads, signed zeros and infinities.
func TestFloatsLayout(t *testing.T) {
	v := []float64{0, math.Copysign(0, -1), 1.5, -3.25e300, math.Inf(1), math.Inf(-1),
		math.Float64frombits(0x7ff8_0000_dead_beef), math.Float64frombits(0xfff0_0000_0000_0001), math.SmallestNonzeroFloat64}
	want := make([]byte, 8*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint64(want[8*i:], math.Float64bits(f))
	}
	defer func(le bool) { littleEndian = le }(littleEndian)
	for _, le := range []bool{true, false} {
		if le && !littleEndian {
			continue // the byte copy is only right on a little-endian host
		}
		littleEndian = le
		got := make([]byte, len(want)+3)
		putFloats(got[3:], v)
		if string(got[3:]) != string(want) {
			t.Fatalf("littleEndian=%v: putFloats wrote % x, want % x", le, got[3:], want)
		}
		back := make([]float64, len(v))
		getFloats(back, got[3:])
		for i := range v {
			if math.Float64bits(back[i]) != math.Float64bits(v[i]) {
				t.Errorf("littleEndian=%v: value %d read back as %#x, want %#x", le, i, math.Float64bits(back[i]), math.Float64bits(v[i]))
			}
		}
	}
}
