package h1

import (
	"errors"
	"syscall"
)

// A readiness waits for a connection to have something to read, without a
// read buffer, and looks at it without reading (MSG_PEEK). A connection
// waiting for its next request, or an upstream connection waiting for its
// response, then holds no buffer: at 5,000 connections, the 4 KiB buffers
// were 40 MiB of the heap. Where the platform or the connection does not
// allow it (not a socket: a TLS or test connection), ok is false and the
// callers read through their buffer as before.
type readiness struct {
	rc     syscall.RawConn // nil: not a socket
	b      [1]byte         // what MSG_PEEK writes
	last   peekState       // what the last peek saw
	looked bool            // the wait has peeked once
	// ready and peekFd are the method values handed to rc, made once per
	// connection (a method value passed as a func allocates).
	ready  func(fd uintptr) bool
	peekFd func(fd uintptr)
}

// peekState is what a peek saw on a connection.
type peekState uint8

const (
	peekEmpty peekState = iota // nothing to read yet
	peekData                   // a byte is there
	peekEnd                    // the peer closed (EOF) or reset the connection
)

// errCannotWait: this connection cannot be waited on without a buffer.
var errCannotWait = errors.New("edge: connection cannot be polled")

// init sets r up for c; r.ok() is false when c cannot be waited on.
func (r *readiness) init(c any) {
	r.rc = nil
	if !canPeek {
		return
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	r.rc = rc
	if r.ready == nil {
		r.ready = r.readyFd
		r.peekFd = r.peekOnce
	}
}

func (r *readiness) ok() bool { return r.rc != nil }

// wait returns once a read of the connection is not expected to block: a
// byte, the end of the stream or an error is there, or the poller said so
// (r.last is peekEmpty then: on a spurious wake-up the caller's read
// blocks, with its buffer); or with the error a read would return
// meanwhile (its read deadline, a closed connection). errCannotWait when
// !r.ok(). It costs the system calls of a read that finds nothing: one
// peek, then the wait.
func (r *readiness) wait() error {
	if r.rc == nil {
		return errCannotWait
	}
	r.looked = false
	return r.rc.Read(r.ready)
}

// peek looks at the connection now, without waiting; peekEmpty also when
// the connection is closed or cannot be peeked at.
func (r *readiness) peek() peekState {
	r.last = peekEmpty
	if r.rc != nil {
		_ = r.rc.Control(r.peekFd)
	}
	return r.last
}

// readyFd is the wait's test, run by RawConn.Read first and after each
// wake-up. It must look (peek) on its first run: Read resets the poller's
// readiness before calling it, so input that arrived earlier is seen only
// by looking. After a wake-up it trusts the poller.
func (r *readiness) readyFd(fd uintptr) bool {
	if r.looked {
		r.last = peekEmpty
		return true
	}
	r.looked = true
	r.peekOnce(fd)
	return r.last != peekEmpty
}

func (r *readiness) peekOnce(fd uintptr) { r.last = peekFd(fd, r.b[:]) }
