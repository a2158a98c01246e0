package edge

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/internal/mockllm"
)

// BenchmarkChat measures one non-streaming chat request through the edge,
// the in-process fake processor and mockllm, all in this process.
func BenchmarkChat(b *testing.B) {
	benchmarkThroughEdge(b, `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hello there"}]}`)
}

// processorClients are the in-process transports: Sync (what `tollgate run`
// uses) and Direct.
var processorClients = []struct {
	name    string
	connect func(*fakeProc) extprocfilter.Transport
}{
	{"sync", func(p *fakeProc) extprocfilter.Transport { return p.sync() }},
	{"direct", func(p *fakeProc) extprocfilter.Transport { return extprocfilter.GRPC(extprocfiltertest.Direct(p)) }},
}

// BenchmarkStream is the same with stream:true (SSE, STREAMED response).
func BenchmarkStream(b *testing.B) {
	benchmarkThroughEdge(b, `{"model":"m","max_tokens":16,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`)
}

func benchmarkThroughEdge(b *testing.B, body string) {
	for _, pc := range processorClients {
		b.Run(pc.name, func(b *testing.B) { benchmarkThroughEdgeWith(b, body, pc.connect(newFakeProc())) })
	}
}

func benchmarkThroughEdgeWith(b *testing.B, body string, proc extprocfilter.Transport) {
	cfg := mockllm.DefaultConfig()
	cfg.Chunks = 4
	mockAddr := startBenchMock(b, cfg)
	x := startXDSBench(b)
	x.set(b, listener(b, 1<<20, extProcFilter()), routes(deployment{id: "m", host: "mock"}),
		upstreamCluster(b, "m", mockAddr, clusterOpts{}))
	e := New(proc, WithListenOverride("127.0.0.1:0"))
	actx, acancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.RunADS(actx, x.conn, nodeID) }()
	defer func() { acancel(); require.NoError(b, <-done); require.NoError(b, e.Shutdown(context.Background())) }()
	<-e.Ready()
	url := "http://" + e.Addr().String() + "/v1/chat/completions"
	tr := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("x-pick", "m")
			resp, err := c.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

// BenchmarkDirectMock is the baseline: the same client straight to mockllm.
func BenchmarkDirectMock(b *testing.B) {
	url := "http://" + startBenchMock(b, mockllm.DefaultConfig()) + "/v1/chat/completions"
	tr := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	body := `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hello there"}]}`
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
}

// startBenchMock serves mockllm with cfg on a loopback port until the
// benchmark ends, and returns its address.
func startBenchMock(b *testing.B, cfg mockllm.Config) string {
	b.Helper()
	mlis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- mockllm.New(cfg).Serve(ctx, mlis) }()
	b.Cleanup(func() { cancel(); require.NoError(b, <-served) })
	return mlis.Addr().String()
}
