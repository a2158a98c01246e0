package edge

import (
	"runtime"
	"sync"
	"time"
)

// The burst gate. Go runs the runnable goroutines in turn, so when thousands
// of connections arrive at once their requests all advance together: each
// step of a request (its processor calls, its dial, its write upstream)
// waits behind a step of every other, and nearly every request of the
// burst reaches its provider only once the whole burst has been processed.
// The gate lets a few requests per core at a time go from their start to
// the moment they are written upstream; the others wait parked, off the run
// queue, and enter in arrival order (a channel queues its blocked senders
// first come, first served). What the burst costs is unchanged; who waits
// for it is not: the first requests go upstream at once instead of with
// the last. Measured on the rush (5,000 connections at once), see
// bench/README.md.
//
// While others wait, a request holds its slot at most the gate's hold: one
// that waits longer on something else (a slow client body, a dial to a distant provider, a
// processor waiting on its store) gives the slot up when the hold ends, so
// the gate admits at least slots/hold requests a second whatever they wait
// on, and a stuck request cannot stall the rest. Requests forwarded by the
// cluster's http.Transport (TLS, HTTP/2, streamed bodies) give the slot up
// before their round trip.

const (
	// gateSlotsPerCore × GOMAXPROCS requests at a time.
	gateSlotsPerCore = 16
	// gateHold bounds the time a request holds a slot while others wait:
	// the gate then admits at least gateSlotsPerCore/gateHold = 3,200
	// requests a second per core.
	gateHold = 5 * time.Millisecond
)

// gate is the burst gate. Its holders are listed in the order they entered,
// so that while requests wait, a sweeper takes the slots of those that
// held theirs longer than hold from the list's head. Nothing runs while
// nobody waits: a timer per request cost 6 % of the CPU of a request at
// 1,500 a second (bench/compare.sh), waking the network poller to re-arm.
type gate struct {
	slots chan struct{}
	hold  time.Duration

	mu       sync.Mutex
	head     *exchange // the longest holder; linked by gateNext/gatePrev
	tail     *exchange
	waiting  int  // requests waiting for a slot
	sweeping bool // the sweeper runs
}

func newGate(slots int, hold time.Duration) *gate {
	if slots <= 0 {
		return nil
	}
	return &gate{slots: make(chan struct{}, slots), hold: hold}
}

func defaultGate() *gate { return newGate(gateSlotsPerCore*runtime.GOMAXPROCS(0), gateHold) }

// WithGate sets the burst gate's slots and hold (gate.go); slots <= 0 turns
// it off. Default: 16 slots per core, 5 ms.
func WithGate(slots int, hold time.Duration) Option {
	return func(e *Edge) { e.gate = newGate(slots, hold) }
}

// enterGate waits for a slot, or for the request's end.
func (x *exchange) enterGate() {
	g := x.e.gate
	if g == nil {
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
		select {
		case g.slots <- struct{}{}:
		case <-x.upCtx.Done(): // the client went away while waiting
			g.mu.Lock()
			g.waiting--
			g.mu.Unlock()
			return
		}
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}
	x.gateSince = monoNow()
	x.gated.Store(true)
	g.mu.Lock()
	x.gatePrev = g.tail
	if g.tail != nil {
		g.tail.gateNext = x
	} else {
		g.head = x
	}
	g.tail = x
	x.gateLinked = true
	g.mu.Unlock()
}

// leaveGate gives the slot back: when the request is written upstream
// (RequestWritten), before a round trip through http.Transport, when the
// exchange ends, or when the sweeper takes it; only the first counts.
func (x *exchange) leaveGate() {
	if !x.gated.CompareAndSwap(true, false) {
		return
	}
	g := x.e.gate
	g.mu.Lock()
	g.unlink(x)
	g.mu.Unlock()
	<-g.slots
}

// RequestWritten is h1.Abort's hook: the request is on the wire.
func (x *exchange) RequestWritten() { x.leaveGate() }

// unlink removes x from the holders, if it is there (g.mu held): the
// sweeper and x's own leaveGate may both try.
func (g *gate) unlink(x *exchange) {
	if !x.gateLinked {
		return
	}
	x.gateLinked = false
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

// sweep runs while requests wait: every half hold, the slots of the holders
// past their hold go to the waiters.
func (g *gate) sweep() {
	for {
		time.Sleep(g.hold / 2)
		now := monoNow()
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
