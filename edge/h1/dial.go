package h1

import (
	"context"
	"net"
)

// dialed is the outcome of a dial made apart.
type dialed struct {
	conn net.Conn
	err  error
}

// dialApart dials on a goroutine of its own and waits for it, or for ctx to
// end (the dial then finishes alone and its connection is closed). net's
// dial is the deepest call a request makes (about 3.2 KB of frames under
// the exchange), and made on the request's goroutine it grew that stack
// from 4 to 8 KiB for good: a request waiting for its provider uses too
// much of an 8 KiB stack for the collector to shrink it back. With 5,000
// connections that is 20 MiB of stacks, counted twice in the heap goal
// (GOGC covers stacks). A dial is rare (a new upstream connection); the
// goroutine costs about a microsecond next to the connect.
func (t *Client) dialApart(ctx context.Context) (net.Conn, error) {
	ch := make(chan dialed, 1)
	go func() { ch <- dial(t.dial) }()
	select {
	case d := <-ch:
		return d.conn, d.err
	case <-ctx.Done():
		go func() {
			if d := <-ch; d.conn != nil {
				_ = d.conn.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

func dial(f func() (net.Conn, error)) dialed {
	c, err := f()
	return dialed{c, err}
}
