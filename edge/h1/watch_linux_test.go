//go:build linux

package h1

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/h1/h1test"
)

// pollerIdle: no connection is registered and the poller's goroutine ended.
func pollerIdle(p *poller) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.running && len(p.conns) == 0
}

// A connection stays in the poller's epoll set between its watched
// requests (the next watch re-arms it, the end of a watch makes no call),
// its next watch still sees the client go away, and its end takes it out.
func TestH1WatchRegistrationOutlivesTheRequest(t *testing.T) {
	p := thePoller()
	release := make(chan struct{})
	causes := make(chan error, 2)
	s, addr := startH1(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			causes <- context.Cause(r.Context())
			return
		case <-release:
		}
		causes <- nil
		_, _ = w.Write([]byte("ok"))
	})
	registered := func(sc *serverConn) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return sc.preg.registered && p.conns[sc.preg.fd] == sc
	}
	c := h1test.Dial(t, addr)
	c.Send(t, "POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx")
	require.Eventually(t, func() bool { return connsWhere(s, polled) == 1 }, 5*time.Second, 10*time.Millisecond)
	release <- struct{}{}
	require.NoError(t, <-causes)
	_, body := c.Response(t, "POST")
	require.Equal(t, "ok", body)
	// The response goes out before the watch ends.
	require.Eventually(t, func() bool { return connsWhere(s, func(sc *serverConn) bool { return sc.stopping }) == 1 },
		5*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, connsWhere(s, func(sc *serverConn) bool { return !sc.polling && registered(sc) }),
		"the watch ended without taking the connection out of the epoll set")

	c.Send(t, "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx")
	require.Eventually(t, func() bool { return connsWhere(s, polled) == 1 }, 5*time.Second, 10*time.Millisecond,
		"the second request is watched again")
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-causes, ErrClientGone)
	require.Eventually(t, func() bool { return pollerIdle(p) },
		5*time.Second, 10*time.Millisecond, "the connection's end takes it out of the poller, whose goroutine ends")
}
