// Package h1test is test support for HTTP/1.1 on the wire: a raw client
// connection that writes bytes as given and reads responses. It is imported
// only from _test.go files (edge/h1's and edge's); standard library and
// testify only.
package h1test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Conn is a client connection that writes raw requests and reads
// responses.
type Conn struct {
	net.Conn
	BR *bufio.Reader
}

// Dial connects to addr; the connection closes with the test, and every
// read and write fails after 10 s.
func Dial(t *testing.T, addr string) *Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return &Conn{Conn: c, BR: bufio.NewReader(c)}
}

// Send writes s as it is.
func (c *Conn) Send(t *testing.T, s string) {
	t.Helper()
	_, err := io.WriteString(c, s)
	require.NoError(t, err)
}

// Response reads the next response to a request of method, and its body.
func (c *Conn) Response(t *testing.T, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(c.BR, &http.Request{Method: method})
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}
