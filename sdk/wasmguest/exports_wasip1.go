//go:build wasip1

package wasmguest

import (
	"runtime"
	"unsafe"
)

// desc is the buffer descriptor {ptr, cap} whose address troupe_buffer
// returns; publish refreshes it after every call.
var desc [2]uint32

func publish() {
	desc[0] = uint32(uintptr(unsafe.Pointer(unsafe.SliceData(srv.buf))))
	desc[1] = uint32(len(srv.buf))
}

// done publishes the buffer and yields to the Go scheduler so that the
// garbage collector's goroutines run: always after cold calls, every
// YieldInterval-th hot call (step, reset, state, baseline). A yield costs
// about 1 µs, as much as four small allocations in a Go guest.
func done(hot bool) {
	publish()
	srv.calls++
	if !hot || srv.calls%YieldInterval == 0 {
		runtime.Gosched()
	}
}

//go:wasmexport troupe_abi_v1
func exportABIv1() {}

//go:wasmexport troupe_buffer
func exportBuffer() uint32 {
	publish()
	return uint32(uintptr(unsafe.Pointer(&desc)))
}

//go:wasmexport troupe_buffer_grow
func exportBufferGrow(minCap int32) int32 {
	r := srv.grow(int(minCap))
	done(false)
	return r
}

//go:wasmexport troupe_open
func exportOpen(kind, n int32) int32 {
	r := srv.open(int(kind), int(n))
	done(false)
	return r
}

//go:wasmexport troupe_reset
func exportReset(seed uint64) int32 {
	r := srv.resetEnv(seed)
	done(true)
	return r
}

//go:wasmexport troupe_step
func exportStep(n int32) int32 {
	r := srv.step(int(n))
	done(true)
	return r
}

//go:wasmexport troupe_state
func exportState() int32 {
	r := srv.state()
	done(true)
	return r
}

//go:wasmexport troupe_close
func exportClose() int32 {
	r := srv.close()
	done(false)
	return r
}

//go:wasmexport troupe_truncate
func exportTruncate() int32 {
	r := srv.truncate()
	done(false)
	return r
}

//go:wasmexport troupe_prompt
func exportPrompt(agent, decision int32) int32 {
	r := srv.prompt(int(agent), int(decision))
	done(false)
	return r
}

//go:wasmexport troupe_simulate
func exportSimulate(n int32) int32 {
	r := srv.simulate(int(n))
	done(false)
	return r
}

//go:wasmexport troupe_baseline
func exportBaseline(n int32) int32 {
	r := srv.baseline(int(n))
	done(true)
	return r
}

//go:wasmexport troupe_score
func exportScore(n int32) int32 {
	r := srv.score(int(n))
	done(false)
	return r
}
