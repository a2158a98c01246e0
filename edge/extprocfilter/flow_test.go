package extprocfilter_test

import (
	"bytes"
	"testing"
	"time"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestProductionFlow drives a correct processor through the §6 flow: request
// headers held until the buffered body reply, routing mutation and
// clear_route_cache in the body reply, buffered response.
func TestProductionFlow(t *testing.T) {
	forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
		const newBody = `{"model":"gpt-4o-2024"}`
		fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
			switch {
			case isRequestBody(req):
				return one(reply(req, &extprocv3.CommonResponse{
					HeaderMutation: &extprocv3.HeaderMutation{
						SetHeaders: []*corev3.HeaderValueOption{
							rawSet("x-tollgate-route", "dep-1"), rawSet(":path", "/openai/v1/chat/completions"),
							rawSet("content-length", itoa(len(newBody))),
						},
						RemoveHeaders: []string{"authorization"},
					},
					BodyMutation:    bodyMut(newBody),
					ClearRouteCache: true,
				})), nil
			case isResponseBody(req):
				return one(reply(req, &extprocv3.CommonResponse{
					HeaderMutation: setHeaders(rawSet("x-cost", "42"), rawSet("content-length", "2")),
					BodyMutation:   bodyMut("{}"),
				})), nil
			}
			return continuer(req)
		})
		req := postRequest(`{"model":`, `"gpt-4o"}`)
		req.Headers = append(req.Headers, Header{"authorization", "Bearer tg-x"})
		resp := do(t, connect(fake), testConfig(), req, ok200(`{"usage":{}}`))

		require.Nil(t, resp.LocalReply)
		require.NotNil(t, resp.Forwarded)
		require.True(t, resp.Forwarded.ClearRouteCache)
		require.Equal(t, newBody, string(resp.Forwarded.Body))
		require.Equal(t, Headers{
			{":method", "POST"},
			{":path", "/openai/v1/chat/completions"},
			{":authority", "gw.local"},
			{":scheme", "http"},
			{"content-type", "application/json"},
			{"content-length", itoa(len(newBody))},
			{"x-tollgate-route", "dep-1"},
		}, resp.Forwarded.Headers)
		require.Equal(t, 200, resp.Status)
		require.Equal(t, "{}", string(resp.Body))
		require.Equal(t, "42", resp.Headers.Value("x-cost"))

		require.Equal(t, []string{"request_headers", "request_body", "response_headers", "response_body"}, fake.kinds())
		got := fake.received()
		// R1.2: protocol_config on the first message only.
		require.Empty(t, cmp.Diff(&extprocv3.ProtocolConfiguration{
			RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED,
			ResponseBodyMode: extprocfilterv3.ProcessingMode_BUFFERED,
		}, got[0].GetProtocolConfig(), protocmp.Transform()))
		for _, r := range got[1:] {
			require.Nil(t, r.GetProtocolConfig())
		}
		// R5.1: raw_value only, pseudo-headers first, end_of_stream false.
		require.Empty(t, cmp.Diff(&extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
			{Key: ":method", RawValue: []byte("POST")},
			{Key: ":path", RawValue: []byte("/v1/chat/completions")},
			{Key: ":authority", RawValue: []byte("gw.local")},
			{Key: ":scheme", RawValue: []byte("http")},
			{Key: "content-type", RawValue: []byte("application/json")},
			{Key: "content-length", RawValue: []byte("18")},
			{Key: "authorization", RawValue: []byte("Bearer tg-x")},
		}}}, got[0].GetRequestHeaders(), protocmp.Transform()))
		// R1.5b: the whole body in one message with end_of_stream.
		require.Empty(t, cmp.Diff(&extprocv3.HttpBody{Body: []byte(`{"model":"gpt-4o"}`), EndOfStream: true}, got[1].GetRequestBody(), protocmp.Transform()))
		require.NotNil(t, got[1].GetMetadataContext()) // R5.4
		require.Equal(t, "200", HeadersFromProto(got[2].GetResponseHeaders().GetHeaders()).Value(":status"))
		require.False(t, got[2].GetResponseHeaders().GetEndOfStream())
	})
}

// TestHeldHeadersStepByStep checks R1.5b with the Stream API: headers held,
// released with the body reply.
func TestHeldHeadersStepByStep(t *testing.T) {
	fake := newFake(continuer)
	s := NewClient(GRPC(Direct(fake)), testConfig()).Start(testCtx(t))
	defer s.Close()
	r, err := s.RequestHeaders(postRequest("ab").Headers, false)
	require.NoError(t, err)
	require.False(t, r.Continue)
	require.Nil(t, r.Headers)
	r, err = s.RequestBody([]byte("a"), false)
	require.NoError(t, err)
	require.False(t, r.Continue)
	require.Empty(t, r.Body)
	r, err = s.RequestBody([]byte("b"), true)
	require.NoError(t, err)
	require.True(t, r.Continue)
	require.Equal(t, "/v1/chat/completions", r.Headers.Value(":path"))
	require.Equal(t, "2", r.Headers.Value("content-length")) // R2.10: kept in BUFFERED+SEND
	require.Equal(t, "ab", string(r.Body))
	// Out of order calls are the caller's bug.
	_, err = s.RequestBody([]byte("c"), true)
	require.ErrorIs(t, err, ErrOutOfOrder)
}

// TestGetNoBody: headers with end_of_stream; no body message follows (R1.4).
func TestGetNoBody(t *testing.T) {
	fake := newFake(continuer)
	resp := do(t, GRPC(Direct(fake)), testConfig(), getRequest(), ok200("[]"))
	require.Nil(t, resp.LocalReply)
	require.Equal(t, []string{"request_headers", "response_headers", "response_body"}, fake.kinds())
	require.True(t, fake.received()[0].GetRequestHeaders().GetEndOfStream())
	require.Equal(t, "[]", string(resp.Body))
	require.Equal(t, []byte(nil), resp.Forwarded.Body)
}

// TestStreamedResponseOverride: the §6 SSE pattern — mode_override to
// STREAMED in the response_headers reply, one message per chunk, the mutated
// bytes forwarded in order (R1.5c, R2.7).
func TestStreamedResponseOverride(t *testing.T) {
	forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
		fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
			switch {
			case isResponseHeaders(req):
				r := reply(req, &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{RemoveHeaders: []string{"content-length"}}})
				r.ModeOverride = streamedResponseOverride()
				return one(r), nil
			case isResponseBody(req):
				b := req.GetResponseBody()
				out := bytes.ToUpper(b.GetBody())
				if b.GetEndOfStream() {
					out = append(out, "data: [DONE]\n\n"...)
				}
				return one(reply(req, &extprocv3.CommonResponse{BodyMutation: bodyMut(string(out))})), nil
			}
			return continuer(req)
		})
		up := func(*ForwardedRequest) *UpstreamResponse {
			return &UpstreamResponse{
				Status: 200, Headers: Headers{{"content-type", "text/event-stream"}, {"content-length", "30"}},
				Chunks: [][]byte{[]byte("data: a\n\n"), []byte("data: b\n"), []byte("\n"), {}},
			}
		}
		resp := do(t, connect(fake), testConfig(), postRequest("{}"), up)
		require.Nil(t, resp.LocalReply)
		require.Equal(t, [][]byte{[]byte("DATA: A\n\n"), []byte("DATA: B\n"), []byte("\n"), []byte("data: [DONE]\n\n")}, resp.Chunks)
		require.False(t, resp.Headers.Has("content-length"))
		require.Equal(t, []string{"request_headers", "request_body", "response_headers", "response_body", "response_body", "response_body", "response_body"}, fake.kinds())
		got := fake.received()
		require.True(t, got[6].GetResponseBody().GetEndOfStream())
		require.Empty(t, got[6].GetResponseBody().GetBody())
	})
}

// TestUpstreamReset: the upstream resets mid-body; Envoy resets downstream
// and closes the ext_proc stream (R1.8d), which the processor sees.
func TestUpstreamReset(t *testing.T) {
	forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
		fake := newFake(overrideOn(isResponseHeaders, streamedResponseOverride()))
		resp := do(t, connect(fake), testConfig(), postRequest("{}"), func(*ForwardedRequest) *UpstreamResponse {
			return &UpstreamResponse{Status: 200, Chunks: [][]byte{[]byte("data: a\n\n")}, Reset: true}
		})
		require.True(t, resp.Reset)
		require.Nil(t, resp.LocalReply)
		require.Equal(t, "data: a\n\n", string(resp.Body))
		require.Eventually(t, func() bool { return len(fake.endings()) == 1 }, 5*time.Second, time.Millisecond)
		require.Equal(t, []string{"request_headers", "request_body", "response_headers", "response_body"}, fake.kinds())
		require.False(t, fake.received()[3].GetResponseBody().GetEndOfStream())
	})
}

// TestReplaceAddsBody: CONTINUE_AND_REPLACE with a body mutation gives a
// headers-only request a body (R2.3).
func TestReplaceAddsBody(t *testing.T) {
	fake := newFake(onRequestHeaders(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
		return one(reply(req, &extprocv3.CommonResponse{Status: extprocv3.CommonResponse_CONTINUE_AND_REPLACE, BodyMutation: bodyMut("added")}))
	}))
	s := NewClient(GRPC(Direct(fake)), testConfig()).Start(testCtx(t))
	defer s.Close()
	r, err := s.RequestHeaders(getRequest().Headers, true)
	require.NoError(t, err)
	require.True(t, r.Continue)
	require.Equal(t, "added", string(r.Body))
	require.Equal(t, "/v1/models", r.Headers.Value(":path"))
}

// TestLargeBodyOverGRPC: a buffered body travels as one gRPC message; above
// the server's MaxRecvMsgSize (grpc-go: 4 MiB) the stream fails with
// RESOURCE_EXHAUSTED, which Envoy turns into a 500 (R5.5, G2).
func TestLargeBodyOverGRPC(t *testing.T) {
	fake := newFake(continuer)
	cc := transports[1].connect(t, fake) // grpc-tcp, default server limits
	cfg := testConfig()
	cfg.RequestBufferLimit = 8 << 20
	body := bytes.Repeat([]byte("a"), 5<<20)
	resp := do(t, cc, cfg, &Request{Headers: postRequest().Headers, Body: [][]byte{body}}, okUpstream)
	// 8 is RESOURCE_EXHAUSTED.
	wantLocal(500, "ext_proc_error_gRPC_error_8{grpc:_received_message_larger_than_max_(5242894_vs._4194304)}", ErrGRPC)(t, resp, fake)
}

// TestDownstreamAbort: the client goes away mid-stream; the processor sees
// its stream end without an end_of_stream chunk.
func TestDownstreamAbort(t *testing.T) {
	fake := newFake(overrideOn(isResponseHeaders, streamedResponseOverride()))
	req := postRequest("{}")
	req.AbortAfterChunks = 2
	resp := do(t, GRPC(Direct(fake)), testConfig(), req, sseUpstream("a", "b", "c", "d"))
	require.True(t, resp.Aborted)
	require.Equal(t, "ab", string(resp.Body))
	require.Eventually(t, func() bool { return len(fake.endings()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"request_headers", "request_body", "response_headers", "response_body", "response_body"}, fake.kinds())
}

// TestResultFieldsOutliveTheNextCall: a Stream reuses its Result from one
// call to the next, and what the caller took out of one (the released
// headers) stays as it was.
func TestResultFieldsOutliveTheNextCall(t *testing.T) {
	c := NewClient(GRPC(Direct(newFake(continuer))), testConfig())
	s := c.Start(testCtx(t))
	defer s.Close()
	first, err := s.RequestHeaders(getRequest().Headers, true)
	require.NoError(t, err)
	require.True(t, first.Continue)
	fwd := first.Headers
	next, err := s.ResponseHeaders(Headers{{":status", "200"}, {"content-type", "application/json"}}, true)
	require.NoError(t, err)
	require.Same(t, first, next, "the Result is reused")
	require.Equal(t, "200", next.Headers.Value(":status"))
	require.Equal(t, "/v1/models", fwd.Value(":path"), "the headers taken from the previous Result")
	require.Equal(t, "GET", fwd.Value(":method"))
}
