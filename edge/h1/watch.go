package h1

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// The watch of a request: a request still running watchAfter after it
// started, its body read, has its connection watched, so that a client
// going away cancels it (its context, with ErrClientGone, and the handler's
// OnGone hook). What the client sends next, or the end of the connection,
// decides: a byte is the next request (the client is there, and the watch
// ends), the end or a reset means it went away.
//
// Where the poller runs (Linux: watch_linux.go), one goroutine watches
// every such connection through an epoll set of its own, so a watched
// request costs one epoll_ctl call and no goroutine or buffer: at 5,000
// requests of a second or more at once the goroutines of the watches were
// 5,000 stacks. Elsewhere, a goroutine per watched request waits without a
// buffer (readiness), or reads through the connection's buffer where the
// connection cannot be polled.

// noPoller makes watches use goroutines, as where there is no poller
// (tests).
var noPoller atomic.Bool

// watchKind is how the current request is watched.
type watchKind uint8

const (
	notWatched     watchKind = iota
	watchPoller              // registered with the poller
	watchGoroutine           // a goroutine waits on the connection
)

// startWatch arms the watch of a new request.
func (sc *serverConn) startWatch(cancel context.CancelCauseFunc, noBody bool) {
	sc.mu.Lock()
	sc.cancel, sc.wantWatch, sc.bodyDone, sc.stopping = cancel, false, noBody, false
	sc.watching, sc.polling, sc.watchEnded = notWatched, false, nil
	sc.mu.Unlock()
	if sc.watchT == nil {
		sc.watchT = time.AfterFunc(watchAfter, sc.watchDue)
	} else {
		sc.watchT.Reset(watchAfter)
	}
}

// watchDue runs when a request has run for watchAfter.
func (sc *serverConn) watchDue() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.active || sc.stopping {
		return
	}
	sc.wantWatch = true
	if sc.bodyDone {
		sc.watchLocked()
	}
}

// bodyRead runs when the handler has read the request body to its end.
func (sc *serverConn) bodyRead() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.bodyDone = true
	if sc.wantWatch && !sc.stopping {
		sc.watchLocked()
	}
}

// watchLocked starts watching the connection for its end (or the next
// request's first byte, which is left to be read).
func (sc *serverConn) watchLocked() {
	if sc.watching != notWatched {
		return
	}
	if sc.br != nil && sc.br.Buffered() > 0 {
		return // the next request is already here
	}
	if p := thePoller(); p != nil && sc.rd.ok() && !noPoller.Load() && p.add(sc) {
		sc.watching, sc.polling = watchPoller, true
		return
	}
	sc.watching = watchGoroutine
	sc.watchEnded = make(chan struct{})
	go sc.watchInGoroutine()
}

// watchInGoroutine waits for the connection in a goroutine of its own.
func (sc *serverConn) watchInGoroutine() {
	defer close(sc.watchEnded)
	var gone bool
	for {
		err := sc.rd.wait()
		if errors.Is(err, errCannotWait) {
			// The connection keeps its buffer (releaseReader), read here.
			_, err = sc.br.Peek(1)
			gone = err != nil
			break
		}
		st := sc.rd.last
		if err == nil && st == peekEmpty {
			st = sc.rd.peek() // woken up: what is there?
		}
		if err == nil && st == peekEmpty {
			continue // a spurious wake-up
		}
		gone = err != nil || st == peekEnd // err: a closed connection, or stopWatch's deadline
		break
	}
	sc.mu.Lock()
	stopping := sc.stopping
	sc.mu.Unlock()
	if gone && !stopping {
		sc.clientGone()
	}
}

// polled runs in the poller's goroutine when the connection of a request it
// watches has something to read, or ended. It peeks under mu, so that the
// connection's goroutine, once stopWatch returned, has the connection to
// itself.
func (sc *serverConn) polled() {
	sc.mu.Lock()
	if !sc.polling || sc.stopping {
		sc.mu.Unlock()
		return
	}
	st := sc.rd.peek()
	if st == peekEmpty {
		thePoller().rearm(sc) // not ready after all
		sc.mu.Unlock()
		return
	}
	sc.polling = false // the event disabled the registration
	if st == peekData {
		sc.mu.Unlock()
		return
	}
	ended := make(chan struct{})
	sc.watchEnded = ended
	sc.mu.Unlock()
	sc.clientGone()
	close(ended)
}

// endPoll takes the connection out of the poller at its end: out of its
// epoll set too when hijacked, since it is not closed here.
func (sc *serverConn) endPoll(hijacked bool) {
	sc.mu.Lock()
	if sc.preg.isRegistered() {
		thePoller().forget(sc, hijacked)
	}
	sc.mu.Unlock()
}

// clientGone cancels the request: its context, then the handler's hook.
func (sc *serverConn) clientGone() {
	sc.mu.Lock()
	cancel := sc.cancel
	sc.mu.Unlock()
	cancel(ErrClientGone)
	sc.mu.Lock()
	gone := sc.gone
	sc.mu.Unlock()
	if gone != nil {
		gone(ErrClientGone)
	}
}

// onGone sets what the watch calls, after cancelling the request's context,
// when the client goes away during the current request (nil: nothing). A
// handler that would otherwise derive a context from the request's, only to
// learn of its end, is told directly: no registration in the request's
// context. It may still be called once after onGone(nil) returns.
func (sc *serverConn) onGone(f func(error)) {
	sc.mu.Lock()
	sc.gone = f
	sc.mu.Unlock()
}

// stopWatch ends the watch of the request that just ended; once it
// returns, the watch calls nothing of that request.
func (sc *serverConn) stopWatch() {
	sc.watchT.Stop()
	sc.mu.Lock()
	sc.stopping = true
	kind, ended := sc.watching, sc.watchEnded
	sc.polling = false // the registration stays, for the next watch
	sc.mu.Unlock()
	switch {
	case kind == watchGoroutine:
		_ = sc.c.SetReadDeadline(aLongTimeAgo)
		<-ended
		_ = sc.c.SetReadDeadline(time.Time{})
	case ended != nil: // the poller is calling the hooks
		<-ended
	}
}
