package edge

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
)

// holding is an upstream whose /hold requests wait until release is
// closed, each telling arrived first; other paths answer as named(name).
func holding(name string, arrived chan<- struct{}, release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			<-release
		}
		named(name).ServeHTTP(w, r)
	})
}

// within fails the test unless ch delivers in time (a slot never given back
// shows as a request that never arrives).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
		panic("unreachable")
	}
}

// postAsync posts with x-pick and the header pairs kv, and delivers the
// status (-1 for no response).
func postAsync(t *testing.T, c *http.Client, url, pick string, kv ...string) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, url, http.NoBody)
		if err != nil {
			done <- -1
			return
		}
		req.Header.Set("x-pick", pick)
		for i := 0; i+1 < len(kv); i += 2 {
			req.Header.Set(kv[i], kv[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			done <- -1
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	return done
}

// A request gives its slot back once it is written upstream, not when its
// response comes: with one slot held for an hour, a second request reaches
// the provider while the first still waits for its answer, over HTTP/1.1
// (the hook of the h1 client) and over HTTP/2 (before http.Transport's round
// trip).
func TestGateSlotFreedOnceWritten(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "h1", true: "h2c"}[h2], func(t *testing.T) {
			arrived, release := make(chan struct{}, 2), make(chan struct{})
			var addr string
			if h2 {
				addr = upstreamH2C(t, holding("a", arrived, release))
			} else {
				addr = upstream(t, holding("a", arrived, release))
			}
			x := startXDS(t)
			x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "a.example"}),
				upstreamCluster(t, "a", addr, clusterOpts{http2: h2}))
			e := startEdge(t, newFakeProc().sync(), x, WithGate(1, time.Hour))
			var once sync.Once
			t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the edge's shutdown
			url := "http://" + e.Addr().String()
			c := client(t)

			first := postAsync(t, c, url+"/hold", "a")
			within(t, arrived, "the first request upstream")
			second := postAsync(t, c, url+"/hold", "a")
			within(t, arrived, "the second request upstream while the first waits for its answer")
			once.Do(func() { close(release) })
			require.Equal(t, http.StatusOK, within(t, first, "the first answer"))
			require.Equal(t, http.StatusOK, within(t, second, "the second answer"))
		})
	}
}

// blockingProc holds a request's headers message in the processor while
// the request carries x-block, until release is closed.
type blockingProc struct {
	*fakeSyncStream
	entered chan<- struct{}
	release <-chan struct{}
}

func (s *blockingProc) Handle(req *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse)) error {
	if h := req.GetRequestHeaders(); h != nil && extprocfilter.HeadersFromProto(h.GetHeaders()).Value("x-block") != "" {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.fakeSyncStream.Handle(req, send)
}

// A request holds its slot at most the gate's hold: one stuck in its
// processor for as long as the test likes does not stop the next request.
func TestGateHoldBounded(t *testing.T) {
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "a.example"}),
		upstreamCluster(t, "a", upstream(t, named("a")), clusterOpts{}))
	entered, release := make(chan struct{}, 1), make(chan struct{})
	p := newFakeProc()
	proc := extprocfilter.Sync(func(ctx context.Context) extprocfilter.SyncStream {
		return &blockingProc{fakeSyncStream: &fakeSyncStream{fakeStream: fakeStream{p: p}, ctx: ctx}, entered: entered, release: release}
	})
	e := startEdge(t, proc, x, WithGate(1, 50*time.Millisecond))
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	url := "http://" + e.Addr().String()
	c := client(t)

	stuck := postAsync(t, c, url+"/v1/x", "a", "x-block", "1")
	within(t, entered, "the stuck request in its processor")
	require.Equal(t, http.StatusOK, within(t, postAsync(t, c, url+"/v1/x", "a"), "a request behind a stuck one"))
	once.Do(func() { close(release) })
	require.Equal(t, http.StatusOK, within(t, stuck, "the stuck request's answer"))
}

// Every way a request ends gives its slot back: with one slot and an
// endless hold, a local reply of the processor (401), an upstream that
// refuses the connection (503), a missing route (404) and a client that
// leaves while its request waits upstream are each followed by a request
// that gets through.
func TestGateSlotFreedByEveryEnd(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close())
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()),
		routes(deployment{id: "a", host: "a.example"}, deployment{id: "dead", host: "dead.example"}),
		upstreamCluster(t, "a", upstream(t, holding("a", arrived, release)), clusterOpts{}),
		upstreamCluster(t, "dead", deadAddr, clusterOpts{}))
	e := startEdge(t, newFakeProc().sync(), x, WithGate(1, time.Hour))
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	url := "http://" + e.Addr().String()
	c := client(t)

	ok := func(after string) {
		t.Helper()
		require.Equal(t, http.StatusOK, within(t, postAsync(t, c, url+"/v1/x", "a"), "a request after "+after))
	}
	require.Equal(t, http.StatusUnauthorized, within(t, postAsync(t, c, url+"/v1/x", "deny"), "the denied request"))
	ok("a local reply")
	require.Equal(t, http.StatusServiceUnavailable, within(t, postAsync(t, c, url+"/v1/x", "dead"), "the refused request"))
	ok("a refused connection")
	require.Equal(t, http.StatusNotFound, within(t, postAsync(t, c, url+"/v1/x", "nowhere"), "the unrouted request"))
	ok("no route")

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/hold", http.NoBody)
	require.NoError(t, err)
	req.Header.Set("x-pick", "a")
	gone := make(chan error, 1)
	go func() {
		resp, err := client(t).Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		gone <- err
	}()
	within(t, arrived, "the request that will be left")
	cancel()
	require.Error(t, within(t, gone, "the client leaving"))
	once.Do(func() { close(release) })
	ok("a client that left")
}

// upstreamH2C is a loopback HTTP server speaking HTTP/2 without TLS.
func upstreamH2C(t *testing.T, h http.Handler) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, Protocols: &p}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return lis.Addr().String()
}
