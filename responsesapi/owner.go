package responsesapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/responses"
)

// Native response ids (issue 37). A provider that serves the Responses API
// itself keeps its responses; the gateway records which key owns each id it
// hands out and which deployment holds it (Owners, written with the
// ledger's settlement). previous_response_id on such a provider, and
// GET/DELETE /v1/responses/{id}, its input_items and cancel, are then
// admitted only for the owning key (another key: 404, as for a translated
// response) and routed to the owning deployment with its credential; when
// that deployment is cooling down the client gets a 503 rather than a
// re-route that would lose the conversation.

// Owner is the owner of a native response id (ownership.Owner).
type Owner = ownership.Owner

// Service is the processor's part in the Responses API: set once, shared by
// its streams. R is the processor's settlement record.
type Service[R any] struct {
	// Owners records native response ids and routes requests on them (nil:
	// native ids pass through unchecked).
	Owners ownership.Owners[R]
	// Store keeps translated providers' stored responses (nil: nothing is
	// stored and previous_response_id is refused on them).
	Store responses.Store
	// BackgroundLease is the lease of a background response's reservation
	// (0: DefaultBackgroundLease).
	BackgroundLease time.Duration
	Log             *slog.Logger
	Debug           bool
	Now             func() time.Time
	SettleTimeout   time.Duration
	Router          *routing.Router
	// End ends a claimed background response's record: st at time at,
	// charged u when not nil (else what it holds). It returns the record's
	// request id and usage (logs).
	End func(rec R, st kernel.Status, at time.Time, u *kernel.Usage) (requestID string, usage kernel.Usage)
	// Settle charges a record (the Accountant's); FormatCost writes a cost
	// in the logs.
	Settle     func(ctx context.Context, rec R) (kernel.Money, error)
	FormatCost func(kernel.Money) string
}

// Stream is what one request's ext_proc stream lends the Responses logic:
// its names, the catalog and the router as the request sees them, and its
// settlement record. The processor's stream implements it.
type Stream[R any] interface {
	RequestID() string
	KeyID() string
	// Resolve is the catalog's deployment of the model group for the key
	// (no routing).
	Resolve(ctx context.Context, model string) (*translate.Target, error)
	// ResolveGroup is the key's group of that name; ok is false when the
	// catalog has no groups (Resolve then decides).
	ResolveGroup(ctx context.Context, model string) (g *routing.Group, ok bool, err error)
	// Models lists the model groups the key may use.
	Models(ctx context.Context) []translate.ModelInfo
	// Route routes the request to the first deployment of the group.
	Route(ctx context.Context, model string) (*translate.Target, error)
	// RouteTo routes the request in g to dep alone.
	RouteTo(g *routing.Group, dep *routing.Deployment)
	// ResolveError maps a failure to resolve the group model.
	ResolveError(model string, err error) *translate.APIError
	// Defer is the settlement of a background response as it stands (the
	// input estimated, no owner) and what its admission holds.
	Defer() (R, *ownership.Hold)
	// Deferred tells the stream its settlement is kept: it is done with it.
	Deferred()
}

// State is a stream's part in native response ownership.
type State struct {
	// pin is the owner of the request's previous_response_id: the request
	// goes to its deployment only.
	pin *Owner
	// record: the request is a native Responses request whose id is recorded
	// at settlement; id is that id once read, store and background the
	// request's flags; created holds the start of a stream until its
	// response.created event is whole.
	record            bool
	id                string
	store, background bool
	// prev is the request's previous_response_id ("" when none);
	// prevStored its stored (translated) response when PinPrevious read it
	// (awaitPrevious), for Prepare.
	prev       string
	prevStored *responses.Stored
	created    ownership.CreatedID
	// fwd is the owner of the response a forwarded request (GET, DELETE,
	// input_items, cancel) is on; claimed: its deferred settlement was
	// claimed (background.go); forget: a 2xx forgets it.
	fwd     *Owner
	claimed bool
	forget  bool
	// conversations.go: model is the x-tollgate-model header; create: the
	// request creates a conversation (fwd holds its owner, but for its id);
	// conv is a Responses request's conversation ("" when none).
	model  string
	create bool
	conv   string
	// Runs (issue 36, run.go): prevRun is the run of the response
	// previous_response_id continues; run the run the request is in
	// (SetRun); started the id of a response that starts a run of its own.
	prevRun, run, started string
}

// SetModelHeader keeps the request's x-tollgate-model header (HdrModel).
func (st *State) SetModelHeader(v string) { st.model = v }

// Pinned reports whether the request must stay on one deployment; Pin is
// the owner holding it.
func (st *State) Pinned() bool { return st.pin != nil }

// Pin is the owner the request is pinned to (nil when none).
func (st *State) Pin() *Owner { return st.pin }

// Forwarded is the owner of the object a forwarded request is on (nil: the
// request is not forwarded).
func (st *State) Forwarded() *Owner { return st.fwd }

// keyOwner reads the owner of id (kind: "response" or "conversation") for
// the request's key: nil when the id is not a native one the gateway handed
// out; notFound(id) when another key owns it; a 503 when the store fails.
func (sv *Service[R]) keyOwner(ctx context.Context, s Stream[R], id, kind string, notFound func(id string) *translate.APIError) (*Owner, *translate.APIError) {
	o, err := sv.Owners.ResponseOwner(ctx, id)
	return sv.forKey(s, o, err, kind, id, notFound)
}

// forKey is keyOwner's answer for the owner o (err) of id.
func (sv *Service[R]) forKey(s Stream[R], o *Owner, err error, kind, id string, notFound func(id string) *translate.APIError) (*Owner, *translate.APIError) {
	switch {
	case errors.Is(err, responses.ErrNotFound):
		return nil, nil
	case err != nil:
		sv.Log.Warn("read "+kind+" owner failed", "request_id", s.RequestID(), "err", err)
		return nil, translate.ErrUnavailable()
	case o.KeyID != s.KeyID():
		return nil, notFound(id)
	}
	return o, nil
}

// PinPrevious runs before routing for a request of the API api on the group
// model: the owner of its previous_response_id, when the gateway handed
// that id out natively, pins the request to the deployment holding it;
// another key's id is refused before anything is admitted.
func (sv *Service[R]) PinPrevious(ctx context.Context, s Stream[R], st *State, api translate.API, model string, body []byte) *translate.APIError {
	if sv.Owners == nil || api != translate.APIResponses {
		return nil
	}
	r := ownership.ScanRequest(body) // CheckNative reads prev and conv again
	st.store, st.background, st.prev, st.conv = r.Store, r.Background, r.Previous, r.Conversation
	if conv := st.conv; conv != "" {
		o, e := sv.keyOwner(ctx, s, conv, "conversation", ownership.NotFoundConversationParam)
		if e != nil {
			return e
		}
		if o != nil {
			// The deployment holding the conversation, in the group the
			// request names.
			pin := *o
			pin.Model = model
			st.pin = &pin
		}
	}
	if st.prev == "" {
		return nil
	}
	o, e := sv.keyOwner(ctx, s, st.prev, "response", ownership.NotFoundPrevious)
	if o == nil && e == nil {
		o, e = sv.awaitPrevious(ctx, s, st)
	}
	if o != nil { // nil: not a native id, a translated provider's store decides (stored.go)
		st.pin = o
		st.continues(o.ID, o.Run)
	}
	return e
}

// awaitPrevious is PinPrevious for a previous_response_id no owner was
// found for: a response the key stored on a translated provider (kept for
// Prepare), else, when Owners can wait (ownership.Awaiter), a native id
// another replica handed out and has not committed yet: an agent's next
// turn sent to another replica the moment the reply arrived. Only an id
// found nowhere waits.
func (sv *Service[R]) awaitPrevious(ctx context.Context, s Stream[R], st *State) (*Owner, *translate.APIError) {
	aw, ok := sv.Owners.(ownership.Awaiter)
	if !ok {
		return nil, nil
	}
	if sv.Store != nil {
		sr, err := sv.Store.GetResponse(ctx, s.KeyID(), st.prev)
		switch {
		case err == nil:
			st.prevStored = sr
			return nil, nil
		case !errors.Is(err, responses.ErrNotFound):
			sv.Log.Warn("read stored response failed", "request_id", s.RequestID(), "err", err)
			return nil, translate.ErrUnavailable()
		}
	}
	o, err := aw.AwaitResponseOwner(ctx, st.prev)
	return sv.forKey(s, o, err, "response", st.prev, ownership.NotFoundPrevious)
}

// CheckNative runs once the translator is known: a native Responses request
// records its id, and its previous_response_id must be one the gateway
// handed out to this key (an unknown one would reach the provider with the
// gateway's shared credential).
func (sv *Service[R]) CheckNative(st *State, api translate.API, target *translate.Target) *translate.APIError {
	if sv.Owners == nil || api != translate.APIResponses || !translate.NativeResponses(target) {
		return nil
	}
	st.record = true
	if prev := st.prev; prev != "" && (st.pin == nil || st.pin.ID != prev) {
		return ownership.NotFoundPrevious(prev)
	}
	if conv := st.conv; conv != "" && st.pin == nil {
		return ownership.NotFoundConversationParam(conv) // never handed out: not sent with the shared credential
	}
	return nil
}

// ResolvePinned routes a request pinned to its response's deployment: that
// deployment of the group, or a 503 while it cools down.
func (sv *Service[R]) ResolvePinned(ctx context.Context, s Stream[R], o *Owner) (*translate.Target, error) {
	g, ok, err := s.ResolveGroup(ctx, o.Model)
	if !ok {
		t, err := s.Resolve(ctx, o.Model)
		if err != nil || t == nil || t.Deployment != o.Deployment {
			return nil, ownership.ErrHolderGone
		}
		return t, nil
	}
	if err != nil || g == nil {
		return nil, err
	}
	var dep *routing.Deployment
	for _, d := range g.Deployments {
		if d.Target.Deployment == o.Deployment {
			dep = d
		}
	}
	if dep == nil {
		return nil, ownership.ErrHolderGone
	}
	now := sv.Now()
	if sv.Router.Cooling(dep.Target.Deployment, now) {
		return nil, &ownership.HolderCooling{Deployment: dep.Target.Deployment, RetryAfter: sv.Router.Soonest(&routing.Group{Deployments: []*routing.Deployment{dep}}, now)}
	}
	s.RouteTo(g, dep)
	return dep.Target, nil
}

// pinnedError maps a failure to route to the deployment holding id.
func pinnedError(err error, id string) *translate.APIError {
	e := translate.ErrUnavailable()
	e.Message = ownership.HolderMessage(err, id)
	var hc *ownership.HolderCooling
	if errors.As(err, &hc) {
		e.Headers = translate.RetryAfterHeaders(hc.RetryAfter)
	} else {
		e.Headers = nil
	}
	return e
}

// Observe reads the id of a native response (its reply's HTTP status):
// the JSON reply's id, or the response of the stream's response.created
// event.
func (st *State) Observe(body []byte, sse bool, status int) {
	if !st.record || st.id != "" || status < 200 || status >= 300 {
		return
	}
	if !sse {
		st.id = StringMember(body, "id")
		return
	}
	id, ok := st.created.Feed(body)
	st.id, st.record = id, ok // !ok: no response.created where it should be
}

// Owner is what the settlement records: the id handed out, if any, for
// the key, on the deployment, in the model group the client asked for.
func (sv *Service[R]) Owner(st *State, keyID, deployment, model string) *Owner {
	if !st.record || st.id == "" || sv.Owners == nil {
		return nil
	}
	return &Owner{
		ID: st.id, KeyID: keyID, Deployment: deployment, Model: model,
		Store: st.store, Background: st.background, Run: st.runOf(st.id),
	}
}

// Forward is a request sent on, at request headers, to the deployment
// holding its object: Path and Headers are what it is sent with, and
// Translator (when not nil) reads the response object it answers.
type Forward struct {
	Target     *translate.Target
	Path       string
	Headers    [][2]string
	Translator translate.Translator
}

// Forward answers, at request headers, a request on a native response (GET,
// DELETE, input_items, cancel) or a conversation: nil when the id is not one
// the gateway handed out natively (the translated store answers), else a 404
// for another key, a 503 when its deployment cools down, or the request sent
// on to that deployment with its credential.
func (sv *Service[R]) Forward(ctx context.Context, s Stream[R], st *State, method, path string) (*Forward, *translate.APIError) {
	if sv.Owners == nil {
		return nil, nil
	}
	if f, e := sv.forwardConversation(ctx, s, st, method, path); f != nil || e != nil { // conversations.go
		return f, e
	}
	id, sub, rest, ok := ownership.ResponsePath(method, path)
	if !ok {
		return nil, nil
	}
	o, e := sv.keyOwner(ctx, s, id, "response", ownership.NotFoundResponse)
	switch {
	case e != nil:
		return nil, e
	case o == nil:
		return nil, nil
	}
	target, err := sv.ResolvePinned(ctx, s, o)
	if err != nil || target == nil {
		return nil, pinnedError(err, id)
	}
	var tr translate.Translator
	if sub != "input_items" && method != http.MethodDelete {
		// A response object (or its stream): it names the model the client
		// asked for, and may show a background response finished.
		tr = translate.ForwardedResponses(o.Model)
	}
	st.forget = method == http.MethodDelete
	f := forwardTo(st, target, o, rest, false)
	f.Translator = tr
	return f, nil
}

// forwardTo sends the request on to target, the deployment holding o (a
// response, or a conversation), with its credential: rest is the path after
// /v1/responses or /v1/conversations.
func forwardTo(st *State, target *translate.Target, o *Owner, rest string, conversations bool) *Forward {
	st.fwd = o
	path, headers := translate.NativeResponsesRequest(target, rest, conversations)
	return &Forward{Target: target, Path: path, Headers: headers}
}

// ForwardedStatus sees the status of a forwarded request's response: a
// deleted object is forgotten.
func (sv *Service[R]) ForwardedStatus(ctx context.Context, s Stream[R], st *State, status int) {
	o := st.fwd
	if st.forget && status >= 200 && status < 300 {
		if err := sv.Owners.ForgetResponse(ctx, o.ID); err != nil && !errors.Is(err, responses.ErrNotFound) {
			sv.Log.Warn("forget response owner failed", "request_id", s.RequestID(), "response", o.ID, "err", err)
		}
	}
}

// ForwardedReply sees the body of a forwarded request's 2xx response: the
// id of a conversation it created is recorded for the key; read with tr
// (nil: passed as is; sse: a chunk of a stream, eos its last), a response
// object names the client's model and a background response it shows
// finished is settled (background.go). out is what the client gets, err a
// stream chunk tr could not read.
func (sv *Service[R]) ForwardedReply(ctx context.Context, s Stream[R], st *State, tr translate.Translator, body []byte, sse, eos bool) (out []byte, err error) {
	if st.create { // conversations.go: the id handed out is the key's
		st.create = false
		o := *st.fwd
		if o.ID = StringMember(body, "id"); o.ID != "" {
			if err := sv.Owners.PutOwner(ctx, &o, nil); err != nil {
				sv.Log.Warn("record conversation owner failed", "request_id", s.RequestID(), "conversation", o.ID, "err", err)
			}
		}
	}
	if tr == nil {
		return body, nil
	}
	if sse {
		if out, err = tr.StreamChunk(body, eos); err != nil && out == nil {
			out = body
		}
		if u, reported := tr.StreamUsage(); reported {
			sv.SettleForwarded(ctx, s, st, "completed", u, true) // the usage comes with the final event
		}
		return out, err
	}
	out, u, rerr := tr.Response(body)
	if out == nil {
		out = body
	}
	sv.SettleForwarded(ctx, s, st, StringMember(out, "status"), u, rerr == nil)
	return out, nil
}

// StringMember is the string value of a top-level member of a JSON object,
// "" when absent, null or not a string.
func StringMember(body []byte, name string) string { return ownership.StringMember(body, name) }

// PinFailed maps a failure to route a pinned request: the catalog's own
// errors (model gone, not allowed) as for any request, else the holder's.
func PinFailed[R any](s Stream[R], st *State, err error, model string) *translate.APIError {
	var hc *ownership.HolderCooling
	if errors.As(err, &hc) || errors.Is(err, ownership.ErrHolderGone) {
		return pinnedError(err, st.pin.ID)
	}
	return s.ResolveError(model, err)
}
