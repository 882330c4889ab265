//go:build !unix

package bench

import "time"

// cpuTime is not available on this OS.
func cpuTime() (time.Duration, bool) { return 0, false }
