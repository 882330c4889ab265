package wasm

import (
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// TestWatchdogStopsOnlyOverrunningCalls drives the watchdog's ticks by hand:
// an idle instance and one that starts a new call between every two ticks
// are never stopped; a call that stays running is stopped at the tick that
// completes a whole timeout, not before.
func TestWatchdogStopsOnlyOverrunningCalls(t *testing.T) {
	w := newWatchdog(400 * time.Millisecond) // period 100 ms, 4 ticks
	stopped := map[string]int{}
	newInst := func(name string) *instance {
		in := &instance{}
		in.cancel = func() { stopped[name]++ }
		w.watched[in] = &watchState{}
		return in
	}
	idle, busy, stuck := newInst("idle"), newInst("busy"), newInst("stuck")
	stuck.calls.Add(1) // a call begins before the first tick
	for tick := 1; tick <= 5; tick++ {
		busy.calls.Add(2) // one call ends, the next begins
		if tick == 1 {
			busy.calls.Add(1)
		}
		if !w.tick() {
			t.Fatal("tick reported nothing to watch")
		}
		// The stuck call was first seen at tick 1, so a whole timeout has
		// passed at tick 5.
		if want := map[bool]int{true: 1, false: 0}[tick == 5]; stopped["stuck"] != want {
			t.Fatalf("tick %d: stuck call stopped %d times, want %d", tick, stopped["stuck"], want)
		}
	}
	if stopped["idle"] != 0 || stopped["busy"] != 0 {
		t.Fatalf("stopped calls that did not overrun: %v", stopped)
	}
	if !stuck.expired.Load() || idle.expired.Load() || busy.expired.Load() {
		t.Fatal("expired flags: want only the stuck instance's set")
	}
	for _, in := range []*instance{idle, busy, stuck} {
		w.forget(in)
	}
	if w.tick() {
		t.Fatal("tick with nothing watched should stop the goroutine")
	}
}

// TestWatchdogEndsWithTheModule: closing a source ends its watchdog's
// goroutine even if an env of it was never closed.
func TestWatchdogEndsWithTheModule(t *testing.T) {
	needC(t)
	src := loadEnv(t, "lbf_c.wasm", nil, core.Sandbox{CallTimeout: 40 * time.Millisecond})
	if _, err := src.Open(); err != nil { // never closed
		t.Fatal(err)
	}
	dog := src.m.dog
	running := func() bool { dog.mu.Lock(); defer dog.mu.Unlock(); return dog.running }
	if !running() {
		t.Fatal("watchdog not running while an instance is open")
	}
	src.Close()
	deadline := time.Now().Add(2 * time.Second)
	for running() {
		if time.Now().After(deadline) {
			t.Fatal("watchdog still running 2 s after the source closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatchdogStopMissesAnEndedCall: the watchdog reads an instance's
// sequence number, the call ends, and only then does the watchdog decide
// to stop it. The stop must not land: the ended call already reported
// success, and an interrupt now would fail the instance's next call as a
// timeout. Conversely, a call the watchdog claimed first reports the
// overrun when it ends, even if it returned normally.
func TestWatchdogStopMissesAnEndedCall(t *testing.T) {
	stopped := 0
	in := &instance{cancel: func() { stopped++ }}

	seq := in.begin()
	if !in.end(seq) {
		t.Fatal("a call nobody stopped reported an overrun")
	}
	if in.stop(seq) || stopped != 0 || in.expired.Load() {
		t.Fatalf("stop of an ended call: cancel called %d times, expired %v; want neither", stopped, in.expired.Load())
	}
	next := in.begin()
	if !in.end(next) {
		t.Fatal("the call after a missed stop reported an overrun")
	}

	seq = in.begin()
	if !in.stop(seq) || stopped != 1 || !in.expired.Load() {
		t.Fatalf("stop of a running call: cancel called %d times, expired %v; want 1 and true", stopped, in.expired.Load())
	}
	if in.end(seq) {
		t.Fatal("a call the watchdog stopped did not report its overrun")
	}
	if c := in.calls.Load(); c&1 != 0 {
		t.Fatalf("sequence number %d is odd with no call running", c)
	}
}
