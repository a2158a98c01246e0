//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package h1

const canPeek = false

func peekFd(uintptr, []byte) peekState { return peekEmpty }
