package h1

import (
	"sync"
	"time"
)

// monoStart anchors MonoNow.
var monoStart = time.Now()

// MonoNow is monotonic nanoseconds since the process started: a deadline
// or a start kept in an int64 (atomically, where it must be) rather than a
// time.Time. The edge's timers use it too.
func MonoNow() int64 { return int64(time.Since(monoStart)) }

// The burst gate. Go runs the runnable goroutines in turn, so when thousands
// of connections arrive at once their requests all advance together: each
// step of a request (its processor calls, its dial, its write upstream)
// waits behind a step of every other, and nearly every request of the
// burst reaches its provider only once the whole burst has been processed.
// The gate lets a few requests per core at a time go from their first
// byte to the moment they are written upstream; the others wait parked, off
// the run queue, and enter in arrival order (a channel queues its blocked senders
// first come, first served). What the burst costs is unchanged; who waits
// for it is not: the first requests go upstream at once instead of with
// the last. Measured on the rush (5,000 connections at once), see
// bench/README.md.
//
// A slot is taken when a request's first byte can be read, before the
// connection takes a read buffer and parses the head, so that the requests
// waiting hold nothing but their goroutine; the handler gives it back with
// Response.LeaveGate when the request is on its way upstream, and the server
// when the handler returns.
//
// While others wait, a request holds its slot at most the gate's hold: one
// that waits longer on something else (a slow client, a dial to a distant
// provider, a processor waiting on its store) gives the slot up when the
// hold ends, so the gate admits at least slots/hold requests a second
// whatever they wait on, and a stuck request cannot stall the rest.

// gate is the burst gate. Its holders are listed in the order they entered,
// so that while requests wait, a sweeper takes the slots of those that
// held theirs longer than hold from the list's head. Nothing runs while
// nobody waits: a timer per request cost 6 % of the CPU of a request at
// 1,500 a second (bench/compare.sh), waking the network poller to re-arm.
type gate struct {
	slots chan struct{}
	hold  time.Duration

	mu       sync.Mutex
	head     *serverConn // the longest holder; linked by gateNext/gatePrev
	tail     *serverConn
	waiting  int  // requests waiting for a slot
	sweeping bool // the sweeper runs
}

func newGate(slots int, hold time.Duration) *gate {
	if slots <= 0 {
		return nil
	}
	return &gate{slots: make(chan struct{}, slots), hold: hold}
}

// SetGate sets the burst gate (gate.go) before Serve: slots at a time,
// each held at most hold while others wait; slots <= 0: none.
func (s *Server) SetGate(slots int, hold time.Duration) { s.gate = newGate(slots, hold) }

// enterGate waits for a slot (the connection's goroutine); a connection
// that holds one already keeps it.
func (sc *serverConn) enterGate() {
	g := sc.s.gate
	if g == nil || sc.gated.Load() {
		return
	}
	select {
	case g.slots <- struct{}{}:
	default:
		g.mu.Lock()
		g.waiting++
		if !g.sweeping {
			g.sweeping = true
			go g.sweep()
		}
		g.mu.Unlock()
		g.slots <- struct{}{} // the sweeper keeps the slots moving
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}
	sc.gateSince = MonoNow()
	sc.gated.Store(true)
	g.mu.Lock()
	sc.gatePrev = g.tail
	if g.tail != nil {
		g.tail.gateNext = sc
	} else {
		g.head = sc
	}
	g.tail = sc
	g.mu.Unlock()
}

// leaveGate gives the slot back, once: the handler's LeaveGate, the end of
// the request, or the sweeper.
func (sc *serverConn) leaveGate() {
	if !sc.gated.CompareAndSwap(true, false) {
		return
	}
	g := sc.s.gate
	g.mu.Lock()
	g.unlink(sc)
	g.mu.Unlock()
	<-g.slots
}

// LeaveGate gives the request's slot of the burst gate back: call it once
// the request is on its way upstream. Calls after the first do nothing.
func (w *Response) LeaveGate() { w.sc.leaveGate() }

// unlink removes x from the holders, if it is there (g.mu held): the
// sweeper and x's own leaveGate may both try.
func (g *gate) unlink(x *serverConn) {
	if x.gatePrev == nil && g.head != x {
		return // not in the list
	}
	if x.gatePrev != nil {
		x.gatePrev.gateNext = x.gateNext
	} else {
		g.head = x.gateNext
	}
	if x.gateNext != nil {
		x.gateNext.gatePrev = x.gatePrev
	} else {
		g.tail = x.gatePrev
	}
	x.gatePrev, x.gateNext = nil, nil
}

// sweep runs while requests wait: every half hold (10 ms at most, so that
// it ends soon once nobody waits), the slots of the holders past their hold
// go to the waiters.
func (g *gate) sweep() {
	for {
		time.Sleep(min(g.hold/2, 10*time.Millisecond))
		now := MonoNow()
		g.mu.Lock()
		for x := g.head; x != nil && time.Duration(now-x.gateSince) >= g.hold; x = g.head {
			g.unlink(x)
			if x.gated.CompareAndSwap(true, false) {
				<-g.slots
			}
		}
		if g.waiting == 0 {
			g.sweeping = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
}
