package extproc

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/translate"
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
	if err := s.p.owners.PutOwner(ctx, o, &Deferred{Record: rec, Hold: s.hold()}); err != nil {
		s.p.log.Warn("defer background settlement failed; settled now from the estimate", "request_id", s.id, "response", o.ID, "err", err)
		return false
	}
	s.settled = true
	s.doneRouting(kernel.Usage{})
	return true
}

// Deferred is a background response's settlement kept until it finishes
// (ownership.Deferred over the processor's Record).
type Deferred = ownership.Deferred[*Record]

// hold is what the request's admission reserved (s.areq once admitted), to
// be reserved again if the counters holding it restart before it settles.
func (s *stream) hold() *ownership.Hold {
	a := &s.areq
	h := &ownership.Hold{
		Scopes: make([]kernel.ScopeRef, len(a.Scopes)), Model: a.Model, PromptBytes: a.PromptBytes,
		MaxTokens: s.decision.MaxTokens, Price: a.Price, Until: s.p.now().Add(s.backgroundLease()),
	}
	for i := range a.Scopes {
		h.Scopes[i] = a.Scopes[i].Ref
	}
	if h.MaxTokens <= 0 {
		h.MaxTokens = max(a.MaxTokens, a.DefaultMaxTokens)
	}
	return h
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
	s.p.settleDeferred(ctx, o.ID, st, settledUsage(st, u, reported), s.id)
}

// SettleBackground settles the background response of o, pending, from
// its provider's answer to GET /v1/responses/{id} (status and body): the
// gateway's poller asks for the ones nobody polls, so each is settled when
// it finishes even if its client never comes back. It reports whether the
// answer ended the response: finished (settled from its usage as a poll
// would be), or unknown to the provider (404: settled from the input
// estimated at the POST, aborted, since nothing says what ran). A response
// still running waits for the next poll.
func (p *Processor) SettleBackground(ctx context.Context, o *ResponseOwner, status int, body []byte) bool {
	if p.owners == nil {
		return false
	}
	switch {
	case status == http.StatusNotFound:
		p.settleDeferred(ctx, o.ID, kernel.StatusAborted, nil, "background poller")
		return true
	case status < 200 || status >= 300:
		return false
	}
	out, u, err := translate.ForwardedResponses(o.Model).Response(body)
	if out == nil {
		out = body
	}
	st, ok := ownership.SettleStatus(stringMember(out, "status"))
	if !ok {
		return false
	}
	p.settleDeferred(ctx, o.ID, st, settledUsage(st, u, err == nil), "background poller")
	return true
}

// settledUsage is the usage a finished response is charged: what it
// reported; without a report nothing for a cancelled one, else nil (the
// input estimated at its POST).
func settledUsage(st kernel.Status, u kernel.Usage, reported bool) *kernel.Usage {
	switch {
	case reported:
		return &u
	case st == kernel.StatusAborted:
		return &kernel.Usage{}
	}
	return nil
}

// settleDeferred claims the settlement kept for response id and settles it
// as st, charged u (nil: the input estimated at the POST). by names who saw
// the end (logs).
func (p *Processor) settleDeferred(ctx context.Context, id string, st kernel.Status, u *kernel.Usage, by string) {
	d, err := p.owners.ClaimSettlement(ctx, id)
	if errors.Is(err, ErrResponseNotFound) {
		return // another poll settled it
	}
	if err != nil {
		p.log.Warn("claim background settlement failed; its lease settles it", "by", by, "response", id, "err", err)
		return
	}
	rec := d.Record
	if u != nil {
		rec.Usage = *u
	}
	rec.Status, rec.HTTPStatus, rec.EndedAt = st, http.StatusOK, p.now()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), p.settleTimeout)
		defer cancel()
	}
	cost, err := p.acct.Settle(ctx, rec)
	if err != nil {
		p.log.Warn("settle background response failed", "request_id", rec.RequestID, "response", id, "err", err)
		return
	}
	if p.debug {
		p.log.Debug("settled background response", "request_id", rec.RequestID, "response", id, "by", by,
			"status", st, "usage", rec.Usage, "cost", formatUSD(cost))
	}
}
