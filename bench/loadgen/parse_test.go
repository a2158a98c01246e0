package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReader: the parser never panics, and a response it accepts has a
// status and a body within bounds.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n0\r\nTrailer: x\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\nConnection: close\n\nuntil EOF",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newReader(strings.NewReader(string(b)))
		for range 3 {
			resp, err := r.read()
			if err != nil {
				return
			}
			require.GreaterOrEqual(t, resp.status, 200)
			require.LessOrEqual(t, resp.status, 999)
			require.LessOrEqual(t, len(resp.body), len(b))
		}
	})
}

// Responses kept alive on one connection are read one after another.
func TestReaderKeepAlive(t *testing.T) {
	wire := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}" +
		"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n" +
		"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
	r := newReader(strings.NewReader(wire))
	want := []struct {
		status int
		body   string
		ctype  string
		close  bool
	}{{200, "{}", "", false}, {201, "abcde", "text/event-stream", false}, {204, "", "", true}}
	for _, w := range want {
		resp, err := r.read()
		require.NoError(t, err)
		require.Equal(t, w.status, resp.status)
		require.Equal(t, w.body, string(resp.body))
		require.Equal(t, w.ctype, string(resp.ctype))
		require.Equal(t, w.close, resp.close)
	}
	_, err := r.read()
	require.ErrorIs(t, err, errNoResponse)
}
