package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Client forwards the common request of a plain-text HTTP/1.1 cluster: a
// body that the filter released whole, serialised by the exchange into one
// buffer (wireRequest). It runs in the caller's goroutine: one write, and the
// response head parsed from the connection by the caller (headParser, with
// ReadResponse's rules), with no reader or writer goroutine and no channel in between
// (Go's http.Transport has both, and on a small machine they cost more than
// the rest of the exchange). Streamed request bodies, TLS and HTTP/2 go
// through the cluster's http.Transport.
type Client struct {
	// dial opens a connection; it is bound by its own timeout, and a
	// request that ends first leaves it (dialApart).
	dial func() (net.Conn, error)
	// slots bounds the open connections (max_connections); nil: no bound.
	slots chan struct{}
	// returned wakes a request waiting for a slot when a connection goes
	// back to the pool.
	returned chan struct{}

	// maxIdle bounds the idle connections kept: the cluster's
	// max_connections, as Envoy keeps every connection until its idle
	// timeout (MaxIdleConns without a bound).
	maxIdle int

	mu     sync.Mutex
	idle   []*h1Conn // most recently used last
	closed bool
}

// h1Conn is one upstream connection.
type h1Conn struct {
	net.Conn
	// br is the read buffer from the response's first byte to its end; nil
	// in the pool, and while the response is awaited when rd can wait
	// without it.
	br       *bufio.Reader
	rd       readiness
	nread    int64 // bytes read from the connection so far
	limit    int64 // while > 0, reads stop at nread == limit (response heads)
	hp       headParser
	lastUsed time.Time
	cl       *Client
}

// MaxIdleConns bounds the idle connections of a Client without
// max_connections (the cluster's http.Transport keeps as many per host).
// A lower bound than the connections in use costs a dial per connection
// over it whenever responses come back together: in the rush (5,000
// requests answered after a second, in waves), a bound of 1,024 closed the
// connection of 5-14 % of the responses, and dialled as many for the next
// requests.
const MaxIdleConns = 1024

// maxResponseHead bounds a response's status line and headers, as
// http.Transport's MaxResponseHeaderBytes does by default.
const maxResponseHead = 1 << 20

var errResponseHeadTooLarge = errors.New("edge: upstream response headers too large")

func (c *h1Conn) Read(p []byte) (int, error) {
	if c.limit > 0 {
		if c.nread >= c.limit {
			return 0, errResponseHeadTooLarge
		}
		if left := c.limit - c.nread; int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := c.Conn.Read(p)
	c.nread += int64(n)
	return n, err
}

// aLongTimeAgo is a deadline in the past: it makes a blocked read or write
// return at once.
var aLongTimeAgo = time.Unix(1, 0)

// MaxSerialised bounds the requests Client takes: larger bodies are
// streamed by http.Transport rather than copied into one buffer.
const MaxSerialised = 1 << 20

// idleConnTimeout: a pooled connection unused this long is closed rather
// than reused (http.Transport's IdleConnTimeout in the cluster).
const idleConnTimeout = 90 * time.Second

var reqBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func NewClient(dial func() (net.Conn, error), maxConns int) *Client {
	c := &Client{dial: dial, maxIdle: MaxIdleConns}
	if maxConns > 0 {
		c.maxIdle = maxConns
		c.slots = make(chan struct{}, maxConns)
		c.returned = make(chan struct{}, 1)
	}
	return c
}

func GetRequestBuffer() *bytes.Buffer {
	buf := reqBufs.Get().(*bytes.Buffer)
	buf.Reset()
	return buf
}

func PutRequestBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		reqBufs.Put(buf)
	}
}

// Requests standing for the common methods in a response (readResponse reads
// only the method; the Response points at them).
var (
	postRequest = &http.Request{Method: http.MethodPost}
	getRequest  = &http.Request{Method: http.MethodGet}
)

// MethodRequest is a request of method for a response.
func MethodRequest(method string) *http.Request {
	switch method {
	case http.MethodPost:
		return postRequest
	case http.MethodGet:
		return getRequest
	}
	return &http.Request{Method: method}
}

// do sends wire, a serialised request, and returns its response; req is
// what the response is for (its method decides whether a body follows). The
// response body must be read to the end or closed; the connection goes back
// to the pool at its end. Firing ab makes a blocked write or read return:
// the caller fires it when it cancels ctx (ctx bounds the wait for a
// connection and the dial).
func (t *Client) Do(ctx context.Context, req *http.Request, wire []byte, ab *Abort) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		c, reused, err := t.get(ctx, attempt > 0)
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(ctx, c, req, wire, ab)
		if err == nil {
			return resp, nil
		}
		// A pooled connection the server closed while it was idle fails
		// before any byte of a response arrives: the request was not
		// processed, so it goes again once, on a new connection (the
		// other pooled ones may be as stale, after a restart of the
		// upstream), as http.Transport does for a rewindable body.
		if reused && attempt == 0 && ctx.Err() == nil && staleConn(err) {
			continue
		}
		return nil, err
	}
}

// exchange writes the serialised request on c and reads the response
// headers. On error c is closed.
func (t *Client) exchange(ctx context.Context, c *h1Conn, req *http.Request, wire []byte, ab *Abort) (*http.Response, error) {
	if !ab.arm(c) {
		t.put(c) // untouched
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		return nil, context.Canceled
	}
	before := c.nread
	if _, err := c.Write(wire); err != nil {
		ab.disarm()
		t.discard(c)
		return nil, staleIf(err, c.nread == before)
	}
	if ab.Written != nil {
		ab.Written.RequestWritten()
	}
	if c.br == nil {
		// The response's first byte (or the end of the connection) is
		// awaited without a buffer: at 5,000 requests waiting a second for
		// their provider, the buffers were 20 MiB.
		if err := c.rd.wait(); err != nil && !errors.Is(err, errCannotWait) {
			ab.disarm()
			t.discard(c)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, err
		}
		c.br = upstreamReaders.Get().(*bufio.Reader) //nolint:forcetypeassert // the pool holds only these
		c.br.Reset(c)
	}
	c.limit = c.nread + maxResponseHead
	h, err := c.hp.readResponse(c.br, req.Method)
	for err == nil && h.status >= 100 && h.status < 200 {
		// Informational responses (103 Early Hints) are not forwarded.
		h, err = c.hp.readResponse(c.br, req.Method)
	}
	c.hp.release()
	c.limit = 0
	if err != nil {
		ab.disarm()
		t.discard(c)
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, staleIf(err, c.nread == before)
	}
	resp := h.response(req, c.br)
	resp.Body = &Body{rc: resp.Body, c: c, ab: ab, keep: !resp.Close, fields: h.fields}
	return resp, nil
}

// errStale marks a failure on a reused connection before any response byte.
type errStale struct{ error }

func (e errStale) Unwrap() error { return e.error }

func staleIf(err error, nothingRead bool) error {
	if nothingRead && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		return errStale{err}
	}
	return err
}

func staleConn(err error) bool {
	var s errStale
	return errors.As(err, &s)
}

// get returns an idle connection (reused) or, when there is none or fresh is
// set, a new one.
func (t *Client) get(ctx context.Context, fresh bool) (*h1Conn, bool, error) {
	now := time.Now()
	t.mu.Lock()
	for !fresh && len(t.idle) > 0 {
		c := t.idle[len(t.idle)-1]
		t.idle = t.idle[:len(t.idle)-1]
		if now.Sub(c.lastUsed) > idleConnTimeout {
			t.mu.Unlock()
			t.discard(c)
			t.mu.Lock()
			continue
		}
		t.mu.Unlock()
		return c, true, nil
	}
	t.mu.Unlock()
	if t.slots != nil {
		if c, err := t.waitSlot(ctx); c != nil || err != nil {
			return c, c != nil, err
		}
	}
	conn, err := t.dialApart(ctx)
	if err != nil {
		t.freeSlot()
		return nil, false, err
	}
	c := &h1Conn{Conn: conn, cl: t}
	c.rd.init(conn)
	return c, false, nil
}

// waitSlot takes a connection slot (max_connections), or an idle connection
// that came back to the pool while it waited.
func (t *Client) waitSlot(ctx context.Context) (*h1Conn, error) {
	for {
		select {
		case t.slots <- struct{}{}:
			return nil, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		default:
		}
		if c, ok := t.popIdle(); ok {
			return c, nil
		}
		select {
		case t.slots <- struct{}{}:
			return nil, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-t.returned:
		}
	}
}

func (t *Client) popIdle() (*h1Conn, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.idle); n > 0 {
		c := t.idle[n-1]
		t.idle = t.idle[:n-1]
		return c, true
	}
	return nil, false
}

// upstreamReaders are the buffers upstream responses are read through. A
// connection holds one from its response's first byte to its end, and none
// while it waits in the pool (4 KiB each: 4 MiB over 1,000 connections).
var upstreamReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// put returns a connection whose last response was read to its end (its
// reader holds nothing more).
func (t *Client) put(c *h1Conn) {
	if c.br != nil && c.br.Buffered() == 0 {
		c.br.Reset(nil)
		upstreamReaders.Put(c.br)
		c.br = nil
	}
	c.lastUsed = time.Now()
	t.mu.Lock()
	if !t.closed && len(t.idle) < t.maxIdle {
		t.idle = append(t.idle, c)
		expired := t.expiredLocked(c.lastUsed)
		t.mu.Unlock()
		for _, old := range expired {
			t.discard(old)
		}
		if t.returned != nil {
			select {
			case t.returned <- struct{}{}:
			default:
			}
		}
		return
	}
	t.mu.Unlock()
	t.discard(c)
}

// expiredLocked takes the pooled connections unused for idleConnTimeout
// out of the pool and returns them (t.mu held). They are the least recently
// used, at the start of the pool: without this, a pool that grew in a burst
// would keep the connections it no longer needs open for ever (get looks
// only at the most recently used ones). Usually it finds none and costs one
// comparison.
func (t *Client) expiredLocked(now time.Time) []*h1Conn {
	n := 0
	for n < len(t.idle) && now.Sub(t.idle[n].lastUsed) > idleConnTimeout {
		n++
	}
	if n == 0 {
		return nil
	}
	expired := slices.Clone(t.idle[:n])
	m := copy(t.idle, t.idle[n:])
	clear(t.idle[m:])
	t.idle = t.idle[:m]
	return expired
}

func (t *Client) discard(c *h1Conn) {
	_ = c.Close()
	t.freeSlot()
}

func (t *Client) freeSlot() {
	if t.slots != nil {
		<-t.slots
	}
}

// CloseIdleConnections closes the pooled connections; later responses close
// theirs at their end.
func (t *Client) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.closed = nil, true
	t.mu.Unlock()
	for _, c := range idle {
		t.discard(c)
	}
}

// Body is a response body; its end gives the connection back.
type Body struct {
	// fields are the response's header fields (its Header is nil), names
	// lower-cased, in order.
	fields Fields
	rc     io.ReadCloser
	c      *h1Conn
	ab     *Abort
	keep   bool // the connection may carry another request
	done   bool
}

// Fields are the response's header fields, names lower-cased, in order (the
// http.Response's Header is nil).
func (b *Body) Fields() Fields { return b.fields }

func (b *Body) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err != nil {
		b.end(errors.Is(err, io.EOF))
	}
	return n, err
}

// Close ends the body; a body not read to its end costs the connection.
func (b *Body) Close() error {
	if !b.done {
		b.end(false)
	}
	return nil
}

func (b *Body) end(complete bool) {
	b.done = true
	// disarm is false when the request's cancellation already set a
	// deadline in the past on the connection: it cannot be reused.
	if b.ab.disarm() && complete && b.keep && b.c.br.Buffered() == 0 {
		b.c.cl.put(b.c)
		return
	}
	b.c.cl.discard(b.c)
}
