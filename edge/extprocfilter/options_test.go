package extprocfilter_test

import (
	"testing"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestRouteMode: a per-route processing_mode replaces the filter's, and
// protocol_config reports it (R1.2); mode_override still merges into the
// filter-level mode (R2.7).
func TestRouteMode(t *testing.T) {
	fake := newFake(overrideOn(isResponseHeaders, &extprocfilterv3.ProcessingMode{ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED}))
	s := NewClient(GRPC(Direct(fake)), testConfig()).Start(testCtx(t), WithRouteMode(&extprocfilterv3.ProcessingMode{
		RequestBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
	}))
	defer s.Close()
	r, err := s.RequestHeaders(postRequest("ab").Headers, false)
	require.NoError(t, err)
	require.True(t, r.Continue) // STREAMED: released with the headers reply
	require.False(t, r.Headers.Has("content-length"))
	r, err = s.RequestBody([]byte("ab"), true)
	require.NoError(t, err)
	require.Equal(t, "ab", string(r.Body))
	r, err = s.ResponseHeaders(Headers{{":status", "200"}}, false)
	require.NoError(t, err)
	require.True(t, r.Continue)
	for _, c := range []string{"x", "y"} {
		r, err = s.ResponseBody([]byte(c), c == "y")
		require.NoError(t, err)
		require.Equal(t, c, string(r.Body))
	}
	require.Equal(t, []string{"request_headers", "request_body", "response_headers", "response_body", "response_body"}, fake.kinds())
	require.Empty(t, cmp.Diff(&extprocv3.ProtocolConfiguration{
		RequestBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
	}, fake.received()[0].GetProtocolConfig(), protocmp.Transform()))
}

// TestAttributes: request attributes in the first request message, response
// attributes in the first response message (R5.3).
func TestAttributes(t *testing.T) {
	fake := newFake(continuer)
	c := NewClient(GRPC(Direct(fake)), testConfig())
	s := c.Start(testCtx(t), WithRequestAttributes(map[string]any{"xds.route_name": "ai"}), WithResponseAttributes(map[string]any{"response.code": 200}))
	defer s.Close()
	_, err := s.RequestHeaders(postRequest("{}").Headers, false)
	require.NoError(t, err)
	_, err = s.RequestBody([]byte("{}"), true)
	require.NoError(t, err)
	_, err = s.ResponseHeaders(Headers{{":status", "200"}}, true)
	require.NoError(t, err)
	got := fake.received()
	require.Len(t, got, 3)
	want := func(k string, v any) map[string]*structpb.Struct {
		st, err := structpb.NewStruct(map[string]any{k: v})
		require.NoError(t, err)
		return map[string]*structpb.Struct{"envoy.filters.http.ext_proc": st}
	}
	require.Empty(t, cmp.Diff(want("xds.route_name", "ai"), got[0].GetAttributes(), protocmp.Transform()))
	require.Nil(t, got[1].GetAttributes())
	require.Empty(t, cmp.Diff(want("response.code", 200), got[2].GetAttributes(), protocmp.Transform()))

	_, err = c.Start(testCtx(t), WithRequestAttributes(map[string]any{"bad": make(chan int)})).RequestHeaders(getRequest().Headers, true)
	require.Error(t, err)
}

// TestDynamicMetadata: only receiving namespaces holding a Struct are kept
// (R2.6), from every reply type including immediate responses.
func TestDynamicMetadata(t *testing.T) {
	md, err := structpb.NewStruct(map[string]any{
		"ai_gateway": map[string]any{"cost": 42},
		"other":      map[string]any{"x": 1},
	})
	require.NoError(t, err)
	md.Fields["ai_gateway_scalar"] = structpb.NewNumberValue(1)
	fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		r := reply(req, nil)
		if isRequestBody(req) {
			r.DynamicMetadata = md
		}
		return one(r), nil
	})
	cfg := testConfig()
	cfg.ReceivingNamespaces = []string{"ai_gateway", "ai_gateway_scalar"}
	s := NewClient(GRPC(Direct(fake)), cfg).Start(testCtx(t))
	defer s.Close()
	_, err = s.RequestHeaders(postRequest("{}").Headers, false)
	require.NoError(t, err)
	require.Empty(t, s.DynamicMetadata())
	_, err = s.RequestBody([]byte("{}"), true)
	require.NoError(t, err)
	got := s.DynamicMetadata()
	require.Len(t, got, 1)
	require.Empty(t, cmp.Diff(md.GetFields()["ai_gateway"].GetStructValue(), got["ai_gateway"], protocmp.Transform()))
}
