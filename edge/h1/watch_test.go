package h1

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/h1/h1test"
)

// connsWhere counts the server's connections for which f holds (under
// their mu).
func connsWhere(s *Server, f func(sc *serverConn) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for sc := range s.conns {
		sc.mu.Lock()
		if f(sc) {
			n++
		}
		sc.mu.Unlock()
	}
	return n
}

func polled(sc *serverConn) bool { return sc.polling }

// watchWays runs f with the poller (where there is one) and with a
// goroutine per watch; viaPoller says which.
func watchWays(t *testing.T, f func(t *testing.T, viaPoller bool)) {
	t.Run("poller", func(t *testing.T) { f(t, thePoller() != nil) })
	t.Run("goroutines", func(t *testing.T) {
		noPoller.Store(true)
		t.Cleanup(func() { noPoller.Store(false) })
		f(t, false)
	})
}

// Requests that run past watchAfter are watched by the poller, with no
// goroutine of their own, and every one is cancelled when its client goes
// away.
func TestH1WatchManyRequestsWithoutGoroutines(t *testing.T) {
	watchWays(t, testWatchMany)
}

func testWatchMany(t *testing.T, viaPoller bool) {
	const n = 40
	causes := make(chan error, n)
	s, addr := startH1(t, func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			causes <- context.Cause(r.Context())
		case <-time.After(10 * time.Second):
			causes <- nil
		}
	})
	base := runtime.NumGoroutine()
	conns := make([]*h1test.Conn, n)
	for i := range conns {
		conns[i] = h1test.Dial(t, addr)
		conns[i].Send(t, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx")
	}
	if viaPoller {
		require.Eventually(t, func() bool { return connsWhere(s, polled) == n }, 5*time.Second, 10*time.Millisecond,
			"every request is watched by the poller")
		// One goroutine per connection, the poller's, and the handlers'
		// timers' at most: no goroutine per watch.
		require.LessOrEqual(t, runtime.NumGoroutine()-base, n+3)
	} else {
		require.Eventually(t, func() bool {
			return connsWhere(s, func(sc *serverConn) bool { return sc.watching != notWatched }) == n
		}, 5*time.Second, 10*time.Millisecond)
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
	for range n {
		require.ErrorIs(t, <-causes, ErrClientGone)
	}
	if p := thePoller(); viaPoller {
		require.Eventually(t, func() bool { return pollerIdle(p) },
			5*time.Second, 10*time.Millisecond, "the poller's goroutine ends with the last watch")
	}
}

// A watched request whose client sends its next request is not cancelled:
// the watch ends, and the next request is served after it.
func TestH1WatchNextRequestIsNotGone(t *testing.T) {
	watchWays(t, testWatchNextRequest)
}

func testWatchNextRequest(t *testing.T, viaPoller bool) {
	proceed := make(chan struct{})
	first := make(chan error, 1)
	s, addr := startH1(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			<-proceed
			first <- r.Context().Err()
		}
		_, _ = w.Write([]byte(r.URL.Path))
	})
	c := h1test.Dial(t, addr)
	c.Send(t, "GET /first HTTP/1.1\r\nHost: a\r\n\r\n")
	require.Eventually(t, func() bool {
		return connsWhere(s, func(sc *serverConn) bool { return sc.watching != notWatched }) == 1
	}, 5*time.Second, 10*time.Millisecond)
	c.Send(t, "GET /second HTTP/1.1\r\nHost: a\r\n\r\n")
	if viaPoller {
		require.Eventually(t, func() bool {
			return connsWhere(s, func(sc *serverConn) bool { return sc.watching == watchPoller && !sc.polling }) == 1
		}, 5*time.Second, 10*time.Millisecond, "the poller saw the next request and stopped watching")
	}
	close(proceed)
	require.NoError(t, <-first)
	_, body := c.Response(t, "GET")
	require.Equal(t, "/first", body)
	_, body = c.Response(t, "GET")
	require.Equal(t, "/second", body)
}

// A connection holds no read buffer while its handler runs after reading
// the body, nor while it waits for its next request.
func TestH1ServerHoldsNoReadBufferWhileWaiting(t *testing.T) {
	held := make(chan bool, 2)
	s, addr := startH1(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rw := w.(*Response) //nolint:forcetypeassert // the server's
		rw.sc.mu.Lock()
		held <- rw.sc.br != nil
		rw.sc.mu.Unlock()
		_, _ = w.Write(b)
	})
	c := h1test.Dial(t, addr)
	c.Send(t, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
	_, body := c.Response(t, "POST")
	require.Equal(t, "hello", body)
	require.False(t, <-held, "the body was read: no buffer while the handler runs")
	c.Send(t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	_, _ = c.Response(t, "GET")
	require.False(t, <-held, "no body: no buffer while the handler runs")
	require.Eventually(t, func() bool {
		return connsWhere(s, func(sc *serverConn) bool { return sc.br == nil && !sc.active }) == 1
	}, 5*time.Second, 10*time.Millisecond, "no buffer while waiting for the next request")
}
