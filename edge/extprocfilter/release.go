package extprocfilter

import extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

// ReplyReleaser is implemented by a [SyncStream] whose replies may be reused
// once the filter is done with them. The filter calls ReleaseReply with each
// reply it took from the stream's Handle, once it has applied it, in the
// goroutine of the Stream's caller (after Close too: the stream may have
// closed while the reply was applied). By then it keeps nothing of the reply
// but a body mutation's bytes (BodyMutation.Body, which a Result may carry
// on): header values are copied, an immediate response's body too, dynamic
// metadata cloned, mode_override read. A reply the filter drops unapplied (a
// late one, after a message timeout) is not given back.
type ReplyReleaser interface {
	ReleaseReply(r *extprocv3.ProcessingResponse)
}

// consume handles it, a reply or end an in-call processor produced, and
// then gives the reply back to the processor when it takes replies back.
func (s *Stream) consume(it recvItem) {
	var rel ReplyReleaser
	if l, ok := s.link.(*syncLink); ok && it.resp != nil {
		rel, _ = l.ss.(ReplyReleaser) // before onRecv, which may close the link
	}
	s.onRecv(it)
	if rel != nil {
		rel.ReleaseReply(it.resp)
	}
}
