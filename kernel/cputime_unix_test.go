//go:build unix

package kernel

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used (all threads, GC included),
// so that benchmarks on a shared machine can report CPU per operation next to
// wall time.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
