package extprocfiltertest

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// cloneResponse is a deep copy of m, as proto.Clone makes it. The replies a
// processor sends almost always carry only header and body mutations; those
// are copied by hand (proto.Clone's reflection cost ~4% of the gateway's CPU
// per request); anything else goes through proto.Clone. Strings are shared
// (immutable); byte slices are copied, since a server may reuse its buffers
// once Send returned.
func cloneResponse(m *extprocv3.ProcessingResponse) *extprocv3.ProcessingResponse {
	if m == nil {
		return nil
	}
	if c, ok := fastCloneResponse(m); ok {
		return c
	}
	return proto.Clone(m).(*extprocv3.ProcessingResponse)
}

func unknown(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) > 0 }

func fastCloneResponse(m *extprocv3.ProcessingResponse) (*extprocv3.ProcessingResponse, bool) {
	if m.DynamicMetadata != nil || m.TypedDynamicMetadata != nil || m.ModeOverride != nil ||
		m.OverrideMessageTimeout != nil || m.ServerWindowUpdate != nil || unknown(m) {
		return nil, false
	}
	c := &extprocv3.ProcessingResponse{
		RequestDrain:          m.RequestDrain, //nolint:staticcheck // deprecated, still a field to copy
		RequestDrainRequests:  m.RequestDrainRequests,
		RequestDrainResponses: m.RequestDrainResponses,
	}
	ok := true
	switch r := m.Response.(type) {
	case nil:
	case *extprocv3.ProcessingResponse_RequestHeaders:
		var h *extprocv3.HeadersResponse
		h, ok = cloneHeadersResponse(r.RequestHeaders)
		c.Response = &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: h}
	case *extprocv3.ProcessingResponse_ResponseHeaders:
		var h *extprocv3.HeadersResponse
		h, ok = cloneHeadersResponse(r.ResponseHeaders)
		c.Response = &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: h}
	case *extprocv3.ProcessingResponse_RequestBody:
		var b *extprocv3.BodyResponse
		b, ok = cloneBodyResponse(r.RequestBody)
		c.Response = &extprocv3.ProcessingResponse_RequestBody{RequestBody: b}
	case *extprocv3.ProcessingResponse_ResponseBody:
		var b *extprocv3.BodyResponse
		b, ok = cloneBodyResponse(r.ResponseBody)
		c.Response = &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: b}
	case *extprocv3.ProcessingResponse_RequestTrailers:
		var t *extprocv3.TrailersResponse
		t, ok = cloneTrailersResponse(r.RequestTrailers)
		c.Response = &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: t}
	case *extprocv3.ProcessingResponse_ResponseTrailers:
		var t *extprocv3.TrailersResponse
		t, ok = cloneTrailersResponse(r.ResponseTrailers)
		c.Response = &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: t}
	default:
		return nil, false // immediate responses and the rest: rare
	}
	return c, ok
}

func cloneHeadersResponse(m *extprocv3.HeadersResponse) (*extprocv3.HeadersResponse, bool) {
	if m == nil {
		return nil, true
	}
	if unknown(m) {
		return nil, false
	}
	r, ok := cloneCommon(m.Response)
	return &extprocv3.HeadersResponse{Response: r}, ok
}

func cloneBodyResponse(m *extprocv3.BodyResponse) (*extprocv3.BodyResponse, bool) {
	if m == nil {
		return nil, true
	}
	if unknown(m) {
		return nil, false
	}
	r, ok := cloneCommon(m.Response)
	return &extprocv3.BodyResponse{Response: r}, ok
}

func cloneTrailersResponse(m *extprocv3.TrailersResponse) (*extprocv3.TrailersResponse, bool) {
	if m == nil {
		return nil, true
	}
	if unknown(m) {
		return nil, false
	}
	hm, ok := cloneHeaderMutation(m.HeaderMutation)
	return &extprocv3.TrailersResponse{HeaderMutation: hm}, ok
}

func cloneCommon(m *extprocv3.CommonResponse) (*extprocv3.CommonResponse, bool) {
	if m == nil {
		return nil, true
	}
	if unknown(m) {
		return nil, false
	}
	c := &extprocv3.CommonResponse{Status: m.Status, ClearRouteCache: m.ClearRouteCache}
	var ok1, ok2, ok3 bool
	c.HeaderMutation, ok1 = cloneHeaderMutation(m.HeaderMutation)
	c.BodyMutation, ok2 = cloneBodyMutation(m.BodyMutation)
	c.Trailers, ok3 = cloneHeaderMap(m.Trailers)
	return c, ok1 && ok2 && ok3
}

func cloneHeaderMutation(m *extprocv3.HeaderMutation) (*extprocv3.HeaderMutation, bool) {
	if m == nil {
		return nil, true
	}
	if unknown(m) {
		return nil, false
	}
	c := &extprocv3.HeaderMutation{}
	if m.SetHeaders != nil {
		c.SetHeaders = make([]*corev3.HeaderValueOption, len(m.SetHeaders))
		// One array for the options and one for the values: two
		// allocations instead of two per header.
		opts := make([]corev3.HeaderValueOption, len(m.SetHeaders))
		vals := make([]corev3.HeaderValue, len(m.SetHeaders))
		n := 0
		for _, o := range m.SetHeaders {
			n += len(o.GetHeader().GetRawValue())
		}
		raw := make([]byte, 0, n) // every raw value, in one array
		var bools []wrapperspb.BoolValue
		for i, o := range m.SetHeaders {
			if o == nil {
				continue
			}
			if unknown(o) {
				return nil, false
			}
			d := &opts[i]
			d.AppendAction, d.KeepEmptyValue = o.AppendAction, o.KeepEmptyValue
			if o.Append != nil {
				if unknown(o.Append) {
					return nil, false
				}
				if bools == nil {
					bools = make([]wrapperspb.BoolValue, len(m.SetHeaders))
				}
				bools[i].Value = o.Append.Value
				d.Append = &bools[i]
			}
			if h := o.Header; h != nil {
				if unknown(h) {
					return nil, false
				}
				v := &vals[i]
				v.Key, v.Value = h.Key, h.Value
				if len(h.RawValue) > 0 {
					start := len(raw)
					raw = append(raw, h.RawValue...)
					v.RawValue = raw[start:len(raw):len(raw)]
				}
				d.Header = v
			}
			c.SetHeaders[i] = d
		}
	}
	if m.RemoveHeaders != nil {
		c.RemoveHeaders = append([]string(nil), m.RemoveHeaders...)
	}
	return c, true
}

func copyHeaderValue(dst, src *corev3.HeaderValue) bool {
	if unknown(src) {
		return false
	}
	dst.Key, dst.Value = src.Key, src.Value
	if len(src.RawValue) > 0 { // proto3 bytes: empty is unset, as proto.Clone leaves it
		dst.RawValue = append([]byte{}, src.RawValue...)
	}
	return true
}

func cloneHeaderMap(m *corev3.HeaderMap) (*corev3.HeaderMap, bool) {
	if m == nil {
		return nil, true
	}
	if unknown(m) {
		return nil, false
	}
	c := &corev3.HeaderMap{}
	if m.Headers != nil {
		c.Headers = make([]*corev3.HeaderValue, len(m.Headers))
		for i, h := range m.Headers {
			if h == nil {
				continue
			}
			v := &corev3.HeaderValue{}
			if !copyHeaderValue(v, h) {
				return nil, false
			}
			c.Headers[i] = v
		}
	}
	return c, true
}

func cloneBodyMutation(m *extprocv3.BodyMutation) (*extprocv3.BodyMutation, bool) {
	if m == nil {
		return nil, true
	}
	if unknown(m) {
		return nil, false
	}
	switch b := m.Mutation.(type) {
	case nil:
		return &extprocv3.BodyMutation{}, true
	case *extprocv3.BodyMutation_Body:
		var body []byte
		if b.Body != nil {
			body = append([]byte{}, b.Body...)
		}
		return &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: body}}, true
	case *extprocv3.BodyMutation_ClearBody:
		return &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{ClearBody: b.ClearBody}}, true
	default:
		return nil, false
	}
}
