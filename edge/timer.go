package edge

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// exTimer is the one timer of an exchange (startTimers, armAttempt), taken
// from a pool rather than made per request: a timer and its callback were
// two allocations of every request. It goes back once the exchange ends
// with the timer stopped before it fired; a timer that fired (its callback
// may still be running, on the exchange) is left to the collector.
type exTimer struct {
	t *time.Timer
	x atomic.Pointer[exchange] // whose timerCheck the timer runs; nil while pooled
}

var exTimers = sync.Pool{New: func() any {
	et := new(exTimer)
	et.t = time.AfterFunc(time.Duration(math.MaxInt64), et.fire)
	et.t.Stop()
	return et
}}

func (et *exTimer) fire() {
	if x := et.x.Load(); x != nil {
		x.timerCheck()
	}
}

// newTimer takes x's timer, stopped.
func (x *exchange) newTimer() *time.Timer {
	et := exTimers.Get().(*exTimer) //nolint:forcetypeassert // the pool holds only these
	et.x.Store(x)
	x.et = et
	x.timerP.Store(et.t) // before the timer can fire
	return et.t
}

// stopTimer stops x's timer at the end of the exchange.
func (x *exchange) stopTimer() {
	if x.et == nil {
		return
	}
	if x.et.t.Stop() {
		// It was pending: its callback is not running and will not run.
		x.et.x.Store(nil)
		exTimers.Put(x.et)
	}
	x.et, x.timer = nil, nil
}
