package wasm

import (
	"sync"
	"time"
)

// watchdogTicks is how many times per timeout the watchdog looks at the
// instances it watches: a call is stopped between 1 and 1 + 1/watchdogTicks
// timeouts after it began.
const watchdogTicks = 4

// watchdog stops the calls of a module's instances that overrun the
// per-call timeout.
//
// Arming a timer around every call costs about 120 ns, as much as the rest
// of the host's work on an LBF step. Instead each instance counts its calls
// in an atomic sequence number that is odd while a call runs (two atomic
// adds per call), and one goroutine per module wakes watchdogTicks times
// per timeout and stops an instance whose number has stayed on the same odd
// value for a whole timeout. The goroutine runs only while the module has
// instances.
type watchdog struct {
	timeout time.Duration
	period  time.Duration

	mu      sync.Mutex
	watched map[*instance]*watchState
	running bool
}

// watchState is what the watchdog last saw of one instance.
type watchState struct {
	seq   uint64 // the instance's call sequence number at the last tick
	ticks int    // consecutive ticks that saw the same running call
}

func newWatchdog(timeout time.Duration) *watchdog {
	return &watchdog{timeout: timeout, period: max(timeout/watchdogTicks, time.Millisecond), watched: map[*instance]*watchState{}}
}

// watch starts watching in.
func (w *watchdog) watch(in *instance) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watched[in] = &watchState{}
	if !w.running {
		w.running = true
		go w.run()
	}
}

// forget stops watching in.
func (w *watchdog) forget(in *instance) {
	w.mu.Lock()
	delete(w.watched, in)
	w.mu.Unlock()
}

// forgetAll stops watching every instance (the module is closing); the
// goroutine ends at its next tick.
func (w *watchdog) forgetAll() {
	w.mu.Lock()
	clear(w.watched)
	w.mu.Unlock()
}

func (w *watchdog) run() {
	t := time.NewTicker(w.period)
	defer t.Stop()
	for range t.C {
		if !w.tick() {
			return
		}
	}
}

// tick looks at every watched instance once and stops those whose current
// call has run for a whole timeout. It reports false, and marks the
// goroutine stopped, when nothing is left to watch.
func (w *watchdog) tick() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.watched) == 0 {
		w.running = false
		return false
	}
	for in, st := range w.watched {
		seq := in.calls.Load()
		if seq&1 == 0 || seq != st.seq {
			// Idle, or a call that began since the last tick.
			st.seq, st.ticks = seq, 0
			continue
		}
		st.ticks++
		if time.Duration(st.ticks)*w.period >= w.timeout {
			in.stop(seq)
			st.ticks = 0
		}
	}
	return true
}
