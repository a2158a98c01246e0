package extproc

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/ownership"
)

// Background responses (issue 37). A native Responses request with
// background: true (and no stream) is answered at once, queued; the provider
// runs it afterwards and the client polls GET /v1/responses/{id}. Its
// reservation is held — under a lease of its own, long enough for a
// background run — and its settlement deferred: the ledger entry as it
// stands is kept with the response's owner (ResponseOwners.PutOwner),
// and the first forwarded GET or cancel whose reply shows the response
// finished claims it and settles it from that reply's usage. The claim is
// the store's, so the settlement happens exactly once whichever replica
// sees the end, and a response nobody polls is settled by its lease as any
// reservation (its worst case).

// DefaultBackgroundLease is the lease of a background response's
// reservation when WithBackgroundLease does not set one.
const DefaultBackgroundLease = ownership.DefaultBackgroundLease

// WithBackgroundLease sets how long a background response's reservation
// waits for a poll that sees it finished before its lease settles it.
func WithBackgroundLease(d time.Duration) Option {
	return func(p *Processor) { p.bgLease = d }
}

// deferrable reports whether the request is a background native response
// whose settlement may wait for its end.
func (s *stream) deferrable() bool {
	return s.own.record && s.own.background && s.p.owners != nil && s.in != nil && !s.in.Stream
}

// backgroundLease is the lease of the request's reservation: a background
// response's, else 0 (the accountant's).
func (s *stream) backgroundLease() time.Duration {
	if !s.deferrable() {
		return 0
	}
	if s.p.bgLease > 0 {
		return s.p.bgLease
	}
	return DefaultBackgroundLease
}

// deferSettlement keeps, instead of settling it, the settlement of a
// background response its POST answered unfinished: true when it is kept
// (the stream is then done with it). A store that cannot keep it leaves the
// request to be settled now, from the estimate.
func (s *stream) deferSettlement(ctx context.Context, reply []byte) bool {
	if !s.deferrable() || s.own.id == "" || !ownership.Unfinished(stringMember(reply, "status")) {
		return false
	}
	o := s.owner()
	rec := s.fillRecord(kernel.StatusCompleted, s.status, kernel.Usage{Input: s.inputEstimate()})
	rec.Owner = nil
	if err := s.p.owners.PutOwner(ctx, o, rec); err != nil {
		s.p.log.Warn("defer background settlement failed; settled now from the estimate", "request_id", s.id, "response", o.ID, "err", err)
		return false
	}
	s.settled = true
	s.doneRouting(kernel.Usage{})
	return true
}

// settleForwarded settles the background response a forwarded GET or cancel
// shows finished (status, and its usage when reported): the first that
// claims it. Completed, incomplete and failed responses are charged their
// usage (without one, the input estimated at the POST); a cancelled one
// what its usage says ran, nothing without one.
func (s *stream) settleForwarded(ctx context.Context, status string, u kernel.Usage, reported bool) {
	o := s.own.fwd
	if o == nil || !o.Pending || s.own.claimed {
		return
	}
	st, ok := ownership.SettleStatus(status)
	if !ok {
		return // still running, or not a response object
	}
	s.own.claimed = true
	rec, err := s.p.owners.ClaimSettlement(ctx, o.ID)
	if errors.Is(err, ErrResponseNotFound) {
		return // another poll settled it
	}
	if err != nil {
		s.p.log.Warn("claim background settlement failed; its lease settles it", "request_id", s.id, "response", o.ID, "err", err)
		return
	}
	switch {
	case reported:
		rec.Usage = u
	case st == kernel.StatusAborted:
		rec.Usage = kernel.Usage{}
	}
	rec.Status, rec.HTTPStatus, rec.EndedAt = st, http.StatusOK, s.p.now()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), s.p.settleTimeout)
		defer cancel()
	}
	cost, err := s.p.acct.Settle(ctx, rec)
	if err != nil {
		s.p.log.Warn("settle background response failed", "request_id", rec.RequestID, "response", o.ID, "err", err)
		return
	}
	if s.p.debug {
		s.p.log.Debug("settled background response", "request_id", rec.RequestID, "response", o.ID, "by", s.id,
			"status", st, "usage", rec.Usage, "reported", reported, "cost", formatUSD(cost))
	}
}
