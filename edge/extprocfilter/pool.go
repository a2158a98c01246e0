package extprocfilter

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// A Stream is reused from one request to the next: its owner gives it back
// with Release once it will not touch it again, and the next Start takes
// it. A released Stream keeps nothing of its request (the header lists,
// bodies and results it handed out are its caller's), only its stopped
// message timer and its in-call link; a Sync message's scratch is taken
// only while the message is built and handled, so a request waiting for
// its upstream holds none.
//
// Nothing may touch a Stream once it went back: its owner's calls, and a
// Close from another goroutine (an HTTP stream reset), must all have
// returned before Release. Under the race detector (and in tests that ask
// for it) a released Stream is not reused but poisoned: any later call,
// Close included, panics with errReleased. Under the race detector that
// panic is raised on a goroutine of its own, which ends the process: the
// data plane's tests, run with -race, fail on a use after Release even
// where the HTTP server would recover the handler's panic.

// errReleased is the panic of a call on a released Stream.
var errReleased = errors.New("extprocfilter: Stream used after Release")

var streams = sync.Pool{New: func() any { return new(Stream) }}

// poisonReleased: released Streams are poisoned rather than reused;
// recoverable: a use of one panics in the caller's goroutine only.
var poisonReleased, recoverable atomic.Bool

func init() { poisonReleased.Store(raceEnabled) }

// noCancel is the cancel function of a Stream without a context of its own.
func noCancel() {}

func getStream() *Stream {
	s := streams.Get().(*Stream)
	s.released = false
	return s
}

// Release closes s (Close) and gives it back, to be reused by a later
// Start. It is the owner's last use of s: no call of s, and no Close from
// another goroutine, may be running or come afterwards.
func (s *Stream) Release() {
	s.Close()
	s.mu.Lock()
	s.checkLive()
	s.released = true
	s.mu.Unlock()
	if poisonReleased.Load() {
		return
	}
	s.recycle()
	streams.Put(s)
}

// checkLive panics when s was released; under s.mu.
func (s *Stream) checkLive() {
	if s.released {
		usedAfterRelease()
	}
}

// usedAfterRelease panics with errReleased: under the race detector on a
// goroutine of its own, ending the process, unless recoverable.
func usedAfterRelease() {
	if raceEnabled && !recoverable.Load() {
		stack := debug.Stack()
		done := make(chan struct{})
		go func() {
			defer close(done)
			panic(fmt.Sprintf("%v, at:\n%s", errReleased, stack))
		}()
		<-done
	}
	panic(errReleased)
}

// recycle empties a released Stream for its next request, keeping its
// stopped timer and its in-call link (closed: closeSend emptied it).
func (s *Stream) recycle() {
	*s = Stream{timer: s.timer, syncL: s.syncL, released: true, cancel: noCancel}
}

// msgScratch is the scratch the next Sync message is built in, taken for
// it and given back by handled.
func (s *Stream) msgScratch() *scratch {
	if s.msg == nil {
		s.msg = getScratch()
	}
	return s.msg
}

// handled gives back the scratch of the message just sent: a Sync
// processor keeps nothing of it once Handle returned (nor does a closed
// stream, which sent nothing).
func (s *Stream) handled() {
	if s.msg != nil {
		putScratch(s.msg)
		s.msg = nil
	}
}
