package admin

import (
	"bufio"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// sniffTimeout bounds the wait for a new connection's first bytes.
const sniffTimeout = 10 * time.Second

// Port splits the admin port's listener in two by what each connection sends
// first: the HTTP/2 client preface (what every gRPC client sends, in clear
// text with prior knowledge) goes to GRPC, anything else (HTTP/1.1: curl, the
// browser) goes to HTTP. One address then serves the gRPC API, the REST API
// and the console, and the gRPC server keeps its own transport (grpc.Server.Serve).
type Port struct {
	GRPC, HTTP net.Listener

	root      net.Listener
	closeOnce sync.Once
	done      chan struct{}
}

// SplitPort starts accepting on l and returns its two halves. Closing either
// half closes l and both halves.
func SplitPort(l net.Listener) *Port {
	p := &Port{root: l, done: make(chan struct{})}
	grpcCh, httpCh := make(chan net.Conn), make(chan net.Conn)
	p.GRPC = &subListener{p: p, ch: grpcCh}
	p.HTTP = &subListener{p: p, ch: httpCh}
	go p.accept(grpcCh, httpCh)
	return p
}

func (p *Port) accept(grpcCh, httpCh chan net.Conn) {
	for {
		c, err := p.root.Accept()
		if err != nil {
			_ = p.close()
			return
		}
		go p.route(c, grpcCh, httpCh)
	}
}

// route reads as much of the connection's first bytes as it takes to tell the
// HTTP/2 preface from anything else, and hands the connection on.
func (p *Port) route(c net.Conn, grpcCh, httpCh chan net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	br := bufio.NewReaderSize(c, len(http2.ClientPreface))
	ch := grpcCh
	for i := 1; i <= len(http2.ClientPreface); i++ {
		b, err := br.Peek(i)
		if err != nil {
			_ = c.Close()
			return
		}
		if b[i-1] != http2.ClientPreface[i-1] {
			ch = httpCh
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	select {
	case ch <- &peekedConn{Conn: c, r: br}:
	case <-p.done:
		_ = c.Close()
	}
}

func (p *Port) close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.done)
		err = p.root.Close()
	})
	return err
}

// subListener is one half of a Port.
type subListener struct {
	p  *Port
	ch chan net.Conn
}

func (l *subListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.p.done:
		return nil, net.ErrClosed
	}
}

func (l *subListener) Close() error   { return l.p.close() }
func (l *subListener) Addr() net.Addr { return l.p.root.Addr() }

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(b []byte) (int, error) { return c.r.Read(b) }
