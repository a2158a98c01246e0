package extproc

import (
	"context"
	"strconv"
	"strings"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// The processor's replies are built with few allocations: a reply's messages
// (ProcessingResponse, its oneof wrapper, Body/HeadersResponse,
// CommonResponse, HeaderMutation, BodyMutation) and its set_headers are one
// pooled object, given back once the data plane applied it (replies.go);
// the others' set_headers come from a headerList in one allocation whatever
// their number. Replies are never touched while lent
// (extprocfiltertest.DirectOwned passes them to the data plane by pointer).

// The replies that are a plain CONTINUE are shared by every stream (the codec
// sends them pre-encoded).
var (
	replyContinueRequestHeaders = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
		RequestHeaders: &extprocv3.HeadersResponse{},
	}}
	replyContinueResponseHeaders = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
		ResponseHeaders: &extprocv3.HeadersResponse{},
	}}
	replyContinueResponseBody = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{
		ResponseBody: &extprocv3.BodyResponse{},
	}}
	replyContinueRequestTrailers = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{
		RequestTrailers: &extprocv3.TrailersResponse{},
	}}
	replyContinueResponseTrailers = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
		ResponseTrailers: &extprocv3.TrailersResponse{},
	}}
)

// replyParts holds the CommonResponse of a reply and what it points to, and
// room for its set_headers (setHeaders); pooledReply holds it with the rest
// of the reply.
type replyParts struct {
	c  extprocv3.CommonResponse
	hm extprocv3.HeaderMutation
	bodyMutationParts
	hs replyHeaders
}

// bodyMutationParts holds a BodyMutation and its oneof wrappers.
type bodyMutationParts struct {
	bm    extprocv3.BodyMutation
	set   extprocv3.BodyMutation_Body
	clear extprocv3.BodyMutation_ClearBody
}

// mutation returns a BodyMutation replacing the body with b: ClearBody when b
// is empty.
func (p *bodyMutationParts) mutation(b []byte) *extprocv3.BodyMutation {
	if len(b) == 0 {
		p.clear.ClearBody = true
		p.bm.Mutation = &p.clear
	} else {
		p.set.Body = b
		p.bm.Mutation = &p.set
	}
	return &p.bm
}

// newRequestBodyReply returns a request-body reply and its parts, from the
// pool (replies.go): its CommonResponse has its HeaderMutation, empty.
func (s *stream) newRequestBodyReply() (*extprocv3.ProcessingResponse, *replyParts) {
	x := s.lendReply()
	x.body.Response, x.reqBody.RequestBody, x.pr.Response = &x.c, &x.body, &x.reqBody
	return &x.pr, &x.replyParts
}

// newResponseBodyReply is newRequestBodyReply for the response body.
func (s *stream) newResponseBodyReply() (*extprocv3.ProcessingResponse, *replyParts) {
	x := s.lendReply()
	x.body.Response, x.respBody.ResponseBody, x.pr.Response = &x.c, &x.body, &x.respBody
	return &x.pr, &x.replyParts
}

// newResponseHeadersReply is newRequestBodyReply for the response headers.
func (s *stream) newResponseHeadersReply() (*extprocv3.ProcessingResponse, *replyParts) {
	x := s.lendReply()
	x.hdrs.Response, x.respHdrs.ResponseHeaders, x.pr.Response = &x.c, &x.hdrs, &x.respHdrs
	return &x.pr, &x.replyParts
}

// modeStreamed switches the response body to STREAMED (shared: read-only).
var modeStreamed = &extprocfilterv3.ProcessingMode{
	RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED,
	ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
}

// headerList collects the headers a reply sets, to build their options at
// once (options). Its methods return the list, as append does, so that its
// slices may live on the caller's stack:
//
//	var kvs [8]headerKV
//	var vals [256]byte
//	l := headerList{kv: kvs[:0], vals: vals[:0]}
//	l = l.add(k, v)
type headerList struct {
	kv   []headerKV
	vals []byte // every value, back to back
}

// headerKV is one header of a headerList: its value is vals[start:end].
type headerKV struct {
	key        string
	start, end int
}

func (l headerList) add(k, v string) headerList {
	start := len(l.vals)
	l.vals = append(l.vals, v...)
	l.kv = append(l.kv, headerKV{k, start, len(l.vals)})
	return l
}

func (l headerList) addInt(k string, n int64) headerList {
	start := len(l.vals)
	l.vals = strconv.AppendInt(l.vals, n, 10)
	l.kv = append(l.kv, headerKV{k, start, len(l.vals)})
	return l
}

func (l headerList) addUSD(k string, m kernel.Money) headerList {
	start := len(l.vals)
	l.vals = translate.AppendUSD(l.vals, m)
	l.kv = append(l.kv, headerKV{k, start, len(l.vals)})
	return l
}

func (l headerList) addAll(kvs [][2]string) headerList {
	for _, kv := range kvs {
		l = l.add(kv[0], kv[1])
	}
	return l
}

// options returns the set_headers overwriting each header (raw_value only,
// append=false: R2.9), in order; nil when there are none.
func (l headerList) options() []*corev3.HeaderValueOption {
	if len(l.kv) == 0 {
		return nil
	}
	return l.fill(headerSets(len(l.kv), l.vals))
}

// fill points sets and out (one of each per header) at the headers, whose
// values are in vals, a copy of l.vals; it returns out.
func (l headerList) fill(sets []headerSet, out []*corev3.HeaderValueOption, vals []byte) []*corev3.HeaderValueOption {
	for i, kv := range l.kv {
		hs := &sets[i]
		hs.val.Key, hs.val.RawValue = kv.key, vals[kv.start:kv.end:kv.end]
		hs.opt.Header, hs.opt.Append = &hs.val, appendFalse
		out[i] = &hs.opt
	}
	return out
}

// headerSets returns n headerSets, a list for their options and a copy of
// vals (the headers' values back to back), in one allocation for up to four
// headers whose values take up to 24 bytes a header (an immediate
// response's, and a pooled reply's that do not fit its room). Each value
// array fills its allocation's size class: 192, 384, 576
// and 768 bytes, what the headers alone took (without it, the copy of the
// values was an allocation of its own).
func headerSets(n int, vals []byte) ([]headerSet, []*corev3.HeaderValueOption, []byte) {
	var s []headerSet
	var p []*corev3.HeaderValueOption
	var v []byte
	switch n {
	case 1:
		x := &struct {
			s [1]headerSet
			p [1]*corev3.HeaderValueOption
			v [24]byte
		}{}
		s, p, v = x.s[:], x.p[:], x.v[:0]
	case 2:
		x := &struct {
			s [2]headerSet
			p [2]*corev3.HeaderValueOption
			v [48]byte
		}{}
		s, p, v = x.s[:], x.p[:], x.v[:0]
	case 3:
		x := &struct {
			s [3]headerSet
			p [3]*corev3.HeaderValueOption
			v [72]byte
		}{}
		s, p, v = x.s[:], x.p[:], x.v[:0]
	case 4:
		x := &struct {
			s [4]headerSet
			p [4]*corev3.HeaderValueOption
			v [96]byte
		}{}
		s, p, v = x.s[:], x.p[:], x.v[:0]
	default:
		s, p = make([]headerSet, n), make([]*corev3.HeaderValueOption, n)
	}
	if len(vals) > cap(v) {
		v = make([]byte, 0, len(vals))
	}
	return s, p, append(v, vals...)
}

// The replies that change a message (a request body's route and
// credentials, a response's headers, a buffered response body) come from a
// pool, each with room for its set_headers, and go back to it once the data
// plane is done with them: allocated per message they were a quarter of the
// bytes a chat request allocates in the gateway (the reply blocks and their
// header sets, three a request).
//
// A reply is lent to the data plane until it gives it back, and never reused
// before:
//   - the built-in data plane in-process (Session, extprocfilter.Sync) gives
//     it back with ReleaseReply once it applied it: the filter copies the
//     header values it sets and keeps of the reply only a body mutation's
//     bytes, which are never the pool's (a translator's output);
//   - over gRPC (Process) the reply is encoded before Send returns, and
//     nothing keeps it afterwards (grpc-go hands it to a stats handler during
//     SendMsg; only with grpc.EnableTracing is it logged lazily, and then it
//     is not given back);
//   - any other transport (extprocfiltertest.DirectOwned passes the pointer
//     to its client) never gives it back: the reply is garbage, as before.
//
// A Session tracks the replies it lent (lent): ReleaseReply returns only
// those, once, even after the Session closed; a reply it does not know (a
// shared CONTINUE, an immediate response, one given back already) is left
// alone. Replies stay out of the pooled stream: a stream lives as long as
// its request (a second in the rush), a reply only until it is applied.
//
// TestReplyPoolLending and TestReplyPoolConcurrent check it.
var replyPool = sync.Pool{New: func() any { return new(pooledReply) }}

// pooledReply is a reply with all its messages: pr's oneof points at one of
// the wrappers, which points at body or hdrs, which point at replyParts.
type pooledReply struct {
	pr       extprocv3.ProcessingResponse
	reqBody  extprocv3.ProcessingResponse_RequestBody
	respBody extprocv3.ProcessingResponse_ResponseBody
	respHdrs extprocv3.ProcessingResponse_ResponseHeaders
	body     extprocv3.BodyResponse
	hdrs     extprocv3.HeadersResponse
	replyParts
}

// replyHeaders is the room of a pooled reply's set_headers: as many headers
// as a chat request's replies set (the route and credentials, a provider key
// up to a few hundred bytes; the request id, deployment and rate limits),
// with their values back to back. vals fills the reply's size class (2,304
// bytes).
type replyHeaders struct {
	sets [8]headerSet
	opts [8]*corev3.HeaderValueOption
	vals [480]byte
	// used, usedVals: how many sets and value bytes a reply used (release
	// zeroes only those).
	used, usedVals int
}

// setHeaders sets the reply's set_headers to l's, in the reply's own room
// when they fit, else in an allocation of their own (headerList.options).
func (x *replyParts) setHeaders(l headerList) {
	n := len(l.kv)
	if n == 0 {
		x.hm.SetHeaders = nil
		return
	}
	if n > len(x.hs.sets) || len(l.vals) > len(x.hs.vals) {
		x.hm.SetHeaders = l.options()
		return
	}
	vals := append(x.hs.vals[:0], l.vals...)
	x.hs.used, x.hs.usedVals = max(x.hs.used, n), max(x.hs.usedVals, len(vals))
	x.hm.SetHeaders = l.fill(x.hs.sets[:n], x.hs.opts[:n], vals)
}

// newChunkReply is chunkReply from the pool: the reply to a streamed chunk
// that replaces it with b (no header mutation: R2.4).
func (s *stream) newChunkReply(b []byte) *extprocv3.ProcessingResponse {
	pr, x := s.newResponseBodyReply()
	x.c.HeaderMutation = nil
	x.c.BodyMutation = x.mutation(b)
	return pr
}

// lendReply takes a zero reply from the pool, with its CommonResponse's
// HeaderMutation; the Session lends it to the data plane (takeLent).
func (s *stream) lendReply() *pooledReply {
	x := replyPool.Get().(*pooledReply)
	x.c.HeaderMutation = &x.hm
	s.lent = x
	return x
}

// takeLent returns the pooled reply resp is, made by the handling of the
// message just handled; nil when resp is not one.
func (s *stream) takeLent(resp *extprocv3.ProcessingResponse) *pooledReply {
	x := s.lent
	s.lent = nil
	if x == nil || &x.pr != resp {
		return nil // made and not sent (none is): left to the collector
	}
	return x
}

// release zeroes x (nothing of a request stays reachable from the pool) and
// gives it back. x must not be used afterwards; nil does nothing. The room
// of its set_headers is zeroed only as far as it was used: zeroing the
// whole reply (2.3 KB, most of it pointers) with *x = pooledReply{} took
// write barriers over all of it while the collector ran, 13 % of the
// processor's CPU per chat request (BenchmarkHandleNonStream's profile).
func (x *pooledReply) release() {
	if x == nil {
		return
	}
	x.pr, x.reqBody, x.respBody, x.respHdrs = extprocv3.ProcessingResponse{}, extprocv3.ProcessingResponse_RequestBody{},
		extprocv3.ProcessingResponse_ResponseBody{}, extprocv3.ProcessingResponse_ResponseHeaders{}
	x.body, x.hdrs = extprocv3.BodyResponse{}, extprocv3.HeadersResponse{}
	x.c, x.hm, x.bodyMutationParts = extprocv3.CommonResponse{}, extprocv3.HeaderMutation{}, bodyMutationParts{}
	hs := &x.hs
	clear(hs.sets[:hs.used])
	clear(hs.opts[:hs.used])
	clear(hs.vals[:hs.usedVals])
	hs.used, hs.usedVals = 0, 0
	replyPool.Put(x)
}

// lend records that x is the data plane's until ReleaseReply; when the
// Session already lends as many as it tracks, x is not tracked and never
// goes back (garbage).
func (ss *Session) lend(x *pooledReply) {
	if x == nil {
		return
	}
	for i, y := range ss.lent {
		if y == nil {
			ss.lent[i] = x
			return
		}
	}
}

// ReleaseReply gives back r, a reply Handle sent, once the data plane is
// done with it: it read what it needed and keeps nothing of it but a body
// mutation's bytes. r is reused afterwards. A reply the Session did not lend,
// or already got back, is left alone. It may be called after Close.
func (ss *Session) ReleaseReply(r *extprocv3.ProcessingResponse) {
	for i, x := range ss.lent {
		if x != nil && &x.pr == r {
			ss.lent[i] = nil
			x.release()
			return
		}
	}
}

// A request's state (stream, about 1.5 KB with its Report, routing and retry
// state) is taken from a pool when its Session starts and given back, zeroed,
// when the Session closes: allocated per request it was a tenth of the bytes
// a chat request allocates in the gateway, and with them of its collections.
//
// Who may keep a pointer into a stream after its Session closed — the audit
// that makes the reuse safe:
//   - the data plane keeps the *Session, whose stream is detached at Close
//     (Handle after the end returns io.EOF without looking at it);
//   - replies hold no slice of the stream's own arrays (header values are
//     copied by headerList.options; strings are immutable);
//   - Observer.Observe and Tracer.UpstreamTraceparent get &s.report and must
//     not keep it, nor its Tries, past the call (Observer's contract);
//   - Accountant.Admit and Settle get &s.areq and &s.rec and must not keep
//     them past the call (gateway copies the Record into a ledger entry);
//   - s.rt points into the stream itself; the Inbound and the per-try state
//     are allocated per request and referenced only from the stream, so they
//     go with it; the translator goes back to its type's pool
//     (translate/translator_pool.go).
//
// TestStreamReleasedAtClose and TestPooledStreamsKeepToTheirRequest check it.
var streamPool = sync.Pool{New: func() any { return new(stream) }}

// newStream returns a zero stream of p from the pool.
func (p *Processor) newStream() *stream {
	s := streamPool.Get().(*stream)
	s.p = p
	return s
}

// release zeroes s (nothing of the request stays reachable from the pool)
// and gives it back. s must not be used afterwards.
func (s *stream) release() {
	if s.tr != nil {
		translate.FreeTranslator(s.tr)
	}
	*s = stream{}
	streamPool.Put(s)
}

// LendingSession is Session for an in-process data plane that lends its body
// buffers: the bytes of a body in a request are the data plane's own buffer,
// which it forwards after the reply, and the processor may rewrite them in
// place without changing their length, answering with no body mutation (a
// reply's model renamed over the provider's, translate.Inbound.ReplyInPlace).
// Over gRPC a body is the processor's copy: Process never lends.
func (p *Processor) LendingSession(ctx context.Context) *Session {
	ss := p.Session(ctx)
	ss.s.lendsBodies = true
	return ss
}

// Headers the processor reads or writes.
const (
	hdrCustomer      = "x-tollgate-customer"
	hdrRequestID     = "x-tollgate-request-id"
	hdrCost          = "x-tollgate-cost"
	hdrContentLength = "content-length"
	hdrContentType   = "content-type"
)

// clientCredentialHeaders are removed from every request sent upstream.
// (With the retry token, which is the processor's own.)
var clientCredentialHeaders = []string{translate.HdrAuthorization, translate.HdrXAPIKey, translate.HdrAPIKey, hdrCustomer, translate.HdrGoogAPIKey, hdrRetry}

// headerValue is the value of one HeaderValue: raw_value, or value from an
// Envoy that sends only that.
func headerValue(h *corev3.HeaderValue) string {
	if len(h.GetRawValue()) > 0 {
		return string(h.GetRawValue())
	}
	return h.GetValue()
}

// The helpers below read a header without copying its raw_value when the
// copy is not kept (a nil header reads as empty).

// headerIs reports whether h's value is v.
func headerIs(h *corev3.HeaderValue, v string) bool {
	if raw := h.GetRawValue(); len(raw) > 0 {
		return string(raw) == v
	}
	return h.GetValue() == v
}

// headerValueAs is headerValue(h), and v itself when they are equal.
func headerValueAs(h *corev3.HeaderValue, v string) string {
	if headerIs(h, v) {
		return v
	}
	return headerValue(h)
}

// headerInt parses h's value as a decimal integer.
func headerInt(h *corev3.HeaderValue) (int64, error) {
	if raw := h.GetRawValue(); len(raw) > 0 {
		return strconv.ParseInt(string(raw), 10, 64)
	}
	return strconv.ParseInt(h.GetValue(), 10, 64)
}

// headerIsEventStream reports whether h is a text/event-stream content type.
func headerIsEventStream(h *corev3.HeaderValue) bool {
	if raw := h.GetRawValue(); len(raw) > 0 {
		return isEventStream(string(raw))
	}
	return isEventStream(h.GetValue())
}

// headerSet holds the messages of one header a reply sets (headerList).
type headerSet struct {
	opt corev3.HeaderValueOption
	val corev3.HeaderValue
}

// appendFalse is every set header's append=false (R2.9), shared: replies are
// read-only.
var appendFalse = wrapperspb.Bool(false)

// redactedHeaders renders a header map for debug logs, secrets replaced.
func redactedHeaders(hm *corev3.HeaderMap) []string {
	out := make([]string, 0, len(hm.GetHeaders()))
	for _, h := range hm.GetHeaders() {
		v := headerValue(h)
		if translate.IsSensitiveHeader(h.GetKey()) {
			v = "[redacted]"
		} else if h.GetKey() == ":path" {
			v = translate.RedactQueryKey(v)
		}
		out = append(out, h.GetKey()+": "+v)
	}
	return out
}

// addRateLimits adds the headers of translate.RateLimitHeaders.
func (l headerList) addRateLimits(ri kernel.RateLimitInfo) headerList {
	if ri.LimitRequests > 0 {
		l = l.addInt("x-ratelimit-limit-requests", ri.LimitRequests)
		l = l.addInt("x-ratelimit-remaining-requests", max(ri.RemainingRequests, 0))
		l = l.add("x-ratelimit-reset-requests", translate.FormatReset(ri.ResetRequests))
	}
	if ri.LimitTokens > 0 {
		l = l.addInt("x-ratelimit-limit-tokens", ri.LimitTokens)
		l = l.addInt("x-ratelimit-remaining-tokens", max(ri.RemainingTokens, 0))
		l = l.add("x-ratelimit-reset-tokens", translate.FormatReset(ri.ResetTokens))
	}
	return l
}

// addBudgetWarnings adds translate.HdrBudgetWarning when soft budgets are
// past their limit.
func (l headerList) addBudgetWarnings(ws []kernel.BudgetWarning) headerList {
	if len(ws) == 0 {
		return l
	}
	return l.add(translate.HdrBudgetWarning, translate.BudgetWarnings(ws))
}

// upstreamStreams reports whether a 2xx reply's content type is a stream the
// translators read incrementally: SSE, or an AWS event stream (Bedrock's
// ConverseStream, application/vnd.amazon.eventstream).
func upstreamStreams(h *corev3.HeaderValue) bool {
	if headerIsEventStream(h) {
		return true
	}
	ct, _, _ := strings.Cut(headerValue(h), ";")
	ct = strings.TrimSpace(ct)
	// Audio (speech) streams back as the provider sends it, not buffered.
	return strings.EqualFold(ct, "application/vnd.amazon.eventstream") || hasPrefixFold(ct, "audio/")
}
