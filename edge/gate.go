package edge

import (
	"runtime"
	"time"
)

// The burst gate of the HTTP/1.1 server (h1/gate.go): a few requests per
// core at a time go from their first byte to their write upstream, in
// arrival order, so that a burst's first requests reach their providers
// first instead of with the last.

const (
	// gateSlotsPerCore × GOMAXPROCS requests at a time.
	gateSlotsPerCore = 16
	// gateHold bounds the time a request holds a slot while others wait:
	// the gate then admits at least gateSlotsPerCore/gateHold = 3,200
	// requests a second per core, whatever they wait on.
	gateHold = 5 * time.Millisecond
)

// gateConf is the gate's setting; slots <= 0: off.
type gateConf struct {
	slots int
	hold  time.Duration
}

func defaultGate() gateConf {
	return gateConf{slots: gateSlotsPerCore * runtime.GOMAXPROCS(0), hold: gateHold}
}

// WithGate sets the burst gate's slots and hold; slots <= 0 turns it off.
// Default: 16 slots per core, 5 ms.
func WithGate(slots int, hold time.Duration) Option {
	return func(e *Edge) { e.gate = gateConf{slots: slots, hold: hold} }
}

// leaveGate gives the request's slot back: it is on the wire
// (RequestWritten, from the h1 client), or about to go through
// http.Transport (TLS, HTTP/2, streamed bodies), which tells nobody when it
// has written it. Over HTTP/2 downstream there is no gate.
func (x *exchange) leaveGate() {
	if x.goneHook != nil {
		x.goneHook.LeaveGate()
	}
}

// RequestWritten is h1.Abort's hook: the request is on the wire.
func (x *exchange) RequestWritten() { x.leaveGate() }
