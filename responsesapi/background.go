package responsesapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/responses"
)

// Background responses (issue 37). A native Responses request with
// background: true (and no stream) is answered at once, queued; the provider
// runs it afterwards and the client polls GET /v1/responses/{id}. Its
// reservation is held — under a lease of its own, long enough for a
// background run — and its settlement deferred: the ledger entry as it
// stands is kept with the response's owner (Owners.PutOwner), and the
// first forwarded GET or cancel whose reply shows the response finished
// claims it and settles it from that reply's usage. The claim is the
// store's, so the settlement happens exactly once whichever replica sees
// the end, and a response nobody polls is settled by its lease as any
// reservation (its worst case).

// DefaultBackgroundLease is the lease of a background response's
// reservation when Service.BackgroundLease does not set one.
const DefaultBackgroundLease = ownership.DefaultBackgroundLease

// deferrable reports whether the request (stream: the client asked for a
// stream) is a background native response whose settlement may wait for
// its end.
func (sv *Service[R]) deferrable(st *State, stream bool) bool {
	return st.record && st.background && sv.Owners != nil && !stream
}

// Lease is the lease of the request's reservation: a background response's,
// else 0 (the accountant's).
func (sv *Service[R]) Lease(st *State, stream bool) time.Duration {
	if !sv.deferrable(st, stream) {
		return 0
	}
	if sv.BackgroundLease > 0 {
		return sv.BackgroundLease
	}
	return DefaultBackgroundLease
}

// DeferSettlement keeps, instead of settling it, the settlement of a
// background response its POST answered unfinished (reply): true when it is
// kept (the stream is then done with it: Stream.Deferred). A store that
// cannot keep it leaves the request to be settled now, from the estimate.
// The response is on deployment, in the group model (Service.Owner).
func (sv *Service[R]) DeferSettlement(ctx context.Context, s Stream[R], st *State, reply []byte, stream bool, deployment, model string) bool {
	if !sv.deferrable(st, stream) || st.id == "" || !ownership.Unfinished(StringMember(reply, "status")) {
		return false
	}
	o := sv.Owner(st, s.KeyID(), deployment, model)
	rec, hold := s.Defer()
	if err := sv.Owners.PutOwner(ctx, o, &ownership.Deferred[R]{Record: rec, Hold: hold}); err != nil {
		sv.Log.Warn("defer background settlement failed; settled now from the estimate", "request_id", s.RequestID(), "response", o.ID, "err", err)
		return false
	}
	s.Deferred()
	return true
}

// HoldOf is what admission a reserved (maxTokens: the decision's bound, 0
// when none), to be reserved again until then if the counters holding it
// restart before it settles.
func HoldOf(a *kernel.AdmitRequest, maxTokens int64, until time.Time) *ownership.Hold {
	h := &ownership.Hold{
		Scopes: make([]kernel.ScopeRef, len(a.Scopes)), Model: a.Model, PromptBytes: a.PromptBytes,
		MaxTokens: maxTokens, Price: a.Price, Until: until,
	}
	for i := range a.Scopes {
		h.Scopes[i] = a.Scopes[i].Ref
	}
	if h.MaxTokens <= 0 {
		h.MaxTokens = max(a.MaxTokens, a.DefaultMaxTokens)
	}
	return h
}

// SettleForwarded settles the background response a forwarded GET or cancel
// shows finished (status, and its usage when reported): the first that
// claims it. Completed, incomplete and failed responses are charged their
// usage (without one, the input estimated at the POST); a cancelled one
// what its usage says ran, nothing without one.
func (sv *Service[R]) SettleForwarded(ctx context.Context, s Stream[R], st *State, status string, u kernel.Usage, reported bool) {
	o := st.fwd
	if o == nil || !o.Pending || st.claimed {
		return
	}
	ks, ok := ownership.SettleStatus(status)
	if !ok {
		return // still running, or not a response object
	}
	st.claimed = true
	sv.settleDeferred(ctx, o.ID, ks, settledUsage(ks, u, reported), s.RequestID())
}

// SettleBackground settles the background response of o, pending, from
// its provider's answer to GET /v1/responses/{id} (status and body): the
// gateway's poller asks for the ones nobody polls, so each is settled when
// it finishes even if its client never comes back. It reports whether the
// answer ended the response: finished (settled from its usage as a poll
// would be), or unknown to the provider (404: settled from the input
// estimated at the POST, aborted, since nothing says what ran). A response
// still running waits for the next poll.
func (sv *Service[R]) SettleBackground(ctx context.Context, o *Owner, status int, body []byte) bool {
	if sv.Owners == nil {
		return false
	}
	switch {
	case status == http.StatusNotFound:
		sv.settleDeferred(ctx, o.ID, kernel.StatusAborted, nil, "background poller")
		return true
	case status < 200 || status >= 300:
		return false
	}
	out, u, err := translate.ForwardedResponses(o.Model).Response(body)
	if out == nil {
		out = body
	}
	st, ok := ownership.SettleStatus(StringMember(out, "status"))
	if !ok {
		return false
	}
	sv.settleDeferred(ctx, o.ID, st, settledUsage(st, u, err == nil), "background poller")
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
func (sv *Service[R]) settleDeferred(ctx context.Context, id string, st kernel.Status, u *kernel.Usage, by string) {
	d, err := sv.Owners.ClaimSettlement(ctx, id)
	if errors.Is(err, responses.ErrNotFound) {
		return // another poll settled it
	}
	if err != nil {
		sv.Log.Warn("claim background settlement failed; its lease settles it", "by", by, "response", id, "err", err)
		return
	}
	rec := d.Record
	reqID, usage := sv.End(rec, st, sv.Now(), u)
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), sv.SettleTimeout)
		defer cancel()
	}
	cost, err := sv.Settle(ctx, rec)
	if err != nil {
		sv.Log.Warn("settle background response failed", "request_id", reqID, "response", id, "err", err)
		return
	}
	if sv.Debug {
		sv.Log.Debug("settled background response", "request_id", reqID, "response", id, "by", by,
			"status", st, "usage", usage, "cost", sv.FormatCost(cost))
	}
}
