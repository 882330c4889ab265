// Package eventclock is the virtual clock of the list-scheduled coding
// tasks: each agent is busy until a time, and the work it started lands
// when the clock reaches that time.
package eventclock

import (
	"math"
	"sort"
)

// Slot is one agent's place on the clock: busy until BusyUntil, when
// Effect (if not nil) lands its work.
type Slot struct {
	BusyUntil float64
	Effect    func()
}

// Advance moves the clock from now to the next moment some slot is free
// (or by wait when nobody is busy and the episode is not done) and lands
// the work finished by then, in order of finishing time, then slot. It
// returns the new time.
func Advance(now, wait float64, done bool, slots []*Slot) float64 {
	next := math.Inf(1)
	for _, s := range slots {
		if s.BusyUntil > now {
			next = math.Min(next, s.BusyUntil)
		}
	}
	if math.IsInf(next, 1) {
		if !done {
			now += wait
		}
	} else {
		now = next
	}
	var due []int
	for i, s := range slots {
		if s.Effect != nil && s.BusyUntil <= now {
			due = append(due, i)
		}
	}
	sort.SliceStable(due, func(x, y int) bool { return slots[due[x]].BusyUntil < slots[due[y]].BusyUntil })
	for _, i := range due {
		eff := slots[i].Effect
		slots[i].Effect = nil
		eff()
	}
	return now
}
