package edge

import (
	"context"

	"github.com/tollgate-ai/tollgate/edge/h1"
)

// Attempts after the first, on per-try routes (pertry.go) and after an
// internal redirect (redirect.go), each start with a live upstream context.
// The data plane no longer acts on the processor's retry token: a request is
// sent again only as Envoy would (a route's retry policy, an internal
// redirect), never once its response reached the router-level filter.

// newTry readies the upstream context for another attempt: a per-try
// timeout cancelled the last one (and cut its connection), which leaves the
// request itself alive. False when the upstream side ended for good.
func (x *exchange) newTry() bool {
	x.upMu.Lock()
	defer x.upMu.Unlock()
	if x.upDone {
		return false
	}
	if x.upCtx.Err() != nil {
		x.upCtx, x.upCancel = context.WithCancelCause(context.WithoutCancel(x.ctx))
		x.upAbort = &h1.Abort{Written: x}
	}
	return true
}

// upstreamDone reports whether the upstream side ended for good (the client
// left, the route timeout fired, the exchange is over).
func (x *exchange) upstreamDone() bool {
	x.upMu.Lock()
	defer x.upMu.Unlock()
	return x.upDone
}
