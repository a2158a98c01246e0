package h1

import (
	"net"
	"sync"
)

// Abort cuts off the connection an upstream request is using when
// that request is cancelled: its deadline goes into the past, so that a
// blocked write or read returns. An exchange holds one and fires it wherever
// it cancels its upstream context (cancelUp); callers with only a context
// bridge it with one context.AfterFunc. It replaces a context.AfterFunc per
// upstream request, whose registration cost a node and a map in the
// context, about half a kilobyte per request.
type Abort struct {
	mu    sync.Mutex
	c     net.Conn // the connection in use; nil between requests
	fired bool
	// Written, when set, is told once a request is written on the
	// connection.
	Written interface{ RequestWritten() }
}

// arm registers c as the connection in use; false when the abort already
// fired (c is left alone).
func (a *Abort) arm(c net.Conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fired {
		return false
	}
	a.c = c
	return true
}

// disarm ends the use of the armed connection; false when the abort fired
// meanwhile: its deadline is in the past and it cannot carry another request.
func (a *Abort) disarm() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.c = nil
	return !a.fired
}

// fire aborts the armed connection, and makes every later arm fail.
func (a *Abort) Fire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fired {
		return
	}
	a.fired = true
	if a.c != nil {
		_ = a.c.SetDeadline(aLongTimeAgo)
	}
}
