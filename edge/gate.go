package edge

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
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
// A request holds its slot at most the gate's hold: one that waits longer
// on something else (a slow client body, a dial to a distant provider, a
// processor waiting on its store) gives the slot up when the hold ends, so
// the gate admits at least slots/hold requests a second whatever they wait
// on, and a stuck request cannot stall the rest. Requests forwarded by the
// cluster's http.Transport (TLS, HTTP/2, streamed bodies) give the slot up
// before their round trip.

const (
	// gateSlotsPerCore × GOMAXPROCS requests at a time.
	gateSlotsPerCore = 16
	// gateHold bounds the time a request holds a slot: the gate admits at
	// least gateSlotsPerCore/gateHold = 3,200 requests a second per core.
	gateHold = 5 * time.Millisecond
)

type gate struct {
	slots chan struct{}
	hold  time.Duration
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
		select {
		case g.slots <- struct{}{}:
		case <-x.upCtx.Done(): // the client went away while waiting
			return
		}
	}
	x.gated.Store(true)
	gt := gateTimers.Get().(*gateTimer) //nolint:forcetypeassert // the pool holds only these
	gt.x.Store(x)
	x.gt = gt
	gt.t.Reset(g.hold)
}

// leaveGate gives the slot back: when the request is written upstream
// (RequestWritten), before a round trip through http.Transport, at the
// hold's end, or when the exchange ends; only the first counts.
func (x *exchange) leaveGate() {
	if x.gated.CompareAndSwap(true, false) {
		<-x.e.gate.slots
	}
}

// RequestWritten is h1.Abort's hook: the request is on the wire.
func (x *exchange) RequestWritten() { x.leaveGate() }

// closeGate ends x's use of the gate (finish).
func (x *exchange) closeGate() {
	x.leaveGate()
	if gt := x.gt; gt != nil {
		x.gt = nil
		if gt.t.Stop() {
			gt.x.Store(nil)
			gateTimers.Put(gt)
		} // else it fired: its callback may still hold x; left to the collector
	}
}

// gateTimer is the hold's timer of an exchange, pooled like exTimer: a
// timer and its callback per request were two allocations.
type gateTimer struct {
	t *time.Timer
	x atomic.Pointer[exchange]
}

var gateTimers = sync.Pool{New: func() any {
	gt := new(gateTimer)
	gt.t = time.AfterFunc(time.Duration(math.MaxInt64), gt.fire)
	gt.t.Stop()
	return gt
}}

func (gt *gateTimer) fire() {
	if x := gt.x.Load(); x != nil {
		x.leaveGate()
	}
}
