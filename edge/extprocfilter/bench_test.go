package extprocfilter_test

import (
	"context"
	"net"
	"testing"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
)

// benchClient connects to srv in-process or over loopback gRPC.
func benchClient(b *testing.B, name string, srv extprocv3.ExternalProcessorServer) Transport {
	b.Helper()
	if name == "direct" {
		return GRPC(Direct(srv))
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	return GRPC(serveGRPC(b, srv, lis, lis.Addr().String(), nil))
}

// BenchmarkDo measures a whole non-streaming request (four messages) against
// a processor that continues everything: the client's cost plus the
// transport's. Run: go test -run XXX -bench . ./edge/extprocfilter/
func BenchmarkDo(b *testing.B) {
	for _, name := range []string{"direct", "grpc-tcp"} {
		b.Run(name, func(b *testing.B) {
			fake := newFake(continuer)
			fake.record = false
			c := NewClient(benchClient(b, name, fake), DefaultConfig())
			req := postRequest(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
			up := ok200(`{"usage":{"prompt_tokens":1}}`)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Do(ctx, c, req, up); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStreamedChunk measures one STREAMED response chunk and its reply.
func BenchmarkStreamedChunk(b *testing.B) {
	fake := newFake(overrideOn(isResponseHeaders, streamedResponseOverride()))
	fake.record = false
	c := NewClient(GRPC(Direct(fake)), DefaultConfig())
	s := c.Start(context.Background())
	defer s.Close()
	_, err := s.RequestHeaders(getRequest().Headers, true)
	require.NoError(b, err)
	_, err = s.ResponseHeaders(Headers{{":status", "200"}}, false)
	require.NoError(b, err)
	chunk := []byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.ResponseBody(chunk, false); err != nil {
			b.Fatal(err)
		}
	}
}
