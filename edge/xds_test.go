package edge

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/xds"
)

// TestWithTollgateXDS runs the edge on exactly what Tollgate's xDS server
// emits: every resource must be accepted (no NACK) and serve.
func TestWithTollgateXDS(t *testing.T) {
	mock := mockllm.New(mockllm.DefaultConfig())
	mlis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mctx, mcancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- mock.Serve(mctx, mlis) }()
	defer func() { mcancel(); require.NoError(t, <-served) }()
	mockPort := mlis.Addr().(*net.TCPAddr).AddrPort().Port()

	in := &xds.Input{
		Listener:            xds.Address{Host: "127.0.0.1", Port: 18080},
		ExtProc:             xds.Address{Host: "127.0.0.1", Port: 18081},
		MaxRequestBodyBytes: 4096,
		Upstreams: []xds.Upstream{
			{Deployment: "mock-1", Scheme: "http", Host: "127.0.0.1", Port: uint32(mockPort)},
			{Deployment: "mock-h2", Scheme: "http", Host: "127.0.0.1", Port: uint32(mockPort), HTTP2: true},
			{Deployment: "openai", Scheme: "https", Host: "api.openai.com"},
		},
	}
	xs := serveTollgateXDS(t, in)
	e := runEdge(t, xs.conn, newFakeProc())
	url := "http://" + e.Addr().String()
	c := client(t)

	for _, dep := range []string{"mock-1", "mock-h2"} {
		resp, body := post(t, c, url+"/v1/chat/completions", dep, `{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Contains(t, body, `"content":"hello hello`)
	}
	resp, body := post(t, c, url+"/v1/chat/completions", "unknown", `{}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.JSONEq(t, xds.NotFoundBody, body)
	require.Equal(t, "application/json", resp.Header.Get("content-type"))
	resp, _ = post(t, c, url+"/v1/chat/completions", "mock-1", strings.Repeat("x", 5000))
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	require.Equal(t, int64(2), mock.Stats().Total.Requests)

	// An update (a deployment removed) is applied.
	in.Upstreams = in.Upstreams[1:]
	require.NoError(t, xs.Update(context.Background(), in))
	require.Eventually(t, func() bool {
		resp, _ := post(t, c, url+"/v1/chat/completions", "mock-1", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
		return resp.StatusCode == http.StatusNotFound
	}, 10*time.Second, 20*time.Millisecond)
}

// tollgateXDS is Tollgate's xDS server on loopback, serving in, and a client
// connection to it; both stop at the end of the test.
type tollgateXDS struct {
	*xds.Server
	conn *grpc.ClientConn
}

func serveTollgateXDS(t *testing.T, in *xds.Input) *tollgateXDS {
	t.Helper()
	xs := xds.NewServer(slog.New(slog.NewTextHandler(io.Discard, nil)))
	g := grpc.NewServer()
	xs.Register(g)
	glis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(glis) }()
	require.NoError(t, xs.Update(context.Background(), in))
	conn, err := grpc.NewClient(glis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(); xs.Stop(); g.Stop() })
	return &tollgateXDS{Server: xs, conn: conn}
}

// runEdge runs an edge on conn's ADS with proc as its processor, ready;
// it stops at the end of the test.
func runEdge(t *testing.T, conn *grpc.ClientConn, proc extprocv3.ExternalProcessorServer) *Edge {
	t.Helper()
	e := New(extprocfilter.GRPC(extprocfiltertest.Direct(proc)), WithListenOverride("127.0.0.1:0"),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.RunADS(ctx, conn, "tollgate-edge") }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, e.Shutdown(context.Background()))
	})
	<-e.Ready()
	return e
}
