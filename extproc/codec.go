package extproc

import (
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
// instead. Every other message, and every reply, goes to grpc's proto codec.
type codec struct{ base encoding.CodecV2 }

var _ encoding.CodecV2 = codec{}

func newCodec() codec { return codec{base: encoding.GetCodecV2(grpcproto.Name)} }

func (codec) Name() string { return grpcproto.Name }

// Marshal is grpc's. (go-control-plane's vtprotobuf encoders would skip
// reflection, but they are behind the vtprotobuf build tag.)
func (c codec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*extprocv3.ProcessingRequest)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	// A copy the message owns: gRPC reuses data's buffers once we return.
	b := data.Materialize()
	if decodeRequest(b, m) {
		return nil
	}
	return proto.Unmarshal(b, m)
}

// decodeRequest decodes b into m (which it resets) and reports whether it
// could; on false m is in an unspecified state. Bytes fields of m alias b.
func decodeRequest(b []byte, m *extprocv3.ProcessingRequest) bool {
	proto.Reset(m)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if typ == protowire.VarintType && num == 10 { // observability_mode
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			m.ObservabilityMode = v != 0
			continue
		}
		if typ != protowire.BytesType {
			return false
		}
		f, n := consumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case 2, 3, 6, 7: // request/response headers, request/response trailers
			if m.Request != nil {
				return false // a second oneof member: merge or replace, leave it to proto
			}
			hm, eos, ok := decodeHeaders(f, num >= 6)
			if !ok {
				return false
			}
			switch num {
			case 2:
				m.Request = &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: hm, EndOfStream: eos}}
			case 3:
				m.Request = &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: hm, EndOfStream: eos}}
			case 6:
				m.Request = &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{Trailers: hm}}
			default:
				m.Request = &extprocv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: &extprocv3.HttpTrailers{Trailers: hm}}
			}
		case 4, 5: // request/response body
			if m.Request != nil {
				return false
			}
			body, ok := decodeBody(f)
			if !ok {
				return false
			}
			if num == 4 {
				m.Request = &extprocv3.ProcessingRequest_RequestBody{RequestBody: body}
			} else {
				m.Request = &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: body}
			}
		case 8: // metadata_context: Envoy always sends one, empty unless forwarding_namespaces
			if m.MetadataContext != nil || len(f) > 0 {
				return false
			}
			m.MetadataContext = &corev3.Metadata{}
		case 9: // attributes (request_attributes, first message of a direction)
			if !decodeAttribute(f, m) {
				return false
			}
		case 11: // protocol_config (first message)
			if m.ProtocolConfig != nil {
				return false
			}
			pc, ok := decodeProtocolConfig(f)
			if !ok {
				return false
			}
			m.ProtocolConfig = pc
		default:
			return false
		}
	}
	return true
}

// consumeBytes returns a length-delimited field's bytes, capped so that an
// append to them never writes over the rest of the message.
func consumeBytes(b []byte) ([]byte, int) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, n
	}
	return v[:len(v):len(v)], n
}

// decodeHeaders decodes HttpHeaders (or, with trailers, HttpTrailers): the
// HeaderMap and end_of_stream.
func decodeHeaders(b []byte, trailers bool) (*corev3.HeaderMap, bool, bool) {
	var hm *corev3.HeaderMap
	eos := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType && hm == nil:
			f, n := consumeBytes(b)
			if n < 0 {
				return nil, false, false
			}
			b = b[n:]
			if hm = decodeHeaderMap(f); hm == nil {
				return nil, false, false
			}
		case num == 3 && typ == protowire.VarintType && !trailers:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, false, false
			}
			b = b[n:]
			eos = v != 0
		default:
			return nil, false, false
		}
	}
	return hm, eos, true
}

// decodeHeaderMap decodes a HeaderMap with three allocations whatever the
// number of headers: the map, the HeaderValues, and one string holding every
// key and string value (raw values alias b). It returns nil when b is not
// something it decodes exactly as proto.Unmarshal would.
func decodeHeaderMap(b []byte) *corev3.HeaderMap {
	count := 0
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			return nil
		}
		rest = rest[n:]
		n = protowire.ConsumeFieldValue(num, typ, rest)
		if n < 0 {
			return nil
		}
		rest = rest[n:]
		count++
	}
	if count == 0 {
		return &corev3.HeaderMap{}
	}
	// Keys and values are substrings of s, a string of all of b: offsets in b
	// are offsets in s.
	s := string(b)
	vals := make([]corev3.HeaderValue, count)
	hm := &corev3.HeaderMap{Headers: make([]*corev3.HeaderValue, count)}
	off := 0
	for i := range vals {
		_, _, n := protowire.ConsumeTag(b[off:])
		off += n
		f, n := consumeBytes(b[off:])
		base := off + n - len(f)
		off += n
		if !decodeHeaderValue(f, s[base:base+len(f)], &vals[i]) {
			return nil
		}
		hm.Headers[i] = &vals[i]
	}
	return hm
}

// decodeHeaderValue decodes one HeaderValue from b, whose text is also s.
func decodeHeaderValue(b []byte, s string, hv *corev3.HeaderValue) bool {
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 || typ != protowire.BytesType {
			return false
		}
		off += n
		f, n := consumeBytes(b[off:])
		if n < 0 {
			return false
		}
		start := off + n - len(f)
		off += n
		switch num {
		case 1, 2: // key, value: proto3 strings must be UTF-8
			if !utf8.Valid(f) {
				return false
			}
			if num == 1 {
				hv.Key = s[start : start+len(f)]
			} else {
				hv.Value = s[start : start+len(f)]
			}
		case 3: // raw_value
			hv.RawValue = f
		default:
			return false
		}
	}
	return true
}

// decodeBody decodes HttpBody: body and end_of_stream.
func decodeBody(b []byte) (*extprocv3.HttpBody, bool) {
	body := &extprocv3.HttpBody{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			f, n := consumeBytes(b)
			if n < 0 {
				return nil, false
			}
			b = b[n:]
			body.Body = f
		case num == 2 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, false
			}
			b = b[n:]
			body.EndOfStream = v != 0
		default:
			return nil, false
		}
	}
	return body, true
}

// decodeProtocolConfig decodes ProtocolConfiguration: three varints.
func decodeProtocolConfig(b []byte) (*extprocv3.ProtocolConfiguration, bool) {
	pc := &extprocv3.ProtocolConfiguration{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.VarintType {
			return nil, false
		}
		b = b[n:]
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		switch num {
		case 1:
			pc.RequestBodyMode = extprocfilterv3.ProcessingMode_BodySendMode(int32(v)) //nolint:gosec // protobuf's enum conversion
		case 2:
			pc.ResponseBodyMode = extprocfilterv3.ProcessingMode_BodySendMode(int32(v)) //nolint:gosec // protobuf's enum conversion
		case 3:
			pc.SendBodyWithoutWaitingForHeaderResponse = v != 0
		default:
			return nil, false
		}
	}
	return pc, true
}

// decodeAttribute decodes one entry of the attributes map: its key here, its
// Struct value (rare: the first message of a direction) with proto.Unmarshal.
func decodeAttribute(b []byte, m *extprocv3.ProcessingRequest) bool {
	var key string
	var val []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return false
		}
		b = b[n:]
		f, n := consumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case 1:
			if !utf8.Valid(f) {
				return false
			}
			key = string(f)
		case 2:
			if val != nil {
				return false // two values: proto merges them
			}
			val = f
		default:
			return false
		}
	}
	st := &structpb.Struct{}
	if err := proto.Unmarshal(val, st); err != nil {
		return false
	}
	if m.Attributes == nil {
		m.Attributes = make(map[string]*structpb.Struct, 1)
	}
	m.Attributes[key] = st
	return true
}
