//go:build linux

package h1

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
)

// poller watches the connections of watched requests (watch.go): one epoll
// set and one goroutine for the process, which runs while a connection is
// registered. The epoll set's own descriptor is waited on through Go's
// poller, so the goroutine holds no thread while it waits. Each
// registration is one-shot: an event disables it until it is re-armed, so
// a connection that stays readable cannot make the goroutine spin.
//
// A connection stays registered from its first watch to its end: the next
// watch re-arms it (EPOLL_CTL_MOD), and the end of a watch makes no call
// at all. A registration still armed then fires once when the client sends
// its next request, and the event is dropped (the connection is not
// polling); one epoll_wait hands the poller up to 64 of them. A watched
// request used to cost an EPOLL_CTL_ADD and an EPOLL_CTL_DEL, 5.7 %
// of the gateway's CPU in the rush, where every request waits a second for
// its provider. Closing the connection takes it out of the epoll set.
type poller struct {
	epfd int
	f    *os.File // epfd in Go's poller (never f.Fd(): it would take it out)
	rc   syscall.RawConn

	mu      sync.Mutex
	conns   map[int32]*serverConn // registered, by descriptor
	running bool                  // the goroutine runs

	// The goroutine's: the events of the last epoll_wait, and collect as a
	// func value, made once.
	events  [64]syscall.EpollEvent
	n       int
	collect func(fd uintptr) bool
}

// pollReg is a connection's registration with the poller: the epoll_ctl
// call to make on its descriptor, run through the connection's RawConn
// (Control keeps the descriptor valid meanwhile, so that a connection
// closed by a forced shutdown cannot have its number taken by another).
type pollReg struct {
	op  int // EPOLL_CTL_ADD, _MOD or _DEL
	fd  int32
	err error
	ctl func(fd uintptr) // sc.pollCtl as a func value, made once
	// registered: the connection is in the epoll set (under sc.mu).
	registered bool
}

const pollEvents = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT

var (
	pollerOnce sync.Once
	thePollerP *poller
)

// thePoller is the process's poller; nil when epoll cannot be used.
func thePoller() *poller {
	pollerOnce.Do(func() { thePollerP = newPoller() })
	return thePollerP
}

func newPoller() *poller {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		_ = syscall.Close(epfd)
		return nil
	}
	f := os.NewFile(uintptr(epfd), "edge-watch-epoll")
	// Only a descriptor in Go's poller takes a deadline: without one, the
	// goroutine's wait would hold a thread.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		_ = f.Close()
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil
	}
	p := &poller{epfd: epfd, f: f, rc: rc, conns: map[int32]*serverConn{}}
	p.collect = p.epollWait
	return p
}

// ctl runs epoll_ctl op on sc's connection.
func (p *poller) ctl(sc *serverConn, op int) error {
	r := &sc.preg
	if r.ctl == nil {
		r.ctl = sc.pollCtl
	}
	r.op, r.err = op, nil
	if err := sc.rd.rc.Control(r.ctl); err != nil {
		return err // closed
	}
	return r.err
}

func (sc *serverConn) pollCtl(fd uintptr) {
	r := &sc.preg
	r.fd = int32(fd) //nolint:gosec // descriptors fit
	ev := syscall.EpollEvent{Events: pollEvents, Fd: r.fd}
	epfd := thePollerP.epfd
	r.err = syscall.EpollCtl(epfd, r.op, int(fd), &ev)
	switch {
	case r.op == syscall.EPOLL_CTL_ADD && errors.Is(r.err, syscall.EEXIST):
		r.err = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
	case r.op == syscall.EPOLL_CTL_MOD && errors.Is(r.err, syscall.ENOENT):
		r.err = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	}
}

func (r *pollReg) isRegistered() bool { return r.registered }

// add watches sc's connection (sc.mu held): it registers it, or re-arms
// its registration; false when it cannot.
func (p *poller) add(sc *serverConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	op := syscall.EPOLL_CTL_ADD
	if sc.preg.registered {
		op = syscall.EPOLL_CTL_MOD
	}
	if err := p.ctl(sc, op); err != nil {
		return false
	}
	sc.preg.registered = true
	p.conns[sc.preg.fd] = sc
	if !p.running {
		p.running = true
		_ = p.f.SetReadDeadline(time.Time{})
		go p.run()
	}
	return true
}

// rearm watches sc's connection again after an event that was not one
// (sc.mu held).
func (p *poller) rearm(sc *serverConn) {
	_ = p.ctl(sc, syscall.EPOLL_CTL_MOD)
}

// forget takes sc's connection out of the poller at its end (sc.mu held):
// del takes it out of the epoll set, which closing the connection does
// otherwise. The goroutine ends when no connection is left.
func (p *poller) forget(sc *serverConn, del bool) {
	if !sc.preg.registered {
		return
	}
	sc.preg.registered = false
	if del {
		_ = p.ctl(sc, syscall.EPOLL_CTL_DEL)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[sc.preg.fd] == sc {
		delete(p.conns, sc.preg.fd)
	}
	if len(p.conns) == 0 && p.running {
		_ = p.f.SetReadDeadline(aLongTimeAgo) // wakes the goroutine, which ends
	}
}

// run waits for events and hands each to its connection's watch, until
// nothing is left to watch.
func (p *poller) run() {
	for {
		err := p.rc.Read(p.collect)
		if err == nil {
			for _, ev := range p.events[:p.n] {
				p.mu.Lock()
				sc := p.conns[ev.Fd]
				p.mu.Unlock()
				if sc != nil {
					sc.polled()
				}
			}
			continue
		}
		p.mu.Lock()
		if len(p.conns) > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			_ = p.f.SetReadDeadline(time.Time{}) // registered again since
			p.mu.Unlock()
			continue
		}
		p.running = false
		p.mu.Unlock()
		return
	}
}

// epollWait takes the events that are ready, without waiting; false when
// there are none (the goroutine then waits for the set to be readable).
func (p *poller) epollWait(fd uintptr) bool {
	for {
		n, err := syscall.EpollWait(int(fd), p.events[:], 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		p.n = max(n, 0)
		return p.n > 0
	}
}
