package extproc

import (
	"context"
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"pgregory.net/rapid"
)

// requireEncodesAsProto checks the hand encoder against proto.Marshal
// (deterministic): the same bytes when it covers m, and whether it does.
func requireEncodesAsProto(t require.TestingT, m *extprocv3.ProcessingResponse, covered bool) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	want, wantErr := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	data, ok := encodeResponse(m)
	require.Equal(t, covered, ok, "covered")
	if !ok {
		return
	}
	require.NoError(t, wantErr)
	// (Empty and nil are the same bytes.)
	want = append([]byte{}, want...)
	require.Equal(t, want, append([]byte{}, data.Materialize()...))
	data.Free()
	// And the codec's Marshal is the same bytes.
	viaCodec, err := newCodec().Marshal(m)
	require.NoError(t, err)
	require.Equal(t, want, append([]byte{}, viaCodec.Materialize()...))
	viaCodec.Free()
}

// TestEncodeResponse: replies as the processor builds them, and what the
// encoder leaves to proto.
func TestEncodeResponse(t *testing.T) {
	set := func(k, v string) *corev3.HeaderValueOption {
		var l headerList
		l = l.add(k, v)
		return l.options()[0]
	}
	common := &extprocv3.CommonResponse{
		Status: extprocv3.CommonResponse_CONTINUE_AND_REPLACE,
		HeaderMutation: &extprocv3.HeaderMutation{
			SetHeaders:    []*corev3.HeaderValueOption{set(RouteHeader, "openai-gpt4o"), set(":path", "/v1/chat/completions"), set("x-empty", "")},
			RemoveHeaders: []string{"authorization", "", "content-length"},
		},
		BodyMutation:    &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: []byte(`{"model":"gpt-4o"}`)}},
		Trailers:        hdrs("grpc-status", "0"),
		ClearRouteCache: true,
	}
	big := make([]byte, 70_000) // length varints of several bytes, pooled buffer
	for i := range big {
		big[i] = byte(i)
	}
	bodyReply := func(bm *extprocv3.BodyMutation) *extprocv3.ProcessingResponse {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{
			ResponseBody: &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{BodyMutation: bm}},
		}}
	}
	withUnknown := proto.Clone(replyContinueResponseBody).(*extprocv3.ProcessingResponse)
	withUnknown.GetResponseBody().ProtoReflect().SetUnknown(protoreflect.RawFields{0x78, 0x01})
	st := &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("v")}}
	s := &stream{p: New(newCatalog(), benchAccountant{}), id: "tg-1"}
	headers := func(n int) *extprocv3.ProcessingResponse {
		var l headerList
		for i := range n {
			l = l.addInt("x-h", int64(i))
		}
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
			ResponseHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{
				HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: l.options()},
			}},
		}}
	}

	for _, tc := range []struct {
		name    string
		msg     *extprocv3.ProcessingResponse
		covered bool
	}{
		{"empty", &extprocv3.ProcessingResponse{}, true},
		{"request headers continue", replyContinueRequestHeaders, true},
		{"response headers continue", replyContinueResponseHeaders, true},
		{"response body continue", replyContinueResponseBody, true},
		{"request trailers", replyContinueRequestTrailers, true},
		{"response trailers", replyContinueResponseTrailers, true},
		{"request body, everything", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
			RequestBody: &extprocv3.BodyResponse{Response: common},
		}}, true},
		{"request headers with common", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
			RequestHeaders: &extprocv3.HeadersResponse{Response: common},
		}}, true},
		{"response headers, mode override", &extprocv3.ProcessingResponse{
			Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{
				Response: &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{
					SetHeaders: []*corev3.HeaderValueOption{set(hdrRequestID, "tg-1")}, RemoveHeaders: []string{hdrContentLength},
				}},
			}},
			ModeOverride: &extprocfilterv3.ProcessingMode{
				RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED, ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
				RequestHeaderMode: extprocfilterv3.ProcessingMode_SKIP, ResponseTrailerMode: extprocfilterv3.ProcessingMode_SEND,
			},
		}, true},
		{"trailers with mutation", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
			ResponseTrailers: &extprocv3.TrailersResponse{HeaderMutation: common.HeaderMutation},
		}}, true},
		{"body cleared", s.newChunkReply(nil), true},
		{"clear_body false", bodyReply(&extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{}}), true},
		{"empty body member", bodyReply(&extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{}}), true},
		{"no mutation member", bodyReply(&extprocv3.BodyMutation{}), true},
		{"large body", s.newChunkReply(big), true},
		{"immediate 401", s.immediate(401, []byte(`{"error":{}}`), [][2]string{{"retry-after", "1"}}), true},
		{"immediate, all fields", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
			ImmediateResponse: &extprocv3.ImmediateResponse{
				Status: &typev3.HttpStatus{Code: typev3.StatusCode_TooManyRequests}, GrpcStatus: &extprocv3.GrpcStatus{Status: 8},
				Details: "tollgate_429", Headers: &extprocv3.HeaderMutation{},
			},
		}}, true},
		{"immediate, empty grpc status", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
			ImmediateResponse: &extprocv3.ImmediateResponse{GrpcStatus: &extprocv3.GrpcStatus{}, Status: &typev3.HttpStatus{}},
		}}, true},
		{"header options", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
			RequestHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{
				SetHeaders: []*corev3.HeaderValueOption{
					{
						Header: &corev3.HeaderValue{Key: "a", Value: "v"}, Append: wrapperspb.Bool(true), KeepEmptyValue: true,
						AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
					},
					{},
					{Append: &wrapperspb.BoolValue{}},
				},
			}}},
		}}, true},
		{"timeout and drains", &extprocv3.ProcessingResponse{
			OverrideMessageTimeout: &durationpb.Duration{Seconds: -3, Nanos: -5},
			RequestDrain:           true, //nolint:staticcheck // deprecated, still on the wire
			RequestDrainRequests:   true, RequestDrainResponses: true,
		}, true},
		{"zero timeout", &extprocv3.ProcessingResponse{OverrideMessageTimeout: &durationpb.Duration{}}, true},
		{"negative status", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
			ImmediateResponse: &extprocv3.ImmediateResponse{Status: &typev3.HttpStatus{Code: -1}},
		}}, true},

		{"20 headers", headers(20), true},

		{"25 headers: more nested messages than the encoder's slots", headers(25), false},
		{"dynamic metadata", &extprocv3.ProcessingResponse{DynamicMetadata: st}, false},
		{"typed dynamic metadata", &extprocv3.ProcessingResponse{TypedDynamicMetadata: map[string]*anypb.Any{"k": {}}}, false},
		{"server window update", &extprocv3.ProcessingResponse{ServerWindowUpdate: &extprocv3.ProcessingResponse_ServerWindowUpdate{}}, false},
		{"streamed immediate response", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_StreamedImmediateResponse{
			StreamedImmediateResponse: &extprocv3.StreamedImmediateResponse{},
		}}, false},
		{"streamed body mutation", bodyReply(&extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_StreamedResponse{
			StreamedResponse: &extprocv3.StreamedBodyResponse{Body: []byte("x")},
		}}), false},
		{"unknown fields", withUnknown, false},
		{"nil oneof message", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{}}, false},
		{"nil header option", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
			ImmediateResponse: &extprocv3.ImmediateResponse{Headers: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{nil}}},
		}}, false},
		{"invalid UTF-8 key", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
			ImmediateResponse: &extprocv3.ImmediateResponse{Headers: &extprocv3.HeaderMutation{
				SetHeaders: []*corev3.HeaderValueOption{set("\xff", "v")},
			}},
		}}, false},
		{"invalid UTF-8 removal", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
			ImmediateResponse: &extprocv3.ImmediateResponse{Headers: &extprocv3.HeaderMutation{RemoveHeaders: []string{"\xff"}}},
		}}, false},
		{"invalid UTF-8 details", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
			ImmediateResponse: &extprocv3.ImmediateResponse{Details: "\xc3"},
		}}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) { requireEncodesAsProto(t, tc.msg, tc.covered) })
	}
}

// TestEncodeProcessorReplies: every reply of the processor's request
// lifecycle, streamed and not, is encoded by hand, as proto.Marshal would.
func TestEncodeProcessorReplies(t *testing.T) {
	p := New(newCatalog(), benchAccountant{})
	ctx := context.Background()
	check := func(r *extprocv3.ProcessingResponse) {
		t.Helper()
		require.NotNil(t, r)
		requireEncodesAsProto(t, r, true)
	}
	s := &stream{p: p}
	for _, m := range []*extprocv3.ProcessingRequest{benchReqHdrs, benchReqBodyM, benchRespHdrs, benchRespBody} {
		check(s.handle(ctx, m))
	}
	body := []byte(`{"model":"gpt-4o","stream":true}`)
	s = &stream{p: p}
	for _, m := range []*extprocv3.ProcessingRequest{reqHeadersMsg(len(body), false), bodyMsg(body), benchSSEHdrs, benchChunk} {
		check(s.handle(ctx, m))
	}
	check(s.handle(ctx, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseTrailers{
		ResponseTrailers: &extprocv3.HttpTrailers{},
	}}))
	s = &stream{p: p}
	check(s.handle(ctx, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: hdrs(":path", "/nowhere", ":method", "GET")},
	}}))
}

// TestEncodeResponseCoversEveryField pins the fields of the messages the
// encoder writes: a field added to one of them (a go-control-plane upgrade)
// fails here until the encoder writes it or refuses messages that set it.
func TestEncodeResponseCoversEveryField(t *testing.T) {
	for _, tc := range []struct {
		msg    proto.Message
		fields []protoreflect.FieldNumber
	}{
		// 8, 11, 13 and 14 are refused when set; the rest are written.
		{&extprocv3.ProcessingResponse{}, []protoreflect.FieldNumber{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		{&extprocv3.HeadersResponse{}, []protoreflect.FieldNumber{1}},
		{&extprocv3.BodyResponse{}, []protoreflect.FieldNumber{1}},
		{&extprocv3.TrailersResponse{}, []protoreflect.FieldNumber{1}},
		{&extprocv3.CommonResponse{}, []protoreflect.FieldNumber{1, 2, 3, 4, 5}},
		{&extprocv3.HeaderMutation{}, []protoreflect.FieldNumber{1, 2}},
		{&extprocv3.BodyMutation{}, []protoreflect.FieldNumber{1, 2, 3}}, // 3 refused
		{&extprocv3.ImmediateResponse{}, []protoreflect.FieldNumber{1, 2, 3, 4, 5}},
		{&extprocv3.GrpcStatus{}, []protoreflect.FieldNumber{1}},
		{&corev3.HeaderValueOption{}, []protoreflect.FieldNumber{1, 2, 3, 4}},
		{&corev3.HeaderValue{}, []protoreflect.FieldNumber{1, 2, 3}},
		{&corev3.HeaderMap{}, []protoreflect.FieldNumber{1}},
		{&wrapperspb.BoolValue{}, []protoreflect.FieldNumber{1}},
		{&typev3.HttpStatus{}, []protoreflect.FieldNumber{1}},
		{&extprocfilterv3.ProcessingMode{}, []protoreflect.FieldNumber{1, 2, 3, 4, 5, 6}},
		{&durationpb.Duration{}, []protoreflect.FieldNumber{1, 2}},
	} {
		fds := tc.msg.ProtoReflect().Descriptor().Fields()
		var got []protoreflect.FieldNumber
		for i := range fds.Len() {
			got = append(got, fds.Get(i).Number())
		}
		slices.Sort(got)
		require.Equal(t, tc.fields, got, "%T", tc.msg)
	}
}

// TestEncodeResponseProperty: for generated replies, the encoder writes what
// proto.Marshal writes, and covers every reply made only of covered fields.
func TestEncodeResponseProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, covered := genResponse(t)
		requireEncodesAsProto(t, m, covered)
		if covered { // and the codec decodes it back as proto would
			data, _ := encodeResponse(m)
			got := &extprocv3.ProcessingResponse{}
			require.NoError(t, proto.Unmarshal(data.Materialize(), got))
			require.Empty(t, cmp.Diff(m, got, protocmp.Transform()))
		}
	})
}

// genResponse generates a reply, and whether the encoder covers it.
func genResponse(t *rapid.T) (*extprocv3.ProcessingResponse, bool) {
	covered := true
	uncovered := func(label string) bool {
		if rapid.IntRange(0, 30).Draw(t, label) == 0 {
			covered = false
			return true
		}
		return false
	}
	str := func(label string) string {
		if uncovered(label + "-invalid") {
			return "\xff" + rapid.String().Draw(t, label)
		}
		return rapid.String().Draw(t, label)
	}
	bytesOf := func(label string) []byte {
		b := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, label)
		if len(b) == 0 && rapid.Bool().Draw(t, label+"-nil") {
			return nil
		}
		return b
	}
	genMutation := func(label string) *extprocv3.HeaderMutation {
		if !rapid.Bool().Draw(t, label) {
			return nil
		}
		hm := &extprocv3.HeaderMutation{}
		for i := range rapid.IntRange(0, 4).Draw(t, label+"-sets") {
			_ = i
			if uncovered(label + "-nil-option") {
				hm.SetHeaders = append(hm.SetHeaders, nil)
				continue
			}
			o := &corev3.HeaderValueOption{
				AppendAction:   corev3.HeaderValueOption_HeaderAppendAction(rapid.Int32Range(-2, 3).Draw(t, label+"-action")),
				KeepEmptyValue: rapid.Bool().Draw(t, label+"-keep"),
			}
			if rapid.Bool().Draw(t, label+"-has-header") {
				o.Header = &corev3.HeaderValue{Key: str(label + "-key"), Value: str(label + "-value"), RawValue: bytesOf(label + "-raw")}
			}
			if rapid.Bool().Draw(t, label+"-has-append") {
				o.Append = wrapperspb.Bool(rapid.Bool().Draw(t, label+"-append"))
			}
			hm.SetHeaders = append(hm.SetHeaders, o)
		}
		for i := range rapid.IntRange(0, 3).Draw(t, label+"-removes") {
			_ = i
			hm.RemoveHeaders = append(hm.RemoveHeaders, str(label+"-remove"))
		}
		return hm
	}
	genCommon := func() *extprocv3.CommonResponse {
		if !rapid.Bool().Draw(t, "has-common") {
			return nil
		}
		c := &extprocv3.CommonResponse{
			Status:          extprocv3.CommonResponse_ResponseStatus(rapid.Int32Range(-1, 2).Draw(t, "status")),
			HeaderMutation:  genMutation("common-mutation"),
			ClearRouteCache: rapid.Bool().Draw(t, "clear-route-cache"),
		}
		switch rapid.IntRange(0, 4).Draw(t, "body-mutation") {
		case 1:
			c.BodyMutation = &extprocv3.BodyMutation{}
		case 2:
			c.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: bytesOf("body")}}
		case 3:
			c.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{ClearBody: rapid.Bool().Draw(t, "clear")}}
		case 4:
			if uncovered("streamed-mutation") {
				c.BodyMutation = &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_StreamedResponse{
					StreamedResponse: &extprocv3.StreamedBodyResponse{},
				}}
			}
		}
		if rapid.IntRange(0, 5).Draw(t, "has-trailers") == 0 {
			c.Trailers = &corev3.HeaderMap{}
			for i := range rapid.IntRange(0, 2).Draw(t, "trailers") {
				_ = i
				c.Trailers.Headers = append(c.Trailers.Headers, &corev3.HeaderValue{Key: str("trailer-key"), RawValue: bytesOf("trailer-raw")})
			}
		}
		return c
	}
	m := &extprocv3.ProcessingResponse{}
	switch rapid.IntRange(0, 8).Draw(t, "response") {
	case 1:
		m.Response = &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: genCommon()}}
	case 2:
		m.Response = &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{Response: genCommon()}}
	case 3:
		m.Response = &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: genCommon()}}
	case 4:
		m.Response = &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: genCommon()}}
	case 5:
		m.Response = &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{
			HeaderMutation: genMutation("trailer-mutation"),
		}}
	case 6:
		m.Response = &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{
			HeaderMutation: genMutation("trailer-mutation"),
		}}
	case 7:
		ir := &extprocv3.ImmediateResponse{Headers: genMutation("immediate-headers"), Body: bytesOf("immediate-body"), Details: str("details")}
		if rapid.Bool().Draw(t, "has-status") {
			ir.Status = &typev3.HttpStatus{Code: typev3.StatusCode(rapid.Int32Range(-1, 600).Draw(t, "code"))}
		}
		if rapid.Bool().Draw(t, "has-grpc-status") {
			ir.GrpcStatus = &extprocv3.GrpcStatus{Status: rapid.Uint32Range(0, 20).Draw(t, "grpc-status")}
		}
		m.Response = &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: ir}
	case 8:
		if uncovered("streamed-immediate") {
			m.Response = &extprocv3.ProcessingResponse_StreamedImmediateResponse{
				StreamedImmediateResponse: &extprocv3.StreamedImmediateResponse{},
			}
		}
	}
	if rapid.Bool().Draw(t, "has-mode") {
		mode := func(label string) int32 { return rapid.Int32Range(-1, 4).Draw(t, label) }
		m.ModeOverride = &extprocfilterv3.ProcessingMode{
			RequestHeaderMode:   extprocfilterv3.ProcessingMode_HeaderSendMode(mode("m1")),
			ResponseHeaderMode:  extprocfilterv3.ProcessingMode_HeaderSendMode(mode("m2")),
			RequestBodyMode:     extprocfilterv3.ProcessingMode_BodySendMode(mode("m3")),
			ResponseBodyMode:    extprocfilterv3.ProcessingMode_BodySendMode(mode("m4")),
			RequestTrailerMode:  extprocfilterv3.ProcessingMode_HeaderSendMode(mode("m5")),
			ResponseTrailerMode: extprocfilterv3.ProcessingMode_HeaderSendMode(mode("m6")),
		}
	}
	if rapid.IntRange(0, 4).Draw(t, "has-timeout") == 0 {
		m.OverrideMessageTimeout = &durationpb.Duration{
			Seconds: rapid.Int64().Draw(t, "seconds"), Nanos: rapid.Int32().Draw(t, "nanos"),
		}
	}
	m.RequestDrain = rapid.Bool().Draw(t, "drain") //nolint:staticcheck // deprecated, still on the wire
	m.RequestDrainRequests = rapid.Bool().Draw(t, "drain-requests")
	m.RequestDrainResponses = rapid.Bool().Draw(t, "drain-responses")
	if uncovered("dynamic-metadata") {
		m.DynamicMetadata = &structpb.Struct{}
	}
	return m, covered
}

// BenchmarkMarshalReply: the codec's Marshal of the processor's replies to a
// chat request (request body, response headers, response body), by hand and
// with grpc's proto codec.
func BenchmarkMarshalReply(b *testing.B) {
	s := &stream{p: New(newCatalog(), benchAccountant{})}
	ctx := context.Background()
	var replies []*extprocv3.ProcessingResponse
	for _, m := range []*extprocv3.ProcessingRequest{benchReqHdrs, benchReqBodyM, benchRespHdrs, benchRespBody} {
		replies = append(replies, s.handle(ctx, m))
	}
	for _, c := range []struct {
		name  string
		codec interface {
			Marshal(any) (mem.BufferSlice, error)
		}
	}{{"hand", newCodec()}, {"proto", newCodec().base}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range replies[1:] {
					data, err := c.codec.Marshal(r)
					if err != nil {
						b.Fatal(err)
					}
					data.Free()
				}
			}
		})
	}
}
