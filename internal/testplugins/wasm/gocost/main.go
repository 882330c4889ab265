// Command gocost is not a troupe plugin: it exports the smallest pieces of
// work a Go guest does, so that BenchmarkGoGuestCosts in plugins/wasm can
// price them (a call, a yield to the scheduler, one small allocation).
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o gocost.wasm ./internal/testplugins/wasm/gocost
package main

import "runtime"

var sink []byte

//go:wasmexport noop
func noop() int32 { return 1 }

//go:wasmexport gosched
func gosched() int32 {
	runtime.Gosched()
	return 1
}

// alloc makes one n-byte allocation, yielding every 16th call as the guest
// kit does so that the collector keeps up.
//
//go:wasmexport alloc
func alloc(n int32) int32 {
	sink = make([]byte, n)
	calls++
	if calls%16 == 0 {
		runtime.Gosched()
	}
	return int32(len(sink))
}

var calls int

func main() {}
