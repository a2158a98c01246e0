package extproc

import (
	"context"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/tollgate-ai/tollgate/translate"
)

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
// gives it back. x must not be used afterwards; nil does nothing.
func (x *pooledReply) release() {
	if x == nil {
		return
	}
	*x = pooledReply{}
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
