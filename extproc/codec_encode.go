package extproc

import (
	"sync"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The replies (ProcessingResponse) are encoded by hand: proto.Marshal walks
// every message twice by reflection (Size, then Marshal) and gRPC wraps its
// output in two more allocations. encodeResponse writes what proto.Marshal
// writes (the same bytes, in its field order) for every field the
// processor sets and the rest of the messages Envoy reads: it computes the
// size (responseSize), then appends. A message it does not cover (dynamic
// metadata, streamed immediate responses, unknown fields, invalid UTF-8, nil
// list elements) makes responseSize return -1 and the codec hands it to
// proto. TestEncodeResponseCoversEveryField pins the fields of each message:
// a new field in go-control-plane fails it until the encoder knows it.

// encodeResponse returns m's wire form in a buffer of replyPool, or ok=false
// when m is not covered.
func encodeResponse(m *extprocv3.ProcessingResponse) (mem.BufferSlice, bool) {
	if w := sharedReplyWire(m); w != nil {
		return w, true
	}
	n := responseSize(m)
	if n < 0 {
		return nil, false
	}
	pool := mem.DefaultBufferPool()
	if n <= replyBufSize {
		pool = smallReplies
	}
	buf := pool.Get(n)
	b := appendResponse((*buf)[:0], m)
	if len(b) != n { // a bug, not an input: never send a malformed message
		pool.Put(buf)
		return nil, false
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, true
}

// replyBufSize is the capacity of smallReplies' buffers: above gRPC's pooling
// threshold (mem.NewBuffer copies nothing and allocates no wrapper for a
// buffer that large) and enough for every reply without a body.
const replyBufSize = 4 << 10

// smallReplies pools the buffers of replies up to replyBufSize. Unlike gRPC's
// default pool it does not zero them: every byte handed out is overwritten.
var smallReplies mem.BufferPool = &replyBufPool{}

type replyBufPool struct{ p sync.Pool }

func (rp *replyBufPool) Get(n int) *[]byte {
	if b, ok := rp.p.Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, replyBufSize)
	return &b
}

func (rp *replyBufPool) Put(b *[]byte) {
	if cap(*b) == replyBufSize {
		rp.p.Put(b)
	}
}

// hasUnknown reports whether m carries unknown fields (proto.Marshal writes
// them; the encoder leaves such messages to it).
func hasUnknown(m protoreflect.ProtoMessage) bool { return len(m.ProtoReflect().GetUnknown()) > 0 }

// msgSize is the size of a length-delimited field num of n bytes; -1 when
// n is.
func msgSize(num protowire.Number, n int) int {
	if n < 0 {
		return -1
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// varintSize is the size of a varint field num holding v, 0 when v is (proto3
// omits zero scalars).
func varintSize(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

func boolSize(num protowire.Number, v bool) int {
	if !v {
		return 0
	}
	return protowire.SizeTag(num) + 1
}

// int32Wire is the wire value of an int32 or enum: sign-extended to 64 bits.
func int32Wire[E ~int32](e E) uint64 { return uint64(int64(e)) } //nolint:gosec // protobuf's enum encoding

// add sums field sizes; any -1 makes the sum -1.
func add(sizes ...int) int {
	n := 0
	for _, s := range sizes {
		if s < 0 {
			return -1
		}
		n += s
	}
	return n
}

func appendMsgHeader(b []byte, num protowire.Number, n int) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(n)) //nolint:gosec // sizes are non-negative
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	b = appendMsgHeader(b, num, len(v))
	return append(b, v...)
}

func appendStringField(b []byte, num protowire.Number, v string) []byte {
	b = appendMsgHeader(b, num, len(v))
	return append(b, v...)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendBoolField(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return append(protowire.AppendTag(b, num, protowire.VarintType), 1)
}

// stringSize is the size of a proto3 string field (omitted when empty); -1
// for invalid UTF-8, which proto.Marshal refuses.
func stringSize(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	if !utf8.ValidString(s) {
		return -1
	}
	return msgSize(num, len(s))
}

func bytesSize(num protowire.Number, v []byte) int {
	if len(v) == 0 {
		return 0
	}
	return msgSize(num, len(v))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return appendStringField(b, num, s)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return appendBytesField(b, num, v)
}

// --- ProcessingResponse -----------------------------------------------------

func responseSize(m *extprocv3.ProcessingResponse) int {
	if m == nil || hasUnknown(m) || m.DynamicMetadata != nil || len(m.TypedDynamicMetadata) > 0 ||
		m.ServerWindowUpdate != nil {
		return -1
	}
	member := 0
	switch r := m.Response.(type) {
	case nil:
	case *extprocv3.ProcessingResponse_RequestHeaders:
		if r == nil {
			return -1
		}
		member = msgSize(1, headersResponseSize(r.RequestHeaders))
	case *extprocv3.ProcessingResponse_ResponseHeaders:
		if r == nil {
			return -1
		}
		member = msgSize(2, headersResponseSize(r.ResponseHeaders))
	case *extprocv3.ProcessingResponse_RequestBody:
		if r == nil {
			return -1
		}
		member = msgSize(3, bodyResponseSize(r.RequestBody))
	case *extprocv3.ProcessingResponse_ResponseBody:
		if r == nil {
			return -1
		}
		member = msgSize(4, bodyResponseSize(r.ResponseBody))
	case *extprocv3.ProcessingResponse_RequestTrailers:
		if r == nil {
			return -1
		}
		member = msgSize(5, trailersResponseSize(r.RequestTrailers))
	case *extprocv3.ProcessingResponse_ResponseTrailers:
		if r == nil {
			return -1
		}
		member = msgSize(6, trailersResponseSize(r.ResponseTrailers))
	case *extprocv3.ProcessingResponse_ImmediateResponse:
		if r == nil {
			return -1
		}
		member = msgSize(7, immediateSize(r.ImmediateResponse))
	default: // streamed_immediate_response
		return -1
	}
	mode := 0
	if m.ModeOverride != nil {
		mode = msgSize(9, modeSize(m.ModeOverride))
	}
	timeout := 0
	if m.OverrideMessageTimeout != nil {
		timeout = msgSize(10, durationSize(m.OverrideMessageTimeout))
	}
	return add(member, mode, timeout,
		boolSize(12, m.RequestDrain), //nolint:staticcheck // deprecated, still on the wire
		boolSize(15, m.RequestDrainRequests), boolSize(16, m.RequestDrainResponses))
}

// appendResponse writes the fields outside the oneof first, as proto.Marshal
// does (its "legacy" order: oneof members last).
func appendResponse(b []byte, m *extprocv3.ProcessingResponse) []byte {
	if m.ModeOverride != nil {
		b = appendMsgHeader(b, 9, modeSize(m.ModeOverride))
		b = appendMode(b, m.ModeOverride)
	}
	if m.OverrideMessageTimeout != nil {
		b = appendMsgHeader(b, 10, durationSize(m.OverrideMessageTimeout))
		b = appendDuration(b, m.OverrideMessageTimeout)
	}
	b = appendBoolField(b, 12, m.RequestDrain) //nolint:staticcheck // deprecated, still on the wire
	b = appendBoolField(b, 15, m.RequestDrainRequests)
	b = appendBoolField(b, 16, m.RequestDrainResponses)
	switch r := m.Response.(type) {
	case *extprocv3.ProcessingResponse_RequestHeaders:
		b = appendMsgHeader(b, 1, headersResponseSize(r.RequestHeaders))
		b = appendHeadersResponse(b, r.RequestHeaders)
	case *extprocv3.ProcessingResponse_ResponseHeaders:
		b = appendMsgHeader(b, 2, headersResponseSize(r.ResponseHeaders))
		b = appendHeadersResponse(b, r.ResponseHeaders)
	case *extprocv3.ProcessingResponse_RequestBody:
		b = appendMsgHeader(b, 3, bodyResponseSize(r.RequestBody))
		b = appendBodyResponse(b, r.RequestBody)
	case *extprocv3.ProcessingResponse_ResponseBody:
		b = appendMsgHeader(b, 4, bodyResponseSize(r.ResponseBody))
		b = appendBodyResponse(b, r.ResponseBody)
	case *extprocv3.ProcessingResponse_RequestTrailers:
		b = appendMsgHeader(b, 5, trailersResponseSize(r.RequestTrailers))
		b = appendTrailersResponse(b, r.RequestTrailers)
	case *extprocv3.ProcessingResponse_ResponseTrailers:
		b = appendMsgHeader(b, 6, trailersResponseSize(r.ResponseTrailers))
		b = appendTrailersResponse(b, r.ResponseTrailers)
	case *extprocv3.ProcessingResponse_ImmediateResponse:
		b = appendMsgHeader(b, 7, immediateSize(r.ImmediateResponse))
		b = appendImmediate(b, r.ImmediateResponse)
	}
	return b
}

// HeadersResponse and BodyResponse: a CommonResponse, field 1.

func headersResponseSize(m *extprocv3.HeadersResponse) int {
	if m == nil || hasUnknown(m) {
		return -1
	}
	return commonFieldSize(m.Response)
}

func appendHeadersResponse(b []byte, m *extprocv3.HeadersResponse) []byte {
	return appendCommonField(b, m.Response)
}

func bodyResponseSize(m *extprocv3.BodyResponse) int {
	if m == nil || hasUnknown(m) {
		return -1
	}
	return commonFieldSize(m.Response)
}

func appendBodyResponse(b []byte, m *extprocv3.BodyResponse) []byte {
	return appendCommonField(b, m.Response)
}

func commonFieldSize(c *extprocv3.CommonResponse) int {
	if c == nil {
		return 0
	}
	return msgSize(1, commonSize(c))
}

func appendCommonField(b []byte, c *extprocv3.CommonResponse) []byte {
	if c == nil {
		return b
	}
	b = appendMsgHeader(b, 1, commonSize(c))
	return appendCommon(b, c)
}

func trailersResponseSize(m *extprocv3.TrailersResponse) int {
	if m == nil || hasUnknown(m) {
		return -1
	}
	if m.HeaderMutation == nil {
		return 0
	}
	return msgSize(1, mutationSize(m.HeaderMutation))
}

func appendTrailersResponse(b []byte, m *extprocv3.TrailersResponse) []byte {
	if m.HeaderMutation == nil {
		return b
	}
	b = appendMsgHeader(b, 1, mutationSize(m.HeaderMutation))
	return appendMutation(b, m.HeaderMutation)
}

// --- CommonResponse ---------------------------------------------------------

func commonSize(c *extprocv3.CommonResponse) int {
	if hasUnknown(c) {
		return -1
	}
	hm, bm, tr := 0, 0, 0
	if c.HeaderMutation != nil {
		hm = msgSize(2, mutationSize(c.HeaderMutation))
	}
	if c.BodyMutation != nil {
		bm = msgSize(3, bodyMutationSize(c.BodyMutation))
	}
	if c.Trailers != nil {
		tr = msgSize(4, headerMapSize(c.Trailers))
	}
	return add(varintSize(1, int32Wire(c.Status)), hm, bm, tr, boolSize(5, c.ClearRouteCache))
}

func appendCommon(b []byte, c *extprocv3.CommonResponse) []byte {
	b = appendVarintField(b, 1, int32Wire(c.Status))
	if c.HeaderMutation != nil {
		b = appendMsgHeader(b, 2, mutationSize(c.HeaderMutation))
		b = appendMutation(b, c.HeaderMutation)
	}
	if c.BodyMutation != nil {
		b = appendMsgHeader(b, 3, bodyMutationSize(c.BodyMutation))
		b = appendBodyMutation(b, c.BodyMutation)
	}
	if c.Trailers != nil {
		b = appendMsgHeader(b, 4, headerMapSize(c.Trailers))
		b = appendHeaderMap(b, c.Trailers)
	}
	return appendBoolField(b, 5, c.ClearRouteCache)
}

// --- HeaderMutation ---------------------------------------------------------

func mutationSize(hm *extprocv3.HeaderMutation) int {
	if hasUnknown(hm) {
		return -1
	}
	n := 0
	for _, o := range hm.SetHeaders {
		if o == nil {
			return -1
		}
		if n = add(n, msgSize(1, optionSize(o))); n < 0 {
			return -1
		}
	}
	for _, r := range hm.RemoveHeaders { // repeated: empty strings are written too
		if !utf8.ValidString(r) {
			return -1
		}
		n += msgSize(2, len(r))
	}
	return n
}

func appendMutation(b []byte, hm *extprocv3.HeaderMutation) []byte {
	for _, o := range hm.SetHeaders {
		b = appendMsgHeader(b, 1, optionSize(o))
		b = appendOption(b, o)
	}
	for _, r := range hm.RemoveHeaders {
		b = appendStringField(b, 2, r)
	}
	return b
}

func optionSize(o *corev3.HeaderValueOption) int {
	if hasUnknown(o) {
		return -1
	}
	h, app := 0, 0
	if o.Header != nil {
		h = msgSize(1, headerValueSize(o.Header))
	}
	if o.Append != nil {
		app = msgSize(2, boolValueSize(o.Append))
	}
	return add(h, app, varintSize(3, int32Wire(o.AppendAction)), boolSize(4, o.KeepEmptyValue))
}

func appendOption(b []byte, o *corev3.HeaderValueOption) []byte {
	if o.Header != nil {
		b = appendMsgHeader(b, 1, headerValueSize(o.Header))
		b = appendHeaderValue(b, o.Header)
	}
	if o.Append != nil {
		b = appendMsgHeader(b, 2, boolValueSize(o.Append))
		b = appendBoolField(b, 1, o.Append.Value)
	}
	b = appendVarintField(b, 3, int32Wire(o.AppendAction))
	return appendBoolField(b, 4, o.KeepEmptyValue)
}

func boolValueSize(v *wrapperspb.BoolValue) int {
	if hasUnknown(v) {
		return -1
	}
	return boolSize(1, v.Value)
}

func headerValueSize(h *corev3.HeaderValue) int {
	if hasUnknown(h) {
		return -1
	}
	return add(stringSize(1, h.Key), stringSize(2, h.Value), bytesSize(3, h.RawValue))
}

func appendHeaderValue(b []byte, h *corev3.HeaderValue) []byte {
	b = appendString(b, 1, h.Key)
	b = appendString(b, 2, h.Value)
	return appendBytes(b, 3, h.RawValue)
}

func headerMapSize(hm *corev3.HeaderMap) int {
	if hasUnknown(hm) {
		return -1
	}
	n := 0
	for _, h := range hm.Headers {
		if h == nil {
			return -1
		}
		if n = add(n, msgSize(1, headerValueSize(h))); n < 0 {
			return -1
		}
	}
	return n
}

func appendHeaderMap(b []byte, hm *corev3.HeaderMap) []byte {
	for _, h := range hm.Headers {
		b = appendMsgHeader(b, 1, headerValueSize(h))
		b = appendHeaderValue(b, h)
	}
	return b
}

// --- BodyMutation -----------------------------------------------------------

func bodyMutationSize(bm *extprocv3.BodyMutation) int {
	if hasUnknown(bm) {
		return -1
	}
	switch m := bm.Mutation.(type) {
	case nil:
		return 0
	case *extprocv3.BodyMutation_Body: // a oneof member is written even when empty
		if m == nil {
			return -1
		}
		return msgSize(1, len(m.Body))
	case *extprocv3.BodyMutation_ClearBody:
		if m == nil {
			return -1
		}
		return protowire.SizeTag(2) + 1
	default: // streamed_response
		return -1
	}
}

func appendBodyMutation(b []byte, bm *extprocv3.BodyMutation) []byte {
	switch m := bm.Mutation.(type) {
	case *extprocv3.BodyMutation_Body:
		b = appendBytesField(b, 1, m.Body)
	case *extprocv3.BodyMutation_ClearBody:
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(m.ClearBody))
	}
	return b
}

// --- ImmediateResponse ------------------------------------------------------

func immediateSize(r *extprocv3.ImmediateResponse) int {
	if r == nil || hasUnknown(r) {
		return -1
	}
	st, hm, gs := 0, 0, 0
	if r.Status != nil {
		st = msgSize(1, httpStatusSize(r.Status))
	}
	if r.Headers != nil {
		hm = msgSize(2, mutationSize(r.Headers))
	}
	if r.GrpcStatus != nil {
		gs = -1
		if !hasUnknown(r.GrpcStatus) {
			gs = msgSize(4, varintSize(1, uint64(r.GrpcStatus.Status)))
		}
	}
	return add(st, hm, bytesSize(3, r.Body), gs, stringSize(5, r.Details))
}

func appendImmediate(b []byte, r *extprocv3.ImmediateResponse) []byte {
	if r.Status != nil {
		b = appendMsgHeader(b, 1, httpStatusSize(r.Status))
		b = appendVarintField(b, 1, int32Wire(r.Status.Code))
	}
	if r.Headers != nil {
		b = appendMsgHeader(b, 2, mutationSize(r.Headers))
		b = appendMutation(b, r.Headers)
	}
	b = appendBytes(b, 3, r.Body)
	if r.GrpcStatus != nil {
		b = appendMsgHeader(b, 4, varintSize(1, uint64(r.GrpcStatus.Status)))
		b = appendVarintField(b, 1, uint64(r.GrpcStatus.Status))
	}
	return appendString(b, 5, r.Details)
}

func httpStatusSize(s *typev3.HttpStatus) int {
	if hasUnknown(s) {
		return -1
	}
	return varintSize(1, int32Wire(s.Code))
}

// --- ProcessingMode, Duration -----------------------------------------------

func modeSize(m *extprocfilterv3.ProcessingMode) int {
	if hasUnknown(m) {
		return -1
	}
	return varintSize(1, int32Wire(m.RequestHeaderMode)) + varintSize(2, int32Wire(m.ResponseHeaderMode)) +
		varintSize(3, int32Wire(m.RequestBodyMode)) + varintSize(4, int32Wire(m.ResponseBodyMode)) +
		varintSize(5, int32Wire(m.RequestTrailerMode)) + varintSize(6, int32Wire(m.ResponseTrailerMode))
}

func appendMode(b []byte, m *extprocfilterv3.ProcessingMode) []byte {
	b = appendVarintField(b, 1, int32Wire(m.RequestHeaderMode))
	b = appendVarintField(b, 2, int32Wire(m.ResponseHeaderMode))
	b = appendVarintField(b, 3, int32Wire(m.RequestBodyMode))
	b = appendVarintField(b, 4, int32Wire(m.ResponseBodyMode))
	b = appendVarintField(b, 5, int32Wire(m.RequestTrailerMode))
	return appendVarintField(b, 6, int32Wire(m.ResponseTrailerMode))
}

func durationSize(d *durationpb.Duration) int {
	if hasUnknown(d) {
		return -1
	}
	return varintSize(1, uint64(d.Seconds)) + varintSize(2, int32Wire(d.Nanos)) //nolint:gosec // protobuf's int64 encoding
}

func appendDuration(b []byte, d *durationpb.Duration) []byte {
	b = appendVarintField(b, 1, uint64(d.Seconds)) //nolint:gosec // protobuf's int64 encoding
	return appendVarintField(b, 2, int32Wire(d.Nanos))
}

// --- shared replies ---------------------------------------------------------

// sharedReplies are the replies that never vary (a plain CONTINUE), shared by
// every stream and so never modified, with their wire form encoded once.
var sharedReplies = func() []sharedReply {
	rs := []*extprocv3.ProcessingResponse{
		replyContinueRequestHeaders, replyContinueResponseHeaders, replyContinueResponseBody,
		replyContinueRequestTrailers, replyContinueResponseTrailers,
	}
	out := make([]sharedReply, len(rs))
	for i, r := range rs {
		b := appendResponse(nil, r)
		out[i] = sharedReply{r, mem.BufferSlice{mem.SliceBuffer(b)}}
	}
	return out
}()

type sharedReply struct {
	msg  *extprocv3.ProcessingResponse
	wire mem.BufferSlice // gRPC only reads it, and SliceBuffer's Free does nothing
}

// sharedReplyWire is the wire form of m when it is a shared reply, else nil.
func sharedReplyWire(m *extprocv3.ProcessingResponse) mem.BufferSlice {
	for i := range sharedReplies {
		if sharedReplies[i].msg == m {
			return sharedReplies[i].wire
		}
	}
	return nil
}
