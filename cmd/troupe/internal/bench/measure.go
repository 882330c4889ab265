package bench

import (
	"runtime"
	"sort"
	"time"
)

// Timer is the part of *testing.B a workload uses to exclude set-up work
// (an env reset between episodes) from the timed region. *testing.B
// implements it, so every workload of the suite is also an ordinary Go
// benchmark (see bench_test.go).
type Timer interface {
	StartTimer()
	StopTimer()
}

// Workload performs n operations, stopping t around work that must not be
// timed. It is called with a running timer.
type Workload func(t Timer, n int) error

// Timing is the result of one measured run of a workload.
type Timing struct {
	N       int           // operations
	Elapsed time.Duration // time spent in the timed region
	Mallocs uint64        // heap allocations in the timed region
	Bytes   uint64        // heap bytes allocated in the timed region
}

// NsPerOp returns the mean time of one operation in nanoseconds.
func (t Timing) NsPerOp() float64 {
	if t.N == 0 {
		return 0
	}
	return float64(t.Elapsed.Nanoseconds()) / float64(t.N)
}

// OpsPerSec returns operations per second.
func (t Timing) OpsPerSec() float64 {
	if t.Elapsed <= 0 {
		return 0
	}
	return float64(t.N) / t.Elapsed.Seconds()
}

// AllocsPerOp returns heap allocations per operation.
func (t Timing) AllocsPerOp() float64 {
	if t.N == 0 {
		return 0
	}
	return float64(t.Mallocs) / float64(t.N)
}

// BytesPerOp returns heap bytes allocated per operation.
func (t Timing) BytesPerOp() float64 {
	if t.N == 0 {
		return 0
	}
	return float64(t.Bytes) / float64(t.N)
}

// stopwatch is the Timer of Measure: like testing.B it reads the memory
// statistics when the timer starts and stops, so that allocations outside
// the timed region are not counted either.
type stopwatch struct {
	on               bool
	start            time.Time
	elapsed          time.Duration
	mallocs0, bytes0 uint64
	mallocs, bytes   uint64
}

func (s *stopwatch) StartTimer() {
	if s.on {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.mallocs0, s.bytes0 = ms.Mallocs, ms.TotalAlloc
	s.on = true
	s.start = time.Now()
}

func (s *stopwatch) StopTimer() {
	if !s.on {
		return
	}
	s.elapsed += time.Since(s.start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.mallocs += ms.Mallocs - s.mallocs0
	s.bytes += ms.TotalAlloc - s.bytes0
	s.on = false
}

// runOnce runs w for n operations and returns what the stopwatch saw.
func runOnce(w Workload, n int) (Timing, error) {
	runtime.GC()
	var s stopwatch
	s.StartTimer()
	err := w(&s, n)
	s.StopTimer()
	return Timing{N: n, Elapsed: s.elapsed, Mallocs: s.mallocs, Bytes: s.bytes}, err
}

// Measure runs w like testing.Benchmark does: with n = 1 first, then with
// n predicted from the previous run (growing at most 100× at a time) until
// one run's timed region lasts at least d. It returns that last run. One
// untimed operation before all that warms up the workload's buffers.
func Measure(d time.Duration, w Workload) (Timing, error) {
	if _, err := runOnce(w, 1); err != nil {
		return Timing{}, err
	}
	n := 1
	for {
		t, err := runOnce(w, n)
		if err != nil || t.Elapsed >= d || n >= 1e9 {
			return t, err
		}
		next := n * 100
		if t.Elapsed > 0 {
			// Aim 20% past d, as testing.B does.
			pred := int(float64(n) * 1.2 * float64(d) / float64(t.Elapsed))
			next = min(next, max(pred, n+1))
		}
		n = next
	}
}

// MeasureMedian runs Measure reps times and returns the run with the median
// time per operation (the runs' allocation counts are those of that run).
func MeasureMedian(d time.Duration, reps int, w Workload) (Timing, error) {
	if reps < 1 {
		reps = 1
	}
	ts := make([]Timing, 0, reps)
	for range reps {
		t, err := Measure(d, w)
		if err != nil {
			return t, err
		}
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].NsPerOp() < ts[j].NsPerOp() })
	return ts[len(ts)/2], nil
}
