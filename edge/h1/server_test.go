package h1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/h1/h1test"
)

// startH1 serves h on a loopback listener; the server is shut down at the
// end of the test.
func startH1(t *testing.T, h http.HandlerFunc) (*Server, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := NewServer(h, Limits{MaxHeaderBytes: 1 << 10}, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
		require.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return s, lis.Addr().String()
}

func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Method", r.Method)
	w.Header().Set("X-Host", r.Host)
	_, _ = w.Write([]byte(r.RequestURI + " " + string(b)))
}

// Keep-alive, pipelining and both request body framings.
func TestH1ServerPipelinedRequests(t *testing.T) {
	_, addr := startH1(t, echo)
	c := h1test.Dial(t, addr)
	c.Send(t, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"+
		"POST /b HTTP/1.1\r\nHost: y\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"+
		"POST /t HTTP/1.1\r\nHost: y\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nf\r\n0\r\nX-T: 1\r\n\r\n"+
		"GET /c HTTP/1.1\r\nHost: z\r\n\r\n"+
		"GET /d HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	resp, body := c.Response(t, "POST")
	require.Equal(t, "/a hello", body)
	require.Equal(t, "x", resp.Header.Get("X-Host"))
	require.EqualValues(t, len(body), resp.ContentLength)
	require.NotEmpty(t, resp.Header.Get("Date"))
	_, body = c.Response(t, "POST")
	require.Equal(t, "/b abcde", body)
	_, body = c.Response(t, "POST") // the trailers are consumed with the body
	require.Equal(t, "/t f", body)
	resp, body = c.Response(t, "GET")
	require.Equal(t, "/c ", body)
	require.False(t, resp.Close)
	resp, body = c.Response(t, "GET") // HTTP/1.0 asking to keep the connection
	require.Equal(t, "/d ", body)
	require.False(t, resp.Close)
}

// Flushed responses are chunked and carry trailers; HTTP/1.0 gets a
// close-delimited body instead.
func TestH1ServerStreamedResponse(t *testing.T) {
	_, addr := startH1(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, s := range []string{"data: 1\n\n", "data: 2\n\n"} {
			_, _ = w.Write([]byte(s))
			w.(http.Flusher).Flush()
		}
		w.Header().Set(http.TrailerPrefix+"X-Cost", "7")
	})
	c := h1test.Dial(t, addr)
	c.Send(t, "GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := c.Response(t, "GET")
	require.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	require.Equal(t, "data: 1\n\ndata: 2\n\n", body)
	require.Equal(t, "7", resp.Trailer.Get("X-Cost"))

	c = h1test.Dial(t, addr)
	c.Send(t, "GET /s HTTP/1.0\r\n\r\n")
	resp, body = c.Response(t, "GET")
	require.Equal(t, "data: 1\n\ndata: 2\n\n", body)
	require.True(t, resp.Close)
}

func TestH1ServerBadRequests(t *testing.T) {
	_, addr := startH1(t, echo)
	for name, tc := range map[string]struct {
		req    string
		status int
	}{
		"no host":            {"GET / HTTP/1.1\r\n\r\n", 400},
		"two hosts":          {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		"garbage":            {"HELLO\r\n\r\n", 400},
		"headers too big":    {"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("x", 8<<10) + "\r\n\r\n", 431},
		"bad expectation":    {"POST / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\nContent-Length: 1\r\n\r\nx", 417},
		"bad header value":   {"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\x01b\r\n\r\n", 400},
		"space before colon": {"GET / HTTP/1.1\r\nHost: a\r\nX-A : b\r\n\r\n", 400},
		"two lengths":        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy", 400},
		"bad length":         {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
		"bad target":         {"GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		"gzip encoding":      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
		"HTTP/2 line":        {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 400},
	} {
		t.Run(name, func(t *testing.T) {
			c := h1test.Dial(t, addr)
			c.Send(t, tc.req)
			resp, _ := c.Response(t, "GET")
			require.Equal(t, tc.status, resp.StatusCode)
			require.True(t, resp.Close)
		})
	}
}

// "Expect: 100-continue" is answered when the handler reads the body, and
// the header is not passed on.
func TestH1ServerExpectContinue(t *testing.T) {
	_, addr := startH1(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Expect", r.Header.Get("Expect"))
		echo(w, r)
	})
	c := h1test.Dial(t, addr)
	c.Send(t, "POST /e HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
	line, err := c.BR.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
	line, err = c.BR.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "\r\n", line)
	c.Send(t, "hi")
	resp, body := c.Response(t, "POST")
	require.Equal(t, "/e hi", body)
	require.Empty(t, resp.Header.Get("X-Expect"))
}

// HEAD answers carry the headers only; an unread body is skipped so the
// connection carries the next request.
func TestH1ServerHeadAndUnreadBody(t *testing.T) {
	_, addr := startH1(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "3")
		_, _ = w.Write([]byte("abc"))
	})
	c := h1test.Dial(t, addr)
	c.Send(t, "HEAD / HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nskip"+
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, body := c.Response(t, "HEAD")
	require.Empty(t, body)
	require.EqualValues(t, 3, resp.ContentLength)
	_, body = c.Response(t, "POST")
	require.Equal(t, "abc", body)
	_, body = c.Response(t, "GET")
	require.Equal(t, "abc", body)
}

// A client that goes away ends the request's context.
func TestH1ServerClientGoneCancelsContext(t *testing.T) {
	cause := make(chan error, 1)
	_, addr := startH1(t, func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			cause <- context.Cause(r.Context())
		case <-time.After(5 * time.Second):
			cause <- errors.New("not cancelled")
		}
	})
	c := h1test.Dial(t, addr)
	c.Send(t, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx")
	time.Sleep(2 * watchAfter)
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-cause, ErrClientGone)
}

// Shutdown closes idle connections at once and lets a request in flight
// finish, with Connection: close.
func TestH1ServerShutdown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	s := NewServer(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		_, _ = w.Write([]byte("done"))
	}, Limits{MaxHeaderBytes: 1 << 10}, slog.New(slog.DiscardHandler))
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()

	idle := h1test.Dial(t, lis.Addr().String())
	idle.Send(t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	_, body := idle.Response(t, "GET")
	require.Equal(t, "done", body)
	busy := h1test.Dial(t, lis.Addr().String())
	busy.Send(t, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-started

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	_, err = idle.BR.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle connection is closed")
	close(release)
	resp, body := busy.Response(t, "GET")
	require.Equal(t, "done", body)
	require.True(t, resp.Close)
	require.NoError(t, <-shut)
	require.ErrorIs(t, <-served, http.ErrServerClosed)
}

// A handler that answers without reading a large body: the client, still
// sending, gets the response (and Connection: close), not a reset.
func TestH1ServerEarlyAnswerToLargeBody(t *testing.T) {
	_, addr := startH1(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	})
	for range 5 {
		resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(strings.Repeat("x", 4<<20)))
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		require.True(t, resp.Close)
	}
}

// A request that expected "100 Continue" and was answered without its body
// being read gets no late "100 Continue": the connection ends after the
// final response.
func TestH1ServerExpectContinueUnread(t *testing.T) {
	_, addr := startH1(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	})
	c := h1test.Dial(t, addr)
	c.Send(t, "POST /e HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
	resp, _ := c.Response(t, "POST")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.True(t, resp.Close)
	c.Send(t, "hi")
	rest, err := io.ReadAll(c.BR)
	require.NoError(t, err)
	require.Empty(t, string(rest), "nothing follows the final response")
}

// The handler gets the fields in arrival order with lower-case names (the
// request has no header map), the Host in r.Host, and a chunked body's
// trailers in r.Trailer once the body is read.
func TestH1ServerFieldsAndTrailers(t *testing.T) {
	type seen struct {
		fields  []string
		host    string
		body    string
		trailer http.Header
		length  int64
	}
	got := make(chan seen, 1)
	_, addr := startH1(t, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			b = []byte("read error: " + err.Error())
		}
		var fs []string
		for _, f := range w.(*Response).fields {
			fs = append(fs, f.Key+"="+f.Value)
		}
		got <- seen{fs, r.Host, string(b), r.Trailer, r.ContentLength}
	})
	c := h1test.Dial(t, addr)
	c.Send(t, "POST /p HTTP/1.1\r\nX-B: 1\r\nHost: h\r\nAUTHORIZATION:  Bearer k \r\nx-b: 2\r\n"+
		"Trailer: X-Cost\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"2\r\nab\r\n1\r\nc\r\n0\r\nX-Cost: 7\r\n\r\n")
	resp, _ := c.Response(t, "POST")
	require.Equal(t, 200, resp.StatusCode)
	s := <-got
	require.Equal(t, []string{"x-b=1", "host=h", "authorization=Bearer k", "x-b=2"}, s.fields)
	require.Equal(t, "h", s.host)
	require.Equal(t, "abc", s.body)
	require.Equal(t, int64(-1), s.length)
	require.Equal(t, http.Header{"X-Cost": {"7"}}, s.trailer)
}

// setHeaders writes the given fields in order with their lower-case names;
// the server adds the framing (a completed body's content-length, or
// chunked) and a date, and drops a content-length that is not one.
func TestH1ServerSetHeaders(t *testing.T) {
	_, addr := startH1(t, func(w http.ResponseWriter, r *http.Request) {
		h := Fields{{Key: "x-b", Value: "1"}, {Key: "content-type", Value: "text/plain"}, {Key: "x-a", Value: "2"}}
		if r.URL.Path == "/bad-length" {
			h = append(h, Field{Key: "content-length", Value: "x"})
		}
		w.(*Response).SetHeaders(http.StatusCreated, h)
		_, _ = w.Write([]byte("hello"))
		if r.URL.Path == "/flush" {
			w.(http.Flusher).Flush()
		}
	})
	for path, framing := range map[string]string{
		"/":           "content-length: 5\r\n",
		"/bad-length": "content-length: 5\r\n",
		"/flush":      "transfer-encoding: chunked\r\n",
	} {
		c := h1test.Dial(t, addr)
		c.Send(t, "GET "+path+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		raw, err := io.ReadAll(c.BR)
		require.NoError(t, err)
		head, _, ok := strings.Cut(string(raw), "\r\n\r\n")
		require.True(t, ok)
		require.Regexp(t, "^HTTP/1.1 201 Created\r\nx-b: 1\r\ncontent-type: text/plain\r\nx-a: 2\r\n"+
			framing+"connection: close\r\ndate: [^\r]+$", head, path)
	}
}

// A connection reuses the array its responses hold their bodies in (when
// small): each response still carries exactly its own body.
func TestH1ServerReusesHeldBody(t *testing.T) {
	_, addr := startH1(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		_, _ = w.Write([]byte(strings.Repeat(r.URL.Path[1:2], n/2)))
		_, _ = w.Write([]byte(strings.Repeat("z", n-n/2)))
	})
	c := h1test.Dial(t, addr)
	for _, n := range []int{900, 5, 3000, 7, 1500, 1} {
		c.Send(t, fmt.Sprintf("GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", n))
		resp, body := c.Response(t, "GET")
		want := strings.Repeat(strconv.Itoa(n)[:1], n/2) + strings.Repeat("z", n-n/2)
		require.Equal(t, want, body)
		require.EqualValues(t, n, resp.ContentLength)
	}
}

// A connection between requests holds no response buffer.
func TestH1ServerIdleConnectionHoldsNoWriter(t *testing.T) {
	s, addr := startH1(t, echo)
	c := h1test.Dial(t, addr)
	for range 3 {
		c.Send(t, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
		_, body := c.Response(t, "POST")
		require.Equal(t, "/a hello", body)
		require.Eventually(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			for sc := range s.conns {
				sc.mu.Lock()
				active := sc.active
				sc.mu.Unlock()
				if active || sc.bw != nil {
					return false
				}
			}
			return len(s.conns) == 1
		}, 5*time.Second, time.Millisecond)
	}
}
