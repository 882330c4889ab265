package safetensors

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzRead reads arbitrary bytes as a safetensors file (a checkpoint is
// untrusted input: `troupe eval --policy FILE` opens whatever it is given).
// Read must return an error rather than panic, and what it accepts must
// round-trip: Marshal writes it back, Read gives the same tensors and
// metadata, and Marshal is then a fixed point.
func FuzzRead(f *testing.F) {
	seed, err := Marshal(map[string]Tensor{
		"w":     FromFloat64([]int{2, 3}, []float64{1, 2, 3, 4, 5, 6}),
		"b":     FromFloat32([]int{3}, []float32{0.5, -1, 2}),
		"step":  FromInt64(nil, []int64{7}),
		"empty": {DType: "U8", Shape: []int{0}, Data: []byte{}},
	}, map[string]string{"format": "troupe-policy", "version": "1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"))
	f.Add([]byte("\x10\x00\x00\x00\x00\x00\x00\x00{\"__metadata__\":}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tensors, meta, err := Read(b)
		if err != nil {
			return
		}
		for name, tn := range tensors {
			if err := tn.check(); err != nil {
				t.Fatalf("Read accepted tensor %q that does not check: %v", name, err)
			}
		}
		enc, err := Marshal(tensors, meta)
		if err != nil {
			t.Fatalf("Read accepted what Marshal rejects: %v", err)
		}
		tensors2, meta2, err := Read(enc)
		if err != nil {
			t.Fatalf("Marshal wrote what Read rejects: %v", err)
		}
		if !reflect.DeepEqual(tensors, tensors2) {
			t.Fatalf("tensors changed in a round trip:\n%v\n%v", tensors, tensors2)
		}
		if len(meta) != len(meta2) || (len(meta) > 0 && !reflect.DeepEqual(meta, meta2)) {
			t.Fatalf("metadata changed in a round trip: %v, %v", meta, meta2)
		}
		enc2, err := Marshal(tensors2, meta2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("Marshal is not a fixed point (%v)", err)
		}
	})
}
