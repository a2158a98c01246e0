package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	chatBody = `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}`
	sseBody  = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
)

// raw answers a request on a hijacked connection with wire and closes it.
func raw(wire string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = io.WriteString(conn, wire)
		_ = conn.Close()
	}
}

// flushed writes the body in pieces of n bytes, flushing each: chunked.
func flushed(ctype, body string, n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ctype)
		for body := body; len(body) > 0; {
			k := min(n, len(body))
			_, _ = io.WriteString(w, body[:k])
			_ = http.NewResponseController(w).Flush()
			body = body[k:]
		}
	}
}

func sized(status int, ctype, body string, hdr ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ctype)
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// testServer serves h and counts the connections it accepts.
func testServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func testClient(t *testing.T, url, scen string) *client {
	t.Helper()
	sc, ok := scenarioFor(scen, "m")
	require.True(t, ok)
	tgt, err := newTarget(url, http.MethodPost, sc.path, "k", sc.body)
	require.NoError(t, err)
	c := newClient(tgt, sc.check)
	t.Cleanup(c.Shutdown)
	return c
}

func TestClientResponses(t *testing.T) {
	const json = "application/json"
	const sse = "text/event-stream; charset=utf-8"
	tests := []struct {
		name    string
		scen    string
		h       http.HandlerFunc
		wantErr error // nil: success
		conns   int64 // connections dialled for three requests
	}{
		{"content-length", "chat", sized(200, json, chatBody), nil, 1},
		{"chunked", "chat", flushed(json, chatBody, 7), nil, 1},
		{"sse", "stream", flushed(sse, sseBody, 40), nil, 1},
		{"sse in one chunk", "stream", flushed(sse, sseBody, 1<<20), nil, 1},
		{"connection close", "chat", sized(200, json, chatBody, "Connection", "close"), nil, 3},
		{"body until EOF", "chat", raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + chatBody), nil, 3},
		{"HTTP/1.0", "chat", raw("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"), errBadResponse, 3},
		{"interim 100", "chat", raw("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: " +
			strconv.Itoa(len(chatBody)) + "\r\nconnection: close\r\n\r\n" + chatBody), nil, 3},
		{"status 500", "chat", sized(500, json, `{"error":{"message":"boom"}}`), errBadResponse, 1},
		{"status 429", "stream", sized(429, json, `{"error":{}}`), errBadResponse, 1},
		{"no usage", "chat", sized(200, json, `{"id":"x"}`), errBadResponse, 1},
		{"not JSON", "chat", sized(200, json, `{"usage": nope`), errBadResponse, 1},
		{"wrong content type", "chat", sized(200, "text/plain", chatBody), errBadResponse, 1},
		{"sse without DONE", "stream", flushed(sse, strings.TrimSuffix(sseBody, "data: [DONE]\n\n"), 40), errBadResponse, 1},
		{"sse with a non-JSON event", "stream", flushed(sse, "data: hello\n\n"+sseBody, 40), errBadResponse, 1},
		{"sse data after DONE", "stream", flushed(sse, sseBody+sseBody, 40), errBadResponse, 1},
		{"sse of JSON content type", "stream", flushed(json, sseBody, 40), errBadResponse, 1},
		{"truncated body", "chat", raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n" + chatBody), io.ErrUnexpectedEOF, 3},
		{"truncated chunked", "stream", raw("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n20\r\ndata: [DONE]\n\n\r\n"), io.ErrUnexpectedEOF, 3},
		{"malformed status line", "chat", raw("HTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), errMalformed, 3},
		{"malformed status code", "chat", raw("HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n"), errMalformed, 3},
		{"malformed header", "chat", raw("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"), errMalformed, 3},
		{"conflicting lengths", "chat", raw("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"), errMalformed, 3},
		{"bad chunk size", "stream", raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), errMalformed, 3},
		{"no CRLF after a chunk", "stream", raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX\r\n0\r\n\r\n"), errMalformed, 3},
		{"unsupported coding", "chat", raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"), errMalformed, 3},
		{"nothing", "chat", raw(""), errNoResponse, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, conns := testServer(t, tt.h)
			c := testClient(t, srv.URL, tt.scen)
			for range 3 {
				err := c.do(t.Context())
				if tt.wantErr == nil {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, tt.wantErr)
				}
			}
			require.Equal(t, tt.conns, conns.Load(), "connections dialled")
		})
	}
}

// A kept-alive connection the server closed is redialled once, silently.
func TestClientRedialsAStaleConnection(t *testing.T) {
	var n atomic.Int64
	srv, conns := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			// The second request on a connection finds it closed.
			raw("")(w, r)
			return
		}
		sized(200, "application/json", chatBody)(w, r)
	}))
	c := testClient(t, srv.URL, "chat")
	for range 4 {
		require.NoError(t, c.do(t.Context()))
	}
	require.Equal(t, int64(4), conns.Load())
}

// The request is written as built: method, path under the base URL, Host,
// Authorization, Content-Type, Content-Length and body.
func TestTargetRequest(t *testing.T) {
	tgt, err := newTarget("http://127.0.0.1:9/base/", http.MethodPost, "/v1/embeddings", "sk-1", []byte(`{"a":1}`))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9", tgt.addr)
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(string(tgt.wire))))
	require.NoError(t, err)
	require.Equal(t, "/base/v1/embeddings", req.URL.Path)
	require.Equal(t, "127.0.0.1:9", req.Host)
	require.Equal(t, "Bearer sk-1", req.Header.Get("Authorization"))
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.Equal(t, int64(7), req.ContentLength)
	body, err := io.ReadAll(req.Body)
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(body))

	tgt, err = newTarget("http://localhost", http.MethodPost, "/v1/x", "", nil)
	require.NoError(t, err)
	require.Equal(t, "localhost:80", tgt.addr)
	require.NotContains(t, string(tgt.wire), "Authorization")

	_, err = newTarget("https://localhost", http.MethodPost, "/v1/x", "", nil)
	require.Error(t, err)
}

// Shutdown ends a request waiting for its response.
func TestClientShutdown(t *testing.T) {
	release := make(chan struct{})
	srv, _ := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer close(release)
	c := testClient(t, srv.URL, "chat")
	ctx, cancel := context.WithCancel(t.Context())
	stop := context.AfterFunc(ctx, c.Shutdown)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- c.do(ctx) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-errc:
		require.Error(t, err)
		require.NotErrorIs(t, err, errBadResponse)
	case <-time.After(5 * time.Second):
		t.Fatal("the request did not end")
	}
}
