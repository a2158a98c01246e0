package edge

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
)

// The fast path writes the released headers as Envoy sends them over
// HTTP/1.1: lower-case names, no hop-by-hop headers, the body's length.
func TestWireRequest(t *testing.T) {
	x := &exchange{fwd: headersOf(
		":method", "POST", ":path", "/v1/chat?x=1", ":authority", "api.example.com", ":scheme", "http",
		"connection", "keep-alive", "content-length", "999", "expect", "100-continue",
		"authorization", "Bearer sk-1", "x-evil", "a\r\nx-injected: 1",
	)}
	cl := &cluster{urlHost: "10.0.0.1:80"}
	var buf bytes.Buffer
	require.True(t, x.wireRequest(&buf, &route{}, cl, []byte("{}")))
	require.Equal(t, "POST /v1/chat?x=1 HTTP/1.1\r\nhost: api.example.com\r\nauthorization: Bearer sk-1\r\n"+
		"x-evil: a  x-injected: 1\r\ncontent-length: 2\r\n\r\n{}", buf.String())

	buf.Reset()
	require.True(t, x.wireRequest(&buf, &route{hostRewrite: "upstream.internal"}, cl, nil))
	require.Contains(t, buf.String(), "host: upstream.internal\r\n")
	require.Contains(t, buf.String(), "content-length: 0\r\n")

	x.fwd = headersOf(":method", "POST", ":path", "/a b")
	require.False(t, x.wireRequest(&buf, &route{}, cl, nil))
}

// headersOf is a header list from name, value pairs.
func headersOf(kv ...string) extprocfilter.Headers {
	var h extprocfilter.Headers
	for i := 0; i < len(kv); i += 2 {
		h = append(h, extprocfilter.Header{Key: kv[i], Value: kv[i+1]})
	}
	return h
}
