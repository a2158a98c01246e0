package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawUpstream serves each connection with serve; it counts connections.
type rawUpstream struct {
	lis   net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
}

func startRaw(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *rawUpstream {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &rawUpstream{lis: lis}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			u.conns.Add(1)
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				defer func() { _ = c.Close() }()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() { _ = lis.Close(); u.wg.Wait() })
	return u
}

func (u *rawUpstream) client(maxConns int) *Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	addr := u.lis.Addr().String()
	return NewClient(func() (net.Conn, error) { return d.Dial("tcp", addr) }, maxConns)
}

// reply answers every request on the connection with body, n times, then
// closes the connection.
func reply(body string, n int) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, br *bufio.Reader) {
		for range n {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			resp := &http.Response{
				StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, ContentLength: int64(len(body)),
				Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{},
			}
			if err := resp.Write(c); err != nil {
				return
			}
		}
	}
}

func h1Post(t *testing.T, ctx context.Context, c *Client, body string) (*http.Response, error) {
	t.Helper()
	// As an exchange does when it cancels its upstream context.
	ab := new(Abort)
	stop := context.AfterFunc(ctx, ab.Fire)
	t.Cleanup(func() { stop() })
	return h1PostAbort(t, ctx, c, body, ab)
}

// h1PostAbort is h1Post with the abort the caller fires.
func h1PostAbort(t *testing.T, ctx context.Context, c *Client, body string, ab *Abort) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://upstream/v1/x", strings.NewReader(body))
	require.NoError(t, err)
	var wire bytes.Buffer
	require.NoError(t, req.Write(&wire))
	return c.Do(ctx, req, wire.Bytes(), ab)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(b)
}

func TestH1ClientReusesConnections(t *testing.T) {
	u := startRaw(t, reply("pong", 100))
	c := u.client(0)
	defer c.CloseIdleConnections()
	for range 10 {
		resp, err := h1Post(t, context.Background(), c, `{"a":1}`)
		require.NoError(t, err)
		require.Equal(t, "pong", readAll(t, resp))
	}
	require.EqualValues(t, 1, u.conns.Load())
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Len(t, c.idle, 1)
	require.Nil(t, c.idle[0].br, "a pooled connection keeps its read buffer")
}

// A body closed before its end costs its connection, never the next
// request's response.
func TestH1ClientUnreadBodyDropsConnection(t *testing.T) {
	u := startRaw(t, reply(strings.Repeat("x", 10000), 100))
	c := u.client(0)
	defer c.CloseIdleConnections()
	resp, err := h1Post(t, context.Background(), c, "a")
	require.NoError(t, err)
	buf := make([]byte, 10)
	_, err = io.ReadFull(resp.Body, buf)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	resp, err = h1Post(t, context.Background(), c, "b")
	require.NoError(t, err)
	require.Len(t, readAll(t, resp), 10000)
	require.EqualValues(t, 2, u.conns.Load())
}

// The server closes each connection after one response: the pooled
// connection is stale, and the request goes again on a new one.
func TestH1ClientRetriesStaleConnection(t *testing.T) {
	u := startRaw(t, reply("ok", 1))
	c := u.client(0)
	defer c.CloseIdleConnections()
	for range 5 {
		resp, err := h1Post(t, context.Background(), c, "hello")
		require.NoError(t, err)
		require.Equal(t, "ok", readAll(t, resp))
		time.Sleep(5 * time.Millisecond) // let the close arrive
	}
	require.EqualValues(t, 5, u.conns.Load())
}

// A response that breaks off after its first byte is an error, not a retry.
func TestH1ClientNoRetryAfterResponseStarted(t *testing.T) {
	u := startRaw(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Le")
		}
	})
	c := u.client(0)
	_, err := h1Post(t, context.Background(), c, "x")
	require.Error(t, err)
	require.EqualValues(t, 1, u.conns.Load())
}

// Cancelling the request context unblocks a request waiting for its
// response, with the cancellation's cause.
func TestH1ClientCancel(t *testing.T) {
	release := make(chan struct{})
	u := startRaw(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = http.ReadRequest(br)
		<-release
	})
	defer close(release)
	c := u.client(0)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("timeout of the route")
	time.AfterFunc(20*time.Millisecond, func() { cancel(cause) })
	_, err := h1Post(t, ctx, c, "x")
	require.ErrorIs(t, err, cause)
}

// max_connections bounds the open connections; waiting requests take the
// connections that come back.
func TestH1ClientMaxConnections(t *testing.T) {
	var open, peak atomic.Int64
	u := startRaw(t, func(c net.Conn, br *bufio.Reader) {
		n := open.Add(1)
		defer open.Add(-1)
		for {
			if p := peak.Load(); n > p {
				peak.CompareAndSwap(p, n)
			}
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			time.Sleep(2 * time.Millisecond)
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	})
	c := u.client(2)
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			resp, err := h1Post(t, context.Background(), c, "x")
			if !assertNoErr(t, err) {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		})
	}
	wg.Wait()
	require.LessOrEqual(t, u.conns.Load(), int64(2))
	require.LessOrEqual(t, peak.Load(), int64(2))
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// Chunked responses and their trailers come through.
func TestH1ClientChunkedTrailers(t *testing.T) {
	u := startRaw(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Cost\r\n\r\n"+
				"5\r\nhello\r\n6\r\n world\r\n0\r\nX-Cost: 42\r\n\r\n")
		}
	})
	c := u.client(0)
	defer c.CloseIdleConnections()
	resp, err := h1Post(t, context.Background(), c, "x")
	require.NoError(t, err)
	require.EqualValues(t, -1, resp.ContentLength)
	require.Equal(t, "hello world", readAll(t, resp))
	require.Equal(t, "42", resp.Trailer.Get("X-Cost"))
}

// The response's fields come in order with lower-case names beside a nil
// Header; framing fields are consumed.
func TestH1ClientResponseFields(t *testing.T) {
	u := startRaw(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 201 Created\r\nX-B: 1\r\nContent-Type: text/plain\r\nx-a: 2\r\n"+
				"Content-Length: 2\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	c := u.client(0)
	defer c.CloseIdleConnections()
	resp, err := h1Post(t, context.Background(), c, "x")
	require.NoError(t, err)
	require.Equal(t, 201, resp.StatusCode)
	require.Equal(t, "201 Created", resp.Status)
	require.Nil(t, resp.Header)
	require.Equal(t, fieldsOf("x-b", "1", "content-type", "text/plain", "x-a", "2", "content-length", "2"),
		resp.Body.(*Body).fields)
	require.Equal(t, "ok", readAll(t, resp))
}

// fieldsOf is a field list from name, value pairs.
func fieldsOf(kv ...string) Fields {
	var h Fields
	for i := 0; i < len(kv); i += 2 {
		h = append(h, Field{Key: kv[i], Value: kv[i+1]})
	}
	return h
}

// After the upstream restarts, every pooled connection is stale: the retry
// takes a new connection instead of the next stale one.
func TestH1ClientAllPooledConnectionsStale(t *testing.T) {
	u := startRaw(t, reply("ok", 1))
	c := u.client(0)
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	for range 4 { // four connections in the pool, each good for one response
		wg.Go(func() {
			resp, err := h1Post(t, context.Background(), c, "x")
			if assertNoErr(t, err) {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
		})
	}
	wg.Wait()
	time.Sleep(10 * time.Millisecond) // the server's closes arrive
	resp, err := h1Post(t, context.Background(), c, "again")
	require.NoError(t, err)
	require.Equal(t, "ok", readAll(t, resp))
}

// Informational responses before the final one are skipped.
func TestH1ClientSkipsInformational(t *testing.T) {
	u := startRaw(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	c := u.client(0)
	defer c.CloseIdleConnections()
	resp, err := h1Post(t, context.Background(), c, "x")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", readAll(t, resp))
}

// Response headers without end are cut at 1 MiB, as http.Transport does.
func TestH1ClientResponseHeadLimit(t *testing.T) {
	u := startRaw(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Filler: " + strings.Repeat("y", 1000) + "\r\n"
		for range 2000 { // 2 MB of headers
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
	c := u.client(0)
	_, err := h1Post(t, context.Background(), c, "x")
	require.ErrorIs(t, err, errResponseHeadTooLarge)
}

// An upstream connection holds no read buffer while its response is
// awaited: the request is aborted while it waits, and its connection never
// took one.
func TestClientHoldsNoReadBufferWhileAwaiting(t *testing.T) {
	got := make(chan struct{})
	u := startRaw(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		close(got)
		_, _ = br.ReadByte() // until the client gives up
	})
	cl := u.client(0)
	defer cl.CloseIdleConnections()
	var ab Abort
	done := make(chan error, 1)
	go func() {
		wire := "POST / HTTP/1.1\r\nHost: u\r\nContent-Length: 2\r\n\r\nhi"
		_, err := cl.Do(context.Background(), MethodRequest(http.MethodPost), []byte(wire), &ab)
		done <- err
	}()
	<-got
	ab.mu.Lock()
	c, _ := ab.c.(*h1Conn)
	ab.mu.Unlock()
	require.NotNil(t, c, "the request's connection is armed")
	ab.Fire()
	require.Error(t, <-done)
	require.True(t, c.rd.ok())
	require.Nil(t, c.br, "no read buffer was taken while the response was awaited")
}

// countingConn counts its closes.
type countingConn struct {
	net.Conn
	closed *atomic.Int64
}

func (c countingConn) Close() error {
	c.closed.Add(1)
	return c.Conn.Close()
}

// The pool keeps as many idle connections as max_connections allows (a
// lower bound closed the connections that responses coming back together
// gave back, to dial as many for the next requests), MaxIdleConns without
// max_connections, and closes those unused for idleConnTimeout.
func TestH1ClientPoolKeepsWhatMaxConnectionsAllows(t *testing.T) {
	var closed atomic.Int64
	conn := func(cl *Client) *h1Conn {
		a, b := net.Pipe()
		t.Cleanup(func() { _ = b.Close() })
		return &h1Conn{Conn: countingConn{a, &closed}, cl: cl}
	}
	fill := func(cl *Client, n int) {
		for range n {
			if cl.slots != nil {
				cl.slots <- struct{}{} // the slot the connection was dialled in
			}
			cl.put(conn(cl))
		}
	}
	bounded := NewClient(nil, MaxIdleConns+501) // a slot left for the last one
	defer bounded.CloseIdleConnections()
	fill(bounded, MaxIdleConns+500)
	require.Len(t, bounded.idle, MaxIdleConns+500)
	require.Zero(t, closed.Load())

	unbounded := NewClient(nil, 0)
	defer unbounded.CloseIdleConnections()
	fill(unbounded, MaxIdleConns+10)
	require.Len(t, unbounded.idle, MaxIdleConns)
	require.EqualValues(t, 10, closed.Load())

	// The three least recently used expire; the next one given back takes
	// them out.
	closed.Store(0)
	for _, c := range bounded.idle[:3] {
		c.lastUsed = time.Now().Add(-idleConnTimeout - time.Second)
	}
	keep := bounded.idle[3]
	fill(bounded, 1)
	require.EqualValues(t, 3, closed.Load())
	require.Len(t, bounded.idle, MaxIdleConns+500-3+1)
	require.Same(t, keep, bounded.idle[0])
	require.Len(t, bounded.slots, MaxIdleConns+500-3+1, "an expired connection gives its slot back")
}
