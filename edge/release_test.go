package edge

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/xds"
)

// TestFiltersReleasedWhenClientLeaves: a client goes away while its
// request waits for the upstream, on a per-try route (the router-level
// filter and the try's, two Streams) and on a plain route: the exchange
// cuts the upstream request and releases its filters, and nothing touches
// them afterwards. Run it with -race, where a released Stream is poisoned
// (any use ends the process, extprocfilter/pool.go). The next requests,
// on Streams the earlier ones released, are served.
func TestFiltersReleasedWhenClientLeaves(t *testing.T) {
	arrived, cut := make(chan struct{}, 4), make(chan struct{}, 4)
	var hold atomic.Bool
	hold.Store(true)
	slow := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // then net/http watches the connection
		if hold.Load() {
			arrived <- struct{}{}
			<-r.Context().Done() // the edge cut the connection
			cut <- struct{}{}
			return
		}
		w.Header().Set("content-type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	in := loopbackInput(t, []xds.Group{{Name: "g", Deployments: []string{"a", "b"}, Retries: 1}}, [2]string{"a", slow}, [2]string{"b", slow})
	proc := &tryProc{}
	e := runEdge(t, serveTollgateXDS(t, in).conn, proc)
	url := "http://" + e.Addr().String() + "/v1/chat/completions"
	c := client(t)
	picks := []string{envoy.TryKey("g", "a", 0), "a"}
	for _, pick := range picks {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"model":"g"}`))
		require.NoError(t, err)
		req.Header.Set("content-type", "application/json")
		req.Header.Set("x-pick", pick)
		done := make(chan error, 1)
		go func() {
			resp, err := c.Do(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			done <- err
		}()
		select {
		case <-arrived:
		case err := <-done:
			cancel()
			t.Fatalf("%s: the request ended before it reached the upstream: %v", pick, err)
		}
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		// The edge sees the client gone (within the watch's delay,
		// h1/watch.go), cuts the upstream request and ends the exchange.
		<-cut
	}
	require.Equal(t, []string{"a/1"}, proc.list(), "the try the client left is not retried")
	hold.Store(false)
	for _, pick := range picks {
		resp, body := post(t, c, url, pick, `{"model":"g"}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
	}
}
