package edge

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/xds"
)

// TestPerTryResponseTrailersGoThroughBothFilters: a try's response
// trailers go through the try's upstream filter, then the router-level
// filter, as on a plain route (they were dropped). (A buffered body goes
// downstream with its content-length, so an HTTP/1.1 client gets no
// trailers, as from Envoy, whose HTTP/1 codec drops them unless
// enable_trailers is set.)
func TestPerTryResponseTrailersGoThroughBothFilters(t *testing.T) {
	up := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("trailer", "x-checksum")
		w.Header().Set("content-type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
		w.(http.Flusher).Flush()
		w.Header().Set("x-checksum", "c0ffee")
	}))
	in := loopbackInput(t, []xds.Group{{Name: "g", Deployments: []string{"a", "b"}, Retries: 2}}, [2]string{"a", up}, [2]string{"b", up})
	proc := &tryProc{}
	e := runEdge(t, serveTollgateXDS(t, in).conn, proc)
	c := client(t)
	for _, pick := range []string{"a", envoy.TryKey("g", "a", 0)} {
		resp, body := post(t, c, "http://"+e.Addr().String()+"/v1/chat/completions", pick, `{"model":"g"}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.JSONEq(t, `{"ok":true}`, body)
	}
	proc.mu.Lock()
	defer proc.mu.Unlock()
	require.Equal(t, []string{"/c0ffee", "a/c0ffee", "/c0ffee"}, proc.trailers, "plain route: the router-level filter; per-try: the try's, then the router-level filter")
}

// loopbackInput is Tollgate's xDS input for groups of plain-HTTP
// deployments on loopback (id, address).
func loopbackInput(t *testing.T, groups []xds.Group, deps ...[2]string) *xds.Input {
	t.Helper()
	in := &xds.Input{
		Listener: xds.Address{Host: "127.0.0.1", Port: 18080},
		ExtProc:  xds.Address{Host: "127.0.0.1", Port: 18081},
		Groups:   groups,
	}
	for _, d := range deps {
		_, p, err := net.SplitHostPort(d[1])
		require.NoError(t, err)
		port, err := strconv.Atoi(p)
		require.NoError(t, err)
		in.Upstreams = append(in.Upstreams, xds.Upstream{Deployment: d[0], Scheme: "http", Host: "127.0.0.1", Port: uint32(port)})
	}
	return in
}
