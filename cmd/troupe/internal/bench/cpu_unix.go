//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuTime returns the process's user + system CPU time so far, and whether
// the OS reported it.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
