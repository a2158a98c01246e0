package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const hexDigits = "0123456789abcdef"

// requestTimeout bounds one request, its redial included.
const requestTimeout = 60 * time.Second

// target is where the requests go: a TCP address and the request bytes,
// built once.
type target struct {
	addr string
	wire []byte // the whole request: head and body, written with one write
	// numAt, seq: with -unique, each request writes the next number of seq
	// in hexadecimal at wire[numAt:] (uniqueDigits wide); numAt < 0: none.
	numAt, bodyLen int
	seq            *atomic.Uint64
}

// numbered makes every request write its own number at the body's offset
// at (withUnique), counting from start: a start taken from the clock keeps
// one run's numbers apart from the last run's against the same gateway.
func (t *target) numbered(at int, start uint64) {
	t.numAt = len(t.wire) - t.bodyLen + at
	t.seq = new(atomic.Uint64)
	t.seq.Store(start)
}

// newTarget builds the request of method and path (appended to base's path)
// with the body, the bearer key when set, and Content-Length.
func newTarget(base, method, path, key string, body []byte) (target, error) {
	u, err := url.Parse(base)
	if err != nil {
		return target{}, fmt.Errorf("url: %w", err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return target{}, fmt.Errorf("url %q: only http://host[:port] targets are supported", base)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	var b strings.Builder
	b.WriteString(method + " " + strings.TrimSuffix(u.EscapedPath(), "/") + path + " HTTP/1.1\r\n")
	b.WriteString("Host: " + u.Host + "\r\n")
	b.WriteString("Content-Type: application/json\r\n")
	if key != "" {
		b.WriteString("Authorization: Bearer " + key + "\r\n")
	}
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.Write(body)
	return target{addr: addr, wire: []byte(b.String()), numAt: -1, bodyLen: len(body)}, nil
}

// client sends a target's request over one kept-alive connection, redialling
// when the server closes it. A client is used by one goroutine; Shutdown may
// be called from any.
type client struct {
	tgt    target
	check  func(response) error
	dialer net.Dialer

	mu   sync.Mutex // guards assignments to nc, and shut
	nc   net.Conn   // nil: dial before the next request
	shut bool

	rd     *reader
	reused bool // nc has served a response
}

func newClient(tgt target, check func(response) error) *client {
	if tgt.numAt >= 0 {
		tgt.wire = slices.Clone(tgt.wire) // this client's numbers
	}
	return &client{tgt: tgt, check: check, dialer: net.Dialer{Timeout: 5 * time.Second}, rd: newReader(nil)}
}

// do sends the request and reads and checks its response. A kept-alive
// connection that turns out closed before any response byte is redialled
// once, as HTTP clients do.
func (c *client) do(ctx context.Context) error {
	deadline := time.Now().Add(requestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for retried := false; ; retried = true {
		if c.nc == nil {
			if err := c.dial(ctx); err != nil {
				return err
			}
		}
		reused := c.reused
		_ = c.nc.SetDeadline(deadline)
		resp, err := c.exchange()
		if err != nil {
			c.drop()
			if reused && !retried && stale(err) {
				continue
			}
			return err
		}
		c.reused = true
		if resp.close {
			c.drop()
		}
		return c.check(resp)
	}
}

func (c *client) exchange() (response, error) {
	if t := &c.tgt; t.numAt >= 0 {
		n := t.seq.Add(1)
		d := t.wire[t.numAt : t.numAt+uniqueDigits]
		for i := len(d) - 1; i >= 0; i-- {
			d[i] = hexDigits[n&15]
			n >>= 4
		}
	}
	if _, err := c.nc.Write(c.tgt.wire); err != nil {
		return response{}, fmt.Errorf("%w: write: %w", errNoResponse, err)
	}
	return c.rd.read()
}

func (c *client) dial(ctx context.Context) error {
	nc, err := c.dialer.DialContext(ctx, "tcp", c.tgt.addr)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		_ = nc.Close()
		return net.ErrClosed
	}
	c.nc, c.reused = nc, false
	c.rd.reset(nc)
	return nil
}

// drop closes the connection; the next request dials a new one.
func (c *client) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		_ = c.nc.Close()
		c.nc = nil
	}
}

// Shutdown closes the connection, ending a request in flight, and stops
// redials.
func (c *client) Shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shut = true
	if c.nc != nil {
		_ = c.nc.Close()
	}
}

// stale reports an error that says nothing of the server but that it had
// closed a kept-alive connection.
func stale(err error) bool { return errors.Is(err, errNoResponse) }

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
