package extproc

import (
	"bytes"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
)

// codecCases are messages as Envoy sends them, and some it does not; fast
// tells whether decodeRequest decodes them itself.
func codecCases(t testing.TB) []struct {
	name string
	msg  *extprocv3.ProcessingRequest
	fast bool
} {
	t.Helper()
	attrs, err := structpb.NewStruct(map[string]any{"xds.route_name": "ai-chat", "n": 1.5, "b": true, "z": nil})
	require.NoError(t, err)
	nested, err := structpb.NewStruct(map[string]any{"l": []any{"a", true}, "s": map[string]any{"k": "v"}})
	require.NoError(t, err)
	withEnvoyFields := func(m *extprocv3.ProcessingRequest) *extprocv3.ProcessingRequest {
		m = proto.Clone(m).(*extprocv3.ProcessingRequest)
		m.MetadataContext = &corev3.Metadata{}
		m.Attributes = map[string]*structpb.Struct{"envoy.filters.http.ext_proc": attrs}
		m.ProtocolConfig = &extprocv3.ProtocolConfiguration{
			RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED,
			ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
		}
		return m
	}
	withMeta := proto.Clone(benchRespBody).(*extprocv3.ProcessingRequest)
	withMeta.MetadataContext = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"ns": attrs}}
	headerAttrs := proto.Clone(benchRespHdrs).(*extprocv3.ProcessingRequest)
	headerAttrs.GetResponseHeaders().Attributes = map[string]*structpb.Struct{"a": attrs} //nolint:staticcheck // deprecated, still decodable
	nestedAttrs := proto.Clone(benchReqHdrs).(*extprocv3.ProcessingRequest)
	nestedAttrs.Attributes = map[string]*structpb.Struct{"envoy.filters.http.ext_proc": nested}
	flow := proto.Clone(benchChunk).(*extprocv3.ProcessingRequest)
	flow.FlowControlInit = &extprocv3.ProcessingRequest_FlowControlInit{}
	return []struct {
		name string
		msg  *extprocv3.ProcessingRequest
		fast bool
	}{
		{"request headers, first message", withEnvoyFields(benchReqHdrs), true},
		{"request body", benchReqBodyM, true},
		{"response headers", benchRespHdrs, true},
		{"response body", benchRespBody, true},
		{"streamed chunk", benchChunk, true},
		{"empty headers, end of stream", &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
			RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{}, EndOfStream: true},
		}}, true},
		{"string values", &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
			ResponseHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
				{Key: ":status", Value: "200"}, {Key: "x-empty"}, {Key: "x-bin", RawValue: []byte{0xff, 0}},
			}}},
		}}, true},
		{"request trailers", &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{
			RequestTrailers: &extprocv3.HttpTrailers{Trailers: hdrs("grpc-status", "0")},
		}}, true},
		{"response trailers, observability", &extprocv3.ProcessingRequest{ObservabilityMode: true, Request: &extprocv3.ProcessingRequest_ResponseTrailers{
			ResponseTrailers: &extprocv3.HttpTrailers{Trailers: hdrs("x-t", "1")},
		}}, true},
		{"empty body", &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{EndOfStream: true},
		}}, true},
		{"empty message", &extprocv3.ProcessingRequest{}, true},
		{"forwarded metadata", withMeta, false},
		{"nested attributes", nestedAttrs, false},
		{"header attributes", headerAttrs, false},
		{"flow control", flow, false},
	}
}

// TestCodecDecodesAsProto: the codec's message is proto.Unmarshal's, on the
// fast path and off it.
func TestCodecDecodesAsProto(t *testing.T) {
	c := newCodec()
	for _, tc := range codecCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			b, err := proto.Marshal(tc.msg)
			require.NoError(t, err)
			require.Equal(t, tc.fast, decodeRequest(bytes.Clone(b), &extprocv3.ProcessingRequest{}, nil))
			got := &extprocv3.ProcessingRequest{}
			require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got))
			require.Empty(t, cmp.Diff(tc.msg, got, protocmp.Transform()))
		})
	}
}

// TestCodecOwnsItsBytes: the decoded message does not alias gRPC's buffer,
// and appending to a decoded body does not overwrite the fields after it.
func TestCodecOwnsItsBytes(t *testing.T) {
	m := &extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte("abc")}},
		ProtocolConfig: &extprocv3.ProtocolConfiguration{
			RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED,
		},
	}
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	got := &extprocv3.ProcessingRequest{}
	require.NoError(t, newCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got))
	clear(b)
	body := got.GetRequestBody().GetBody()
	require.Equal(t, len(body), cap(body))
	_ = append(body, "xxxxxxxx"...)
	require.Empty(t, cmp.Diff(m, got, protocmp.Transform()))
}

// TestCodecInvalid: what proto.Unmarshal refuses, the codec refuses.
func TestCodecInvalid(t *testing.T) {
	badKey := protowire.AppendTag(nil, 1, protowire.BytesType)
	badKey = protowire.AppendBytes(badKey, []byte{0xff})
	hv := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), badKey)
	hm := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), hv)
	msg := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), hm)
	for name, b := range map[string][]byte{
		"invalid UTF-8 key": msg,
		"truncated":         msg[:len(msg)-1],
		"bad tag":           {0},
	} {
		t.Run(name, func(t *testing.T) {
			require.Error(t, proto.Unmarshal(b, &extprocv3.ProcessingRequest{}))
			require.False(t, decodeRequest(bytes.Clone(b), &extprocv3.ProcessingRequest{}, nil))
			require.Error(t, newCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &extprocv3.ProcessingRequest{}))
		})
	}
}

// FuzzDecodeRequest: whenever decodeRequest decodes, proto.Unmarshal decodes
// the same bytes to the same message.
func FuzzDecodeRequest(f *testing.F) {
	for _, tc := range codecCases(f) {
		b, err := proto.Marshal(tc.msg)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := &extprocv3.ProcessingRequest{}
		if !decodeRequest(bytes.Clone(b), got, nil) {
			return
		}
		want := &extprocv3.ProcessingRequest{}
		require.NoError(t, proto.Unmarshal(b, want))
		require.Empty(t, cmp.Diff(want, got, protocmp.Transform()))
		// And into a recvBuf that decoded the seeds before.
		rb := seeded(t)
		require.NoError(t, newCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, rb))
		require.Empty(t, cmp.Diff(want, &rb.ProcessingRequest, protocmp.Transform()))
	})
}

// TestCodecReusesRecvBuf: decoding every case, in turn, into one recvBuf (as
// Process does over gRPC) gives each message as proto.Unmarshal would, and
// the fast path allocates only the message's bytes for a body, and those and
// the one string of keys and values for headers.
func TestCodecReusesRecvBuf(t *testing.T) {
	c := newCodec()
	rb := &recvBuf{}
	cases := codecCases(t)
	for range 2 {
		for _, tc := range cases {
			b, err := proto.Marshal(tc.msg)
			require.NoError(t, err)
			require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, rb), tc.name)
			require.Empty(t, cmp.Diff(tc.msg, &rb.ProcessingRequest, protocmp.Transform()), tc.name)
		}
	}
	for _, tc := range []struct {
		msg    *extprocv3.ProcessingRequest
		allocs float64
	}{{benchChunk, 1}, {benchRespHdrs, 2}} {
		b, err := proto.Marshal(tc.msg)
		require.NoError(t, err)
		data := mem.BufferSlice{mem.SliceBuffer(b)}
		require.InDelta(t, tc.allocs, testing.AllocsPerRun(100, func() { _ = c.Unmarshal(data, rb) }), 0)
	}
}

// seeded returns a recvBuf that has decoded every case of codecCases.
func seeded(t *testing.T) *recvBuf {
	rb := &recvBuf{}
	for _, tc := range codecCases(t) {
		b, err := proto.Marshal(tc.msg)
		require.NoError(t, err)
		require.NoError(t, newCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, rb))
	}
	return rb
}
