package wasmabi

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// littleEndian is true on hosts whose float64 memory layout is the ABI's
// (amd64, arm64, wasm, …), where a float array is copied as bytes.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// putFloats writes v to dst (len 8·len(v)) as little-endian float64s.
func putFloats(dst []byte, v []float64) {
	if littleEndian && len(v) > 0 {
		copy(dst[:8*len(v)], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 8*len(v)))
		return
	}
	for k, f := range v {
		binary.LittleEndian.PutUint64(dst[8*k:], math.Float64bits(f))
	}
}

// getFloats reads len(dst) little-endian float64s from src (len ≥
// 8·len(dst)); every bit pattern, NaNs included, is kept.
func getFloats(dst []float64, src []byte) {
	if littleEndian && len(dst) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 8*len(dst)), src[:8*len(dst)])
		return
	}
	for k := range dst {
		dst[k] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*k:]))
	}
}

// boolsIn returns n bools stored in f's memory (len(f) ≥ ⌈n/8⌉), so that
// a decoder's masks share the features' allocation. f must be zeroed.
func boolsIn(f []float64, n int) []bool {
	if n == 0 {
		return nil
	}
	_ = f[(n-1)/8] // bounds check
	return unsafe.Slice((*bool)(unsafe.Pointer(unsafe.SliceData(f))), n)[:n:n]
}
