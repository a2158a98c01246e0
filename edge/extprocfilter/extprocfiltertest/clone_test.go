package extprocfiltertest

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestCloneResponse: cloneResponse equals proto.Clone and shares no bytes
// with its input.
func TestCloneResponse(t *testing.T) {
	hm := func() *extprocv3.HeaderMutation {
		return &extprocv3.HeaderMutation{
			SetHeaders: []*corev3.HeaderValueOption{
				{Header: &corev3.HeaderValue{Key: "a", RawValue: []byte("1")}, AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD},
				{Header: &corev3.HeaderValue{Key: "b", Value: "2"}, Append: wrapperspb.Bool(true), KeepEmptyValue: true},
				{Header: &corev3.HeaderValue{Key: "c", RawValue: []byte{}}},
				{},
			},
			RemoveHeaders: []string{"x", "y"},
		}
	}
	common := func() *extprocv3.CommonResponse {
		return &extprocv3.CommonResponse{
			Status: extprocv3.CommonResponse_CONTINUE_AND_REPLACE, HeaderMutation: hm(), ClearRouteCache: true,
			BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: []byte("body")}},
			Trailers:     &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: "t", RawValue: []byte("v")}}},
		}
	}
	for name, m := range map[string]*extprocv3.ProcessingResponse{
		"empty":             {},
		"request headers":   {Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: common()}}, RequestDrain: true},
		"response headers":  {Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}},
		"request body":      {Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: common()}}},
		"response body":     {Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{ClearBody: true}}}}}},
		"empty body":        {Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{}}}}},
		"request trailers":  {Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{HeaderMutation: hm()}}},
		"response trailers": {Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}},
		"immediate":         {Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{Body: []byte("no")}}},
		"timeout override":  {OverrideMessageTimeout: durationpb.New(1), Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}},
	} {
		t.Run(name, func(t *testing.T) {
			want := proto.Clone(m)
			got := cloneResponse(m)
			require.Empty(t, cmpDiff(want, got))
			// Overwrite every byte of the input: the copy must not change.
			scribble(m)
			require.Empty(t, cmpDiff(want, got))
		})
	}
	require.Nil(t, cloneResponse(nil))
}

func cmpDiff(a, b proto.Message) string { return cmp.Diff(a, b, protocmp.Transform()) }

func scribble(m *extprocv3.ProcessingResponse) {
	var common *extprocv3.CommonResponse
	switch {
	case m.GetRequestHeaders() != nil:
		common = m.GetRequestHeaders().GetResponse()
	case m.GetRequestBody() != nil:
		common = m.GetRequestBody().GetResponse()
	case m.GetImmediateResponse() != nil:
		clear(m.GetImmediateResponse().GetBody())
	}
	for _, o := range common.GetHeaderMutation().GetSetHeaders() {
		clear(o.GetHeader().GetRawValue())
	}
	clear(common.GetBodyMutation().GetBody())
	for _, h := range common.GetTrailers().GetHeaders() {
		clear(h.GetRawValue())
	}
}

// TestCloneResponseFields: the hand-written copy knows every field of the
// messages it copies; a new field in go-control-plane must be added there.
func TestCloneResponseFields(t *testing.T) {
	for _, tc := range []struct {
		m      proto.Message
		fields int
	}{
		{&extprocv3.ProcessingResponse{}, 16},
		{&extprocv3.HeadersResponse{}, 1},
		{&extprocv3.BodyResponse{}, 1},
		{&extprocv3.TrailersResponse{}, 1},
		{&extprocv3.CommonResponse{}, 5},
		{&extprocv3.HeaderMutation{}, 2},
		{&extprocv3.BodyMutation{}, 3},
		{&corev3.HeaderValueOption{}, 4},
		{&corev3.HeaderValue{}, 3},
		{&corev3.HeaderMap{}, 1},
	} {
		d := tc.m.ProtoReflect().Descriptor()
		require.Equal(t, tc.fields, d.Fields().Len(), "%s", d.FullName())
	}
}

// BenchmarkCloneResponse: a request-body reply as the processor sends it
// (routing headers and the rewritten body), by hand and by proto.Clone.
func BenchmarkCloneResponse(b *testing.B) {
	m := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{
		Response: &extprocv3.CommonResponse{
			HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
				{Header: &corev3.HeaderValue{Key: "x-tollgate-route", RawValue: []byte("dep-1")}, Append: wrapperspb.Bool(false)},
				{Header: &corev3.HeaderValue{Key: ":path", RawValue: []byte("/v1/chat/completions")}, Append: wrapperspb.Bool(false)},
				{Header: &corev3.HeaderValue{Key: "authorization", RawValue: []byte("Bearer sk-provider-key")}, Append: wrapperspb.Bool(false)},
				{Header: &corev3.HeaderValue{Key: "content-length", RawValue: []byte("92")}, Append: wrapperspb.Bool(false)},
			}, RemoveHeaders: []string{"x-api-key"}},
			BodyMutation:    &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: make([]byte, 92)}},
			ClearRouteCache: true,
		},
	}}}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = cloneResponse(m)
		}
	})
	b.Run("proto.Clone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = proto.Clone(m)
		}
	})
}
