//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package h1

import (
	"errors"
	"syscall"
)

const canPeek = true

// peekFd peeks at one byte of socket fd without waiting.
func peekFd(fd uintptr, b []byte) peekState {
	for {
		n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return peekEmpty
		case err != nil || n == 0:
			return peekEnd
		}
		return peekData
	}
}
