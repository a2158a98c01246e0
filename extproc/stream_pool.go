package extproc

import (
	"sync"

	"github.com/tollgate-ai/tollgate/translate"
)

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
//     (translator_pool.go).
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
