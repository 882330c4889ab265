package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	tensors := map[string]Tensor{
		"w":      FromFloat64([]int{2, 3}, []float64{1, -2, 3.5, math.Inf(1), math.Copysign(0, -1), 1e-300}),
		"b":      FromFloat32([]int{3}, []float32{0.5, -1, 2}),
		"step":   FromInt64([]int{}, []int64{-42}),
		"empty":  FromFloat64([]int{0, 4}, nil),
		"u":      {DType: "U8", Shape: []int{3}, Data: []byte{1, 2, 255}},
		"nested": FromFloat64([]int{1, 1, 1}, []float64{math.Pi}),
	}
	meta := map[string]string{"config": `{"a":1,"b":"<x>"}`, "format": "test"}
	b, err := Marshal(tensors, meta)
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint64(b); (8+n)%8 != 0 {
		t.Errorf("data section starts at %d, not 8-byte aligned", 8+n)
	}
	got, gotMeta, err := Read(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotMeta, meta) {
		t.Errorf("metadata = %v, want %v", gotMeta, meta)
	}
	if len(got) != len(tensors) {
		t.Fatalf("got %d tensors, want %d", len(got), len(tensors))
	}
	for name, want := range tensors {
		g := got[name]
		if g.DType != want.DType || !reflect.DeepEqual(g.Shape, want.Shape) || !bytes.Equal(g.Data, want.Data) {
			t.Errorf("tensor %q = %+v, want %+v", name, g, want)
		}
	}
	w, err := got["w"].Float64()
	if err != nil {
		t.Fatal(err)
	}
	if w[2] != 3.5 || !math.IsInf(w[3], 1) || !math.Signbit(w[4]) || w[5] != 1e-300 {
		t.Errorf("w decoded as %v", w)
	}
	bf, err := got["b"].Float64()
	if err != nil || !reflect.DeepEqual(bf, []float64{0.5, -1, 2}) {
		t.Errorf("F32 b decoded as %v, %v", bf, err)
	}
	s, err := got["step"].Int64()
	if err != nil || len(s) != 1 || s[0] != -42 {
		t.Errorf("step decoded as %v, %v", s, err)
	}
	if _, err := got["step"].Float64(); err == nil {
		t.Error("Float64 of an I64 tensor: no error")
	}
	// Deterministic output: same input, same bytes.
	b2, _ := Marshal(tensors, meta)
	if !bytes.Equal(b, b2) {
		t.Error("Marshal is not deterministic")
	}
}

// TestHandAssembled builds a file byte by byte from the published format
// and checks that Read decodes it, and that Write produces exactly these
// bytes for the same tensors (the reference implementation's layout).
func TestHandAssembled(t *testing.T) {
	header := `{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},` +
		`"b":{"dtype":"F32","shape":[],"data_offsets":[16,20]}}`
	const headerLen = 109 // counted by hand: 55 + 54
	if len(header) != headerLen {
		t.Fatalf("test bug: header is %d bytes", len(header))
	}
	// 8+109 = 117; the next multiple of 8 is 120, so 3 spaces of padding
	// and a header length of 112.
	padded := header + "   "
	file := []byte{112, 0, 0, 0, 0, 0, 0, 0} // u64 LE 112
	file = append(file, padded...)
	file = append(file,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x3F, // 1.0 as F64 LE (0x3FF0000000000000)
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xC0, // -2.5 as F64 LE (0xC004000000000000)
		0x00, 0x00, 0x00, 0x3F, // 0.5 as F32 LE (0x3F000000)
	)
	got, meta, err := Read(file)
	if err != nil {
		t.Fatal(err)
	}
	if meta != nil {
		t.Errorf("metadata = %v, want none", meta)
	}
	a, err := got["a"].Float64()
	if err != nil || !reflect.DeepEqual(a, []float64{1, -2.5}) || !reflect.DeepEqual(got["a"].Shape, []int{2}) {
		t.Errorf("a = %v %v (%v)", a, got["a"].Shape, err)
	}
	b, err := got["b"].Float64()
	if err != nil || !reflect.DeepEqual(b, []float64{0.5}) || len(got["b"].Shape) != 0 {
		t.Errorf("b = %v %v (%v)", b, got["b"].Shape, err)
	}

	out, err := Marshal(map[string]Tensor{
		"b": FromFloat32(nil, []float32{0.5}),
		"a": FromFloat64([]int{2}, []float64{1, -2.5}),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, file) {
		t.Errorf("Write output differs from the hand-assembled file:\n got %q\nwant %q", out, file)
	}
}

func TestHandAssembledWithMetadata(t *testing.T) {
	header := `{"__metadata__":{"k":"v"},"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`
	// 79 bytes; 8+79 = 87 -> pad to 88 with 1 space, header length 80.
	if len(header) != 79 {
		t.Fatalf("test bug: header is %d bytes", len(header))
	}
	file := append([]byte{80, 0, 0, 0, 0, 0, 0, 0}, header+" "...)
	file = append(file, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF) // -2 as I64 LE
	got, meta, err := Read(file)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(meta, map[string]string{"k": "v"}) {
		t.Errorf("metadata = %v", meta)
	}
	x, err := got["x"].Int64()
	if err != nil || !reflect.DeepEqual(x, []int64{-2}) {
		t.Errorf("x = %v (%v)", x, err)
	}
	out, err := Marshal(map[string]Tensor{"x": FromInt64([]int{1}, []int64{-2})}, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, file) {
		t.Errorf("Write output differs:\n got %q\nwant %q", out, file)
	}
}

// build assembles a file from a raw header string and data bytes.
func build(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func TestMalformed(t *testing.T) {
	ok := `{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}`
	sixteen := make([]byte, 16)
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "shorter than the 8-byte header length"},
		{"short length", []byte{1, 2, 3}, "shorter than the 8-byte"},
		{"header past end", append(binary.LittleEndian.AppendUint64(nil, 1000), "{}"...), "truncated file: header length is 1000"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<40), "exceeds"},
		{"tiny header", build("{", nil), "too small"},
		{"not object", build("[1,2]", nil), "must start with '{'"},
		{"bad json", build(`{"a":}`, nil), "invalid JSON"},
		{"trailing junk", build(`{}x`, nil), "after the header object"},
		{"data truncated", build(ok, sixteen[:10]), "truncated file: tensor \"a\" ends at data offset 16"},
		{"trailing data", build(ok, make([]byte, 20)), "trailing bytes"},
		{"unknown dtype", build(`{"a":{"dtype":"F99","shape":[2],"data_offsets":[0,16]}}`, sixteen), "unknown dtype \"F99\""},
		{"size mismatch", build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}}`, sixteen), "needs 8 bytes"},
		{"negative dim", build(`{"a":{"dtype":"F64","shape":[-2],"data_offsets":[0,16]}}`, sixteen), "negative"},
		{"reversed offsets", build(`{"a":{"dtype":"F64","shape":[0],"data_offsets":[16,0]}}`, sixteen), "bad data_offsets"},
		{"three offsets", build(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16,32]}}`, sixteen), "data_offsets must be [begin, end]"},
		{"missing shape", build(`{"a":{"dtype":"F64","data_offsets":[0,16]}}`, sixteen), "missing \"shape\""},
		{"entry not object", build(`{"a":3}`, nil), "entry must be an object"},
		{"duplicate", build(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"a":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}`, sixteen), "appears twice"},
		{"gap", build(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}`, sixteen), "gap in data section"},
		{"overlap", build(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},"b":{"dtype":"F64","shape":[1],"data_offsets":[8,16]}}`, sixteen), "overlaps"},
		{"metadata not strings", build(`{"__metadata__":{"k":1}}`, nil), "__metadata__ key \"k\": value must be a string, got a number"},
		{"metadata not object", build(`{"__metadata__":[1]}`, nil), "__metadata__ must be an object"},
		{"bad utf8", build("{\"\xff\":1}", nil), "UTF-8"},
	}
	for _, c := range cases {
		_, _, err := Read(c.file)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
	}
}

func TestWriteRejects(t *testing.T) {
	cases := map[string]map[string]Tensor{
		"needs 48 bytes":          {"x": FromFloat64([]int{2, 3}, []float64{1})},
		"unknown dtype":           {"x": {DType: "Q4", Shape: []int{1}, Data: []byte{0}}},
		"reserved":                {"__metadata__": FromFloat64([]int{1}, []float64{1})},
		"empty tensor name":       {"": FromFloat64([]int{1}, []float64{1})},
		"dimension 0 is negative": {"x": {DType: "U8", Shape: []int{-1}}},
	}
	for want, ts := range cases {
		_, err := Marshal(ts, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Marshal(%v): error %v, want one mentioning %q", ts, err, want)
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.safetensors")
	if err := WriteFile(path, map[string]Tensor{"a": FromFloat64([]int{1}, []float64{1})}, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, map[string]Tensor{"a": FromFloat64([]int{1}, []float64{2})}, map[string]string{"v": "2"}); err != nil {
		t.Fatal(err)
	}
	got, meta, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := got["a"].Float64()
	if a[0] != 2 || meta["v"] != "2" {
		t.Errorf("read back %v %v", a, meta)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (temp files left behind?)", len(entries))
	}
	// A failed write (bad tensor) leaves the old file intact.
	if err := WriteFile(path, map[string]Tensor{"a": {DType: "F64", Shape: []int{2}}}, nil); err == nil {
		t.Error("bad tensor: no error")
	}
	if got, _, err := ReadFile(path); err != nil || len(got) != 1 {
		t.Errorf("old file damaged: %v", err)
	}
	// Errors from ReadFile name the path.
	bad := filepath.Join(dir, "bad.safetensors")
	os.WriteFile(bad, []byte{1, 2}, 0o644)
	if _, _, err := ReadFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("ReadFile error %v does not name the path", err)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x.safetensors"), nil, nil); err == nil {
		t.Error("write into a missing directory: no error")
	}
}

func ExampleWriteFile() {
	dir, _ := os.MkdirTemp("", "st")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "weights.safetensors")
	err := WriteFile(path, map[string]Tensor{
		"layer0.weight": FromFloat64([]int{2, 2}, []float64{1, 0, 0, 1}),
	}, map[string]string{"format": "example"})
	if err != nil {
		panic(err)
	}
	tensors, meta, err := ReadFile(path)
	if err != nil {
		panic(err)
	}
	w, _ := tensors["layer0.weight"].Float64()
	fmt.Println(tensors["layer0.weight"].Shape, w, meta["format"])
	// Output: [2 2] [1 0 0 1] example
}
