package extprocfilter

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// With many requests in flight, the processor's calls over [Sync] run on a
// few long-lived goroutines rather than on the requests' own. A processor
// call is the deepest a request's goroutine goes: it grew every request
// goroutine's stack to 16 KiB, which stayed while the goroutine waited for
// the upstream (a second, at 5,000 requests at once: 80 MiB of stacks),
// shrank at a collection and was copied larger again on the next request.
// On a worker, the deep stack is one per concurrent call (about one per
// core), and a request's goroutine keeps the small stack of the data plane.
// The hand-off costs two goroutine switches per call (about 1 µs: four or
// five calls a request), so below workersAbove requests in flight, where
// the stacks are few, calls run in the caller.
const defaultWorkersAbove = 256

var (
	// liveSyncLinks counts the Sync streams open in the process.
	liveSyncLinks atomic.Int64
	// workersAbove is defaultWorkersAbove; tests lower it.
	workersAbove atomic.Int64
)

func init() { workersAbove.Store(defaultWorkersAbove) }

// onWorker reports whether a processor call goes to a worker.
func onWorker() bool { return liveSyncLinks.Load() > workersAbove.Load() }

// handle runs the processor's Handle of m.
func (l *syncLink) handle(m *extprocv3.ProcessingRequest) error {
	if !onWorker() {
		return l.ss.Handle(m, l.queue)
	}
	l.call.ss, l.call.m, l.call.queue = l.ss, m, l.queue
	l.call.run()
	err := l.call.err
	l.call.ss, l.call.m, l.call.err = nil, nil, nil
	return err
}

// close runs the processor's Close.
func (l *syncLink) close() {
	if !onWorker() {
		l.ss.Close()
		return
	}
	l.call.ss = l.ss
	l.call.run()
	l.call.ss = nil
}

// Idle workers: a janitor looks every procIdle; when no call came since
// it last looked, the idle workers end, else those beyond maxIdleProcs.
// Workers are started when every one is busy (processors blocked on Redis,
// say). A worker waits with a plain receive: a timer per worker, reset per
// call, cost more than the rest of the hand-off.
const (
	maxIdleProcs = 64
	procIdle     = 50 * time.Millisecond // all gone within 0.1 s: inside goleak's ~0.4 s of retries
)

// procCall is one call of a SyncStream's Handle or Close on a worker. A
// syncLink keeps one, reused for each of its calls.
type procCall struct {
	ss    SyncStream
	m     *extprocv3.ProcessingRequest // nil: Close
	queue func(*extprocv3.ProcessingResponse)
	err   error
	// panicked is what Handle or Close panicked with; the caller panics
	// with it again, in the request's goroutine, as if it had run there.
	panicked any
	exited   bool // Handle or Close called runtime.Goexit
	done     chan struct{}
}

// procCalls hands a call, or nil to end, to a waiting worker
// (unbuffered: a send succeeds only if one waits).
var (
	procCalls   = make(chan *procCall)
	procWorkers atomic.Int32 // running
	idleProcs   atomic.Int32 // waiting on procCalls
	procsUsed   atomic.Bool  // a waiting worker took a call since the janitor looked

	janitorMu sync.Mutex
	janitorOn bool
)

// run runs the call on a worker and waits for it.
func (c *procCall) run() {
	if c.done == nil {
		c.done = make(chan struct{})
	}
	select {
	case procCalls <- c:
		if !procsUsed.Load() {
			procsUsed.Store(true)
		}
	default:
		procWorkers.Add(1)
		go procWorker(c)
		startJanitor()
	}
	<-c.done
	if p := c.panicked; p != nil {
		c.panicked = nil
		panic(p)
	}
	if c.exited {
		c.exited = false
		runtime.Goexit()
	}
}

// do makes the call. A panic is recovered, to be raised again by the
// caller; runtime.Goexit (a test's FailNow) ends the worker after waking
// the caller, which exits too.
func (c *procCall) do() {
	returned := false
	defer func() {
		if returned {
			return
		}
		if p := recover(); p != nil {
			c.panicked = p
			return
		}
		c.exited = true
		procWorkers.Add(-1)
		c.done <- struct{}{}
	}()
	if c.m == nil {
		c.ss.Close()
	} else {
		c.err = c.ss.Handle(c.m, c.queue)
	}
	returned = true
}

// procWorker runs c, then the calls handed to it, until it is handed nil.
func procWorker(c *procCall) {
	for c != nil {
		c.do()
		c.done <- struct{}{}
		idleProcs.Add(1)
		c = <-procCalls
		idleProcs.Add(-1)
	}
	procWorkers.Add(-1)
}

func startJanitor() {
	janitorMu.Lock()
	defer janitorMu.Unlock()
	if !janitorOn {
		janitorOn = true
		time.AfterFunc(procIdle, tidyWorkers)
	}
}

// tidyWorkers ends idle workers, and looks again later while any runs.
func tidyWorkers() {
	keep := int32(maxIdleProcs)
	if !procsUsed.Swap(false) {
		keep = 0
	}
retire:
	for idleProcs.Load() > keep {
		select {
		case procCalls <- nil:
		default:
			break retire
		}
	}
	janitorMu.Lock()
	defer janitorMu.Unlock()
	if procWorkers.Load() > 0 {
		time.AfterFunc(procIdle, tidyWorkers)
	} else {
		janitorOn = false
	}
}
