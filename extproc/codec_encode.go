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
// sizes (encoder.responseSize), then appends. A message it does not cover (dynamic
// metadata, streamed immediate responses, unknown fields, invalid UTF-8, nil
// list elements, too many headers) makes responseSize return -1 and the codec
// hands it to proto. TestEncodeResponseCoversEveryField pins the fields of each message:
// a new field in go-control-plane fails it until the encoder knows it.

// encodeResponse returns m's wire form in a buffer of replyPool, or ok=false
// when m is not covered.
func encodeResponse(m *extprocv3.ProcessingResponse) (mem.BufferSlice, bool) {
	if w := sharedReplyWire(m); w != nil {
		return w, true
	}
	var e encoder
	n := e.responseSize(m)
	if n < 0 {
		return nil, false
	}
	pool := mem.DefaultBufferPool()
	if n <= replyBufSize {
		pool = smallReplies
	}
	buf := pool.Get(n)
	b := e.appendResponse((*buf)[:0], m)
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

// --- the encoder ------------------------------------------------------------

// encoder holds the sizes of a reply's nested messages: the size pass
// (…Size) records them in pre-order, each in a slot reserved before its
// children are sized, and the append pass (append…) takes them in the same
// order, so that nothing is sized or validated twice. A reply with more
// nested messages than slots (some twenty headers) is left to proto.
type encoder struct {
	sizes   [64]int
	n, next int
}

// reserve returns the slot of the next nested message, -1 when full.
func (e *encoder) reserve() int {
	if e.n == len(e.sizes) {
		return -1
	}
	e.n++
	return e.n - 1
}

// nested records n, the size of the message of slot, and returns the size of
// the field num holding it; -1 when either is.
func (e *encoder) nested(num protowire.Number, slot, n int) int {
	if slot < 0 || n < 0 {
		return -1
	}
	e.sizes[slot] = n
	return msgSize(num, n)
}

// header appends the tag and length of the next nested message.
func (e *encoder) header(b []byte, num protowire.Number) []byte {
	n := e.sizes[e.next]
	e.next++
	return appendMsgHeader(b, num, n)
}

// --- ProcessingResponse -----------------------------------------------------

// responseSize sizes m's fields in appendResponse's order.
func (e *encoder) responseSize(m *extprocv3.ProcessingResponse) int {
	if m == nil || hasUnknown(m) || m.DynamicMetadata != nil || len(m.TypedDynamicMetadata) > 0 ||
		m.ServerWindowUpdate != nil {
		return -1
	}
	mode := 0
	if m.ModeOverride != nil {
		slot := e.reserve()
		mode = e.nested(9, slot, modeSize(m.ModeOverride))
	}
	timeout := 0
	if m.OverrideMessageTimeout != nil {
		slot := e.reserve()
		timeout = e.nested(10, slot, durationSize(m.OverrideMessageTimeout))
	}
	member := 0
	switch r := m.Response.(type) {
	case nil:
	case *extprocv3.ProcessingResponse_RequestHeaders:
		if r == nil {
			return -1
		}
		slot := e.reserve()
		member = e.nested(1, slot, e.headersResponseSize(r.RequestHeaders))
	case *extprocv3.ProcessingResponse_ResponseHeaders:
		if r == nil {
			return -1
		}
		slot := e.reserve()
		member = e.nested(2, slot, e.headersResponseSize(r.ResponseHeaders))
	case *extprocv3.ProcessingResponse_RequestBody:
		if r == nil {
			return -1
		}
		slot := e.reserve()
		member = e.nested(3, slot, e.bodyResponseSize(r.RequestBody))
	case *extprocv3.ProcessingResponse_ResponseBody:
		if r == nil {
			return -1
		}
		slot := e.reserve()
		member = e.nested(4, slot, e.bodyResponseSize(r.ResponseBody))
	case *extprocv3.ProcessingResponse_RequestTrailers:
		if r == nil {
			return -1
		}
		slot := e.reserve()
		member = e.nested(5, slot, e.trailersResponseSize(r.RequestTrailers))
	case *extprocv3.ProcessingResponse_ResponseTrailers:
		if r == nil {
			return -1
		}
		slot := e.reserve()
		member = e.nested(6, slot, e.trailersResponseSize(r.ResponseTrailers))
	case *extprocv3.ProcessingResponse_ImmediateResponse:
		if r == nil {
			return -1
		}
		slot := e.reserve()
		member = e.nested(7, slot, e.immediateSize(r.ImmediateResponse))
	default: // streamed_immediate_response
		return -1
	}
	return add(mode, timeout,
		boolSize(12, m.RequestDrain), //nolint:staticcheck // deprecated, still on the wire
		boolSize(15, m.RequestDrainRequests), boolSize(16, m.RequestDrainResponses), member)
}

// appendResponse writes the fields outside the oneof first, as proto.Marshal
// does (its "legacy" order: oneof members last).
func (e *encoder) appendResponse(b []byte, m *extprocv3.ProcessingResponse) []byte {
	if m.ModeOverride != nil {
		b = e.header(b, 9)
		b = appendMode(b, m.ModeOverride)
	}
	if m.OverrideMessageTimeout != nil {
		b = e.header(b, 10)
		b = appendDuration(b, m.OverrideMessageTimeout)
	}
	b = appendBoolField(b, 12, m.RequestDrain) //nolint:staticcheck // deprecated, still on the wire
	b = appendBoolField(b, 15, m.RequestDrainRequests)
	b = appendBoolField(b, 16, m.RequestDrainResponses)
	switch r := m.Response.(type) {
	case *extprocv3.ProcessingResponse_RequestHeaders:
		b = e.appendCommonField(e.header(b, 1), r.RequestHeaders.Response)
	case *extprocv3.ProcessingResponse_ResponseHeaders:
		b = e.appendCommonField(e.header(b, 2), r.ResponseHeaders.Response)
	case *extprocv3.ProcessingResponse_RequestBody:
		b = e.appendCommonField(e.header(b, 3), r.RequestBody.Response)
	case *extprocv3.ProcessingResponse_ResponseBody:
		b = e.appendCommonField(e.header(b, 4), r.ResponseBody.Response)
	case *extprocv3.ProcessingResponse_RequestTrailers:
		b = e.appendTrailersResponse(e.header(b, 5), r.RequestTrailers)
	case *extprocv3.ProcessingResponse_ResponseTrailers:
		b = e.appendTrailersResponse(e.header(b, 6), r.ResponseTrailers)
	case *extprocv3.ProcessingResponse_ImmediateResponse:
		b = e.appendImmediate(e.header(b, 7), r.ImmediateResponse)
	}
	return b
}

// HeadersResponse and BodyResponse: a CommonResponse, field 1.

func (e *encoder) headersResponseSize(m *extprocv3.HeadersResponse) int {
	if m == nil || hasUnknown(m) {
		return -1
	}
	return e.commonFieldSize(m.Response)
}

func (e *encoder) bodyResponseSize(m *extprocv3.BodyResponse) int {
	if m == nil || hasUnknown(m) {
		return -1
	}
	return e.commonFieldSize(m.Response)
}

func (e *encoder) commonFieldSize(c *extprocv3.CommonResponse) int {
	if c == nil {
		return 0
	}
	slot := e.reserve()
	return e.nested(1, slot, e.commonSize(c))
}

func (e *encoder) appendCommonField(b []byte, c *extprocv3.CommonResponse) []byte {
	if c == nil {
		return b
	}
	return e.appendCommon(e.header(b, 1), c)
}

func (e *encoder) trailersResponseSize(m *extprocv3.TrailersResponse) int {
	if m == nil || hasUnknown(m) {
		return -1
	}
	if m.HeaderMutation == nil {
		return 0
	}
	slot := e.reserve()
	return e.nested(1, slot, e.mutationSize(m.HeaderMutation))
}

func (e *encoder) appendTrailersResponse(b []byte, m *extprocv3.TrailersResponse) []byte {
	if m.HeaderMutation == nil {
		return b
	}
	return e.appendMutation(e.header(b, 1), m.HeaderMutation)
}

// --- CommonResponse ---------------------------------------------------------

func (e *encoder) commonSize(c *extprocv3.CommonResponse) int {
	if hasUnknown(c) {
		return -1
	}
	hm, bm, tr := 0, 0, 0
	if c.HeaderMutation != nil {
		slot := e.reserve()
		hm = e.nested(2, slot, e.mutationSize(c.HeaderMutation))
	}
	if c.BodyMutation != nil {
		slot := e.reserve()
		bm = e.nested(3, slot, bodyMutationSize(c.BodyMutation))
	}
	if c.Trailers != nil {
		slot := e.reserve()
		tr = e.nested(4, slot, e.headerMapSize(c.Trailers))
	}
	return add(varintSize(1, int32Wire(c.Status)), hm, bm, tr, boolSize(5, c.ClearRouteCache))
}

func (e *encoder) appendCommon(b []byte, c *extprocv3.CommonResponse) []byte {
	b = appendVarintField(b, 1, int32Wire(c.Status))
	if c.HeaderMutation != nil {
		b = e.appendMutation(e.header(b, 2), c.HeaderMutation)
	}
	if c.BodyMutation != nil {
		b = appendBodyMutation(e.header(b, 3), c.BodyMutation)
	}
	if c.Trailers != nil {
		b = e.appendHeaderMap(e.header(b, 4), c.Trailers)
	}
	return appendBoolField(b, 5, c.ClearRouteCache)
}

// --- HeaderMutation ---------------------------------------------------------

func (e *encoder) mutationSize(hm *extprocv3.HeaderMutation) int {
	if hasUnknown(hm) {
		return -1
	}
	n := 0
	for _, o := range hm.SetHeaders {
		if o == nil {
			return -1
		}
		slot := e.reserve()
		if n = add(n, e.nested(1, slot, e.optionSize(o))); n < 0 {
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

func (e *encoder) appendMutation(b []byte, hm *extprocv3.HeaderMutation) []byte {
	for _, o := range hm.SetHeaders {
		b = e.appendOption(e.header(b, 1), o)
	}
	for _, r := range hm.RemoveHeaders {
		b = appendStringField(b, 2, r)
	}
	return b
}

func (e *encoder) optionSize(o *corev3.HeaderValueOption) int {
	if hasUnknown(o) {
		return -1
	}
	h, app := 0, 0
	if o.Header != nil {
		slot := e.reserve()
		h = e.nested(1, slot, headerValueSize(o.Header))
	}
	if o.Append != nil {
		slot := e.reserve()
		app = e.nested(2, slot, boolValueSize(o.Append))
	}
	return add(h, app, varintSize(3, int32Wire(o.AppendAction)), boolSize(4, o.KeepEmptyValue))
}

func (e *encoder) appendOption(b []byte, o *corev3.HeaderValueOption) []byte {
	if o.Header != nil {
		b = appendHeaderValue(e.header(b, 1), o.Header)
	}
	if o.Append != nil {
		b = appendBoolField(e.header(b, 2), 1, o.Append.Value)
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

func (e *encoder) headerMapSize(hm *corev3.HeaderMap) int {
	if hasUnknown(hm) {
		return -1
	}
	n := 0
	for _, h := range hm.Headers {
		if h == nil {
			return -1
		}
		slot := e.reserve()
		if n = add(n, e.nested(1, slot, headerValueSize(h))); n < 0 {
			return -1
		}
	}
	return n
}

func (e *encoder) appendHeaderMap(b []byte, hm *corev3.HeaderMap) []byte {
	for _, h := range hm.Headers {
		b = appendHeaderValue(e.header(b, 1), h)
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

func (e *encoder) immediateSize(r *extprocv3.ImmediateResponse) int {
	if r == nil || hasUnknown(r) {
		return -1
	}
	st, hm, gs := 0, 0, 0
	if r.Status != nil {
		slot := e.reserve()
		st = e.nested(1, slot, httpStatusSize(r.Status))
	}
	if r.Headers != nil {
		slot := e.reserve()
		hm = e.nested(2, slot, e.mutationSize(r.Headers))
	}
	if r.GrpcStatus != nil {
		slot := e.reserve()
		gs = e.nested(4, slot, grpcStatusSize(r.GrpcStatus))
	}
	return add(st, hm, bytesSize(3, r.Body), gs, stringSize(5, r.Details))
}

func (e *encoder) appendImmediate(b []byte, r *extprocv3.ImmediateResponse) []byte {
	if r.Status != nil {
		b = appendVarintField(e.header(b, 1), 1, int32Wire(r.Status.Code))
	}
	if r.Headers != nil {
		b = e.appendMutation(e.header(b, 2), r.Headers)
	}
	b = appendBytes(b, 3, r.Body)
	if r.GrpcStatus != nil {
		b = appendVarintField(e.header(b, 4), 1, uint64(r.GrpcStatus.Status))
	}
	return appendString(b, 5, r.Details)
}

func httpStatusSize(s *typev3.HttpStatus) int {
	if hasUnknown(s) {
		return -1
	}
	return varintSize(1, int32Wire(s.Code))
}

func grpcStatusSize(s *extprocv3.GrpcStatus) int {
	if hasUnknown(s) {
		return -1
	}
	return varintSize(1, uint64(s.Status))
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
		var e encoder
		e.responseSize(r) // covered (TestEncodeResponse)
		b := e.appendResponse(nil, r)
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
