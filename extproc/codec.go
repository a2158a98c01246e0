package extproc

import (
	"math"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// codec is the server's gRPC codec. Decoding Envoy's messages is a large share
// of the server's CPU per message, most of it allocation (every header is three
// objects in protobuf's generic decoder), so ProcessingRequest is decoded by
// hand (decodeRequest): the headers of a message share one slice of
// HeaderValues and one string, bodies and raw values are sub-slices of one
// private copy of the message. The result is the message proto.Unmarshal would
// build; anything outside what Envoy sends (unknown fields, repeated singular
// messages, header attributes, invalid UTF-8) is handed to proto.Unmarshal
// instead. Replies are encoded by hand too (codec_encode.go); every other
// message goes to grpc's proto codec.
type codec struct{ base encoding.CodecV2 }

var _ encoding.CodecV2 = codec{}

func newCodec() codec { return codec{base: encoding.GetCodecV2(grpcproto.Name)} }

func (codec) Name() string { return grpcproto.Name }

// Marshal encodes the replies by hand (codec_encode.go), and anything else
// or any reply the encoder does not cover with grpc's proto codec.
// (go-control-plane's vtprotobuf encoders would skip reflection too, but they
// are behind the vtprotobuf build tag.)
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(*extprocv3.ProcessingResponse); ok {
		if data, ok := encodeResponse(m); ok {
			return data, nil
		}
	}
	return c.base.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	var m *extprocv3.ProcessingRequest
	var sc *decodeScratch
	switch v := v.(type) {
	case *recvBuf:
		m, sc = &v.ProcessingRequest, &v.scratch
	case *extprocv3.ProcessingRequest:
		m = v
	default:
		return c.base.Unmarshal(data, v)
	}
	// A copy the message owns: gRPC reuses data's buffers once we return.
	b := data.Materialize()
	if decodeRequest(b, m, sc) {
		return nil
	}
	return proto.Unmarshal(b, m)
}

// recvBuf is what Process decodes the messages of a gRPC stream into, one
// after the other: the request, embedded (a *recvBuf is that proto.Message,
// for gRPC and any codec), and the messages the hand decoder hangs from it,
// reused from one message to the next instead of allocated for each. Nothing
// of a message is kept once it is handled but its bytes, which are never
// reused.
type recvBuf struct {
	extprocv3.ProcessingRequest
	scratch decodeScratch
}

// decodeScratch holds the messages decodeRequest reuses: Envoy's empty
// metadata_context, and the headers (their HeaderMap and HeaderValues too) and
// body of the request oneof with their wrappers (trailers are rare:
// allocated).
type decodeScratch struct {
	meta    corev3.Metadata
	hm      corev3.HeaderMap
	hvs     []corev3.HeaderValue
	hvPtrs  []*corev3.HeaderValue
	headers extprocv3.HttpHeaders
	body    extprocv3.HttpBody
	reqH    extprocv3.ProcessingRequest_RequestHeaders
	respH   extprocv3.ProcessingRequest_ResponseHeaders
	reqB    extprocv3.ProcessingRequest_RequestBody
	respB   extprocv3.ProcessingRequest_ResponseBody
}

// decodeRequest decodes b into m (which it resets) and reports whether it
// could; on false m is in an unspecified state. Bytes fields of m alias b.
// With sc, m's sub-messages are sc's (reset), else new.
func decodeRequest(b []byte, m *extprocv3.ProcessingRequest, sc *decodeScratch) bool {
	proto.Reset(m)
	return eachField(b, func(f field) bool {
		if f.num == 10 && f.typ == protowire.VarintType { // observability_mode
			m.ObservabilityMode = f.v != 0
			return true
		}
		if f.typ != protowire.BytesType {
			return false
		}
		switch f.num {
		case 2, 3, 4, 5, 6, 7: // the request oneof
			// A second member would be merged or replace the first: leave it to proto.
			return m.Request == nil && decodeOneof(f.num, f.data, m, sc)
		case 8: // metadata_context: Envoy always sends one, empty unless forwarding_namespaces
			if m.MetadataContext != nil || len(f.data) > 0 {
				return false
			}
			if sc != nil {
				sc.meta.Reset()
				m.MetadataContext = &sc.meta
			} else {
				m.MetadataContext = &corev3.Metadata{}
			}
			return true
		case 9: // attributes (request_attributes, first message of a direction)
			return decodeAttribute(f.data, m)
		case 11: // protocol_config (first message)
			if m.ProtocolConfig != nil {
				return false
			}
			m.ProtocolConfig = &extprocv3.ProtocolConfiguration{}
			return decodeProtocolConfig(f.data, m.ProtocolConfig)
		}
		return false
	})
}

// decodeOneof decodes the request oneof's member num from b.
func decodeOneof(num protowire.Number, b []byte, m *extprocv3.ProcessingRequest, sc *decodeScratch) bool {
	switch num {
	case 2:
		w, h := wrapped(sc.reqHeaders(), func(w *extprocv3.ProcessingRequest_RequestHeaders, h *extprocv3.HttpHeaders) {
			w.RequestHeaders = h
		})
		m.Request = w
		return decodeHeaders(b, &h.Headers, &h.EndOfStream, sc)
	case 3:
		w, h := wrapped(sc.respHeaders(), func(w *extprocv3.ProcessingRequest_ResponseHeaders, h *extprocv3.HttpHeaders) {
			w.ResponseHeaders = h
		})
		m.Request = w
		return decodeHeaders(b, &h.Headers, &h.EndOfStream, sc)
	case 4:
		w, body := wrapped(sc.reqBody(), func(w *extprocv3.ProcessingRequest_RequestBody, b *extprocv3.HttpBody) { w.RequestBody = b })
		m.Request = w
		return decodeBody(b, body)
	case 5:
		w, body := wrapped(sc.respBody(), func(w *extprocv3.ProcessingRequest_ResponseBody, b *extprocv3.HttpBody) { w.ResponseBody = b })
		m.Request = w
		return decodeBody(b, body)
	case 6:
		w, t := wrapped(scratchPair[extprocv3.ProcessingRequest_RequestTrailers, extprocv3.HttpTrailers]{},
			func(w *extprocv3.ProcessingRequest_RequestTrailers, t *extprocv3.HttpTrailers) { w.RequestTrailers = t })
		m.Request = w
		return decodeHeaders(b, &t.Trailers, nil, nil)
	default:
		w, t := wrapped(scratchPair[extprocv3.ProcessingRequest_ResponseTrailers, extprocv3.HttpTrailers]{},
			func(w *extprocv3.ProcessingRequest_ResponseTrailers, t *extprocv3.HttpTrailers) {
				w.ResponseTrailers = t
			})
		m.Request = w
		return decodeHeaders(b, &t.Trailers, nil, nil)
	}
}

// headerMap returns an empty HeaderMap whose Headers has room for n, and n
// empty HeaderValues: sc's, or new ones.
func (sc *decodeScratch) headerMap(n int) (*corev3.HeaderMap, []corev3.HeaderValue) {
	if sc == nil {
		if n == 0 {
			return &corev3.HeaderMap{}, nil
		}
		return &corev3.HeaderMap{Headers: make([]*corev3.HeaderValue, n)}, make([]corev3.HeaderValue, n)
	}
	if cap(sc.hvs) < n {
		sc.hvs = make([]corev3.HeaderValue, n)
		sc.hvPtrs = make([]*corev3.HeaderValue, n)
	}
	vals := sc.hvs[:n]
	for i := range vals {
		vals[i].Reset()
	}
	sc.hm.Reset()
	if n > 0 {
		sc.hm.Headers = sc.hvPtrs[:n]
	}
	return &sc.hm, vals
}

// scratchPair is a oneof wrapper and its message from a decodeScratch, both
// nil without one.
type scratchPair[W, M any] struct {
	w *W
	m *M
}

// wrapped links a oneof wrapper and its message with link: the scratch ones,
// the message reset, or else new ones allocated together.
func wrapped[W, M any, PM interface {
	*M
	Reset()
}](sp scratchPair[W, M], link func(*W, *M)) (*W, *M) {
	if sp.w == nil {
		x := &struct {
			w W
			m M
		}{}
		link(&x.w, &x.m)
		return &x.w, &x.m
	}
	PM(sp.m).Reset()
	link(sp.w, sp.m)
	return sp.w, sp.m
}

func (sc *decodeScratch) reqHeaders() scratchPair[extprocv3.ProcessingRequest_RequestHeaders, extprocv3.HttpHeaders] {
	if sc == nil {
		return scratchPair[extprocv3.ProcessingRequest_RequestHeaders, extprocv3.HttpHeaders]{}
	}
	return scratchPair[extprocv3.ProcessingRequest_RequestHeaders, extprocv3.HttpHeaders]{&sc.reqH, &sc.headers}
}

func (sc *decodeScratch) respHeaders() scratchPair[extprocv3.ProcessingRequest_ResponseHeaders, extprocv3.HttpHeaders] {
	if sc == nil {
		return scratchPair[extprocv3.ProcessingRequest_ResponseHeaders, extprocv3.HttpHeaders]{}
	}
	return scratchPair[extprocv3.ProcessingRequest_ResponseHeaders, extprocv3.HttpHeaders]{&sc.respH, &sc.headers}
}

func (sc *decodeScratch) reqBody() scratchPair[extprocv3.ProcessingRequest_RequestBody, extprocv3.HttpBody] {
	if sc == nil {
		return scratchPair[extprocv3.ProcessingRequest_RequestBody, extprocv3.HttpBody]{}
	}
	return scratchPair[extprocv3.ProcessingRequest_RequestBody, extprocv3.HttpBody]{&sc.reqB, &sc.body}
}

func (sc *decodeScratch) respBody() scratchPair[extprocv3.ProcessingRequest_ResponseBody, extprocv3.HttpBody] {
	if sc == nil {
		return scratchPair[extprocv3.ProcessingRequest_ResponseBody, extprocv3.HttpBody]{}
	}
	return scratchPair[extprocv3.ProcessingRequest_ResponseBody, extprocv3.HttpBody]{&sc.respB, &sc.body}
}

// field is one field of a message.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64 // varint and fixed64 values
	// data is a length-delimited value, capped so that an append to it never
	// writes over the rest of the message; off is its offset in the message.
	data []byte
	off  int
}

// eachField calls f with each field of b in order, and reports whether b is
// well formed and f accepted every field. Fields of types that none of the
// decoded messages has (groups, fixed32) are refused.
func eachField(b []byte, f func(field) bool) bool {
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return false
		}
		off += n
		fd := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			fd.v, n = protowire.ConsumeVarint(b[off:])
		case protowire.Fixed64Type:
			fd.v, n = protowire.ConsumeFixed64(b[off:])
		case protowire.BytesType:
			var d []byte
			if d, n = protowire.ConsumeBytes(b[off:]); n >= 0 {
				fd.data, fd.off = d[:len(d):len(d)], off+n-len(d)
			}
		default:
			return false
		}
		if n < 0 || !f(fd) {
			return false
		}
		off += n
	}
	return true
}

// decodeHeaders decodes HttpHeaders (eos non-nil) or HttpTrailers (eos nil):
// the HeaderMap (sc's when not nil) and end_of_stream.
func decodeHeaders(b []byte, hm **corev3.HeaderMap, eos *bool, sc *decodeScratch) bool {
	return eachField(b, func(f field) bool {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType && *hm == nil:
			*hm = decodeHeaderMap(f.data, sc)
			return *hm != nil
		case f.num == 3 && f.typ == protowire.VarintType && eos != nil:
			*eos = f.v != 0
			return true
		}
		return false
	})
}

// decodeHeaderMap decodes a HeaderMap with three allocations whatever the
// number of headers: the map, the HeaderValues, and one string holding every
// key and string value (raw values alias b); with sc, the map and the
// HeaderValues are sc's, and the string is the only one. It returns nil when b
// is not something it decodes exactly as proto.Unmarshal would.
func decodeHeaderMap(b []byte, sc *decodeScratch) *corev3.HeaderMap {
	count := 0
	if !eachField(b, func(f field) bool {
		count++
		return f.num == 1 && f.typ == protowire.BytesType
	}) {
		return nil
	}
	hm, vals := sc.headerMap(count)
	if count == 0 {
		return hm
	}
	// Keys and values are substrings of s, a string of all of b: offsets in b
	// are offsets in s.
	s := string(b)
	i := 0
	if !eachField(b, func(f field) bool {
		hm.Headers[i] = &vals[i]
		i++
		return decodeHeaderValue(f.data, s[f.off:f.off+len(f.data)], hm.Headers[i-1])
	}) {
		return nil
	}
	return hm
}

// decodeHeaderValue decodes one HeaderValue from b, whose text is also s.
func decodeHeaderValue(b []byte, s string, hv *corev3.HeaderValue) bool {
	return eachField(b, func(f field) bool {
		if f.typ != protowire.BytesType {
			return false
		}
		switch f.num {
		case 1, 2: // key, value: proto3 strings must be UTF-8
			if !utf8.Valid(f.data) {
				return false
			}
			if f.num == 1 {
				hv.Key = s[f.off : f.off+len(f.data)]
			} else {
				hv.Value = s[f.off : f.off+len(f.data)]
			}
			return true
		case 3: // raw_value
			hv.RawValue = f.data
			return true
		}
		return false
	})
}

// decodeBody decodes HttpBody: body and end_of_stream.
func decodeBody(b []byte, body *extprocv3.HttpBody) bool {
	return eachField(b, func(f field) bool {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			body.Body = f.data
		case f.num == 2 && f.typ == protowire.VarintType:
			body.EndOfStream = f.v != 0
		default:
			return false
		}
		return true
	})
}

// decodeProtocolConfig decodes ProtocolConfiguration: three varints.
func decodeProtocolConfig(b []byte, pc *extprocv3.ProtocolConfiguration) bool {
	return eachField(b, func(f field) bool {
		if f.typ != protowire.VarintType {
			return false
		}
		switch f.num {
		case 1:
			pc.RequestBodyMode = extprocfilterv3.ProcessingMode_BodySendMode(int32(f.v)) //nolint:gosec // protobuf's enum conversion
		case 2:
			pc.ResponseBodyMode = extprocfilterv3.ProcessingMode_BodySendMode(int32(f.v)) //nolint:gosec // protobuf's enum conversion
		case 3:
			pc.SendBodyWithoutWaitingForHeaderResponse = f.v != 0
		default:
			return false
		}
		return true
	})
}

// decodeAttribute decodes one entry of the attributes map (the first message
// of a direction).
func decodeAttribute(b []byte, m *extprocv3.ProcessingRequest) bool {
	key, val, ok := decodeMapEntry(b)
	if !ok {
		return false
	}
	st := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	if !eachField(val, func(f field) bool { // Struct: map<string, Value> fields = 1
		if f.num != 1 || f.typ != protowire.BytesType {
			return false
		}
		k, v, ok := decodeMapEntry(f.data)
		if !ok {
			return false
		}
		vp := &valueParts{}
		st.Fields[k] = &vp.v
		return decodeScalarValue(v, vp)
	}) {
		return false
	}
	if m.Attributes == nil {
		m.Attributes = make(map[string]*structpb.Struct, 1)
	}
	m.Attributes[key] = st
	return true
}

// decodeMapEntry decodes a map entry with a string key and a message value.
func decodeMapEntry(b []byte) (key string, val []byte, ok bool) {
	ok = eachField(b, func(f field) bool {
		switch {
		case f.typ != protowire.BytesType:
			return false
		case f.num == 1 && utf8.Valid(f.data):
			key = attributeKey(f.data)
			return true
		case f.num == 2 && val == nil: // two values would be merged: leave it to proto
			val = f.data
			return true
		}
		return false
	})
	return key, val, ok
}

// attributeKey is string(b), without a copy for the keys Tollgate's filter
// configuration makes Envoy send.
func attributeKey(b []byte) string {
	switch string(b) {
	case "envoy.filters.http.ext_proc": // the namespace of the filter's attributes
		return "envoy.filters.http.ext_proc"
	case "xds.route_name": // its request_attributes (xds/listener.go)
		return "xds.route_name"
	}
	return string(b)
}

// valueParts is a Value and its kind when a string (Envoy's attributes are),
// allocated together.
type valueParts struct {
	v   structpb.Value
	str structpb.Value_StringValue
}

// decodeScalarValue decodes a Value holding null, a number, a string or a bool
// (Envoy's attributes); nested structs and lists are left to proto.
func decodeScalarValue(b []byte, vp *valueParts) bool {
	v := &vp.v
	return eachField(b, func(f field) bool {
		switch {
		case f.num == 1 && f.typ == protowire.VarintType:
			v.Kind = &structpb.Value_NullValue{NullValue: structpb.NullValue(int32(f.v))} //nolint:gosec // protobuf's enum conversion
		case f.num == 2 && f.typ == protowire.Fixed64Type:
			v.Kind = &structpb.Value_NumberValue{NumberValue: math.Float64frombits(f.v)}
		case f.num == 3 && f.typ == protowire.BytesType && utf8.Valid(f.data):
			vp.str.StringValue = string(f.data)
			v.Kind = &vp.str
		case f.num == 4 && f.typ == protowire.VarintType:
			v.Kind = &structpb.Value_BoolValue{BoolValue: f.v != 0}
		default:
			return false
		}
		return true
	})
}
