//go:build unix

package accounting

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive, non-blocking flock on f; it is released when
// the process ends, however it ends.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
