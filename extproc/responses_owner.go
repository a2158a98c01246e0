package extproc

import (
	"context"
	"errors"
	"net/http"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// Native response ids (issue 37). A provider that serves the Responses API
// itself keeps its responses; the gateway records which key owns each id it
// hands out and which deployment holds it (ResponseOwners, written with the
// ledger's settlement). previous_response_id on such a provider, and
// GET/DELETE /v1/responses/{id}, its input_items and cancel, are then
// admitted only for the owning key (another key: 404, as for a translated
// response) and routed to the owning deployment with its credential; when
// that deployment is cooling down the client gets a 503 rather than a
// re-route that would lose the conversation.

// ResponseOwner is the owner of a native response id (ownership.Owner).
type ResponseOwner = ownership.Owner

// ResponseOwners records and reads the owners of native response ids
// (ownership.Owners over the processor's Record). The owner of a new id is
// handed to the Accountant with the settlement (Record.Owner), which writes
// it with the ledger row.
type ResponseOwners = ownership.Owners[*Record]

// WithResponseOwners records native response ids in o and routes requests on
// them (without it, native ids pass through unchecked).
func WithResponseOwners(o ResponseOwners) Option {
	return func(p *Processor) { p.owners = o }
}

// ownState is a stream's part in native response ownership.
type ownState struct {
	// pin is the owner of the request's previous_response_id: the request
	// goes to its deployment only.
	pin *ResponseOwner
	// record: the request is a native Responses request whose id is recorded
	// at settlement; id is that id once read, store and background the
	// request's flags; sse holds the start of a stream until its
	// response.created event is whole.
	record            bool
	id                string
	store, background bool
	// prev is the request's previous_response_id ("" when none).
	prev    string
	created ownership.CreatedID
	// fwd is the owner of the response a forwarded request (GET, DELETE,
	// input_items, cancel) is on; claimed: its deferred settlement was
	// claimed (responses_background.go); forget: a 2xx forgets it.
	fwd     *ResponseOwner
	claimed bool
	forget  bool
	// conversations.go: model is the x-tollgate-model header; create: the
	// request creates a conversation (fwd holds its owner, but for its id);
	// conv is a Responses request's conversation ("" when none).
	model  string
	create bool
	conv   string
}

// pinned reports whether the request must stay on one deployment.
func (s *stream) pinned() bool { return s.own.pin != nil }

// keyOwner reads the owner of id (kind: "response" or "conversation") for
// the request's key: nil when the id is not a native one the gateway handed
// out; notFound(id) when another key owns it; a 503 when the store fails.
func (s *stream) keyOwner(ctx context.Context, id, kind string, notFound func(id string) *translate.APIError) (*ResponseOwner, *translate.APIError) {
	o, err := s.p.owners.ResponseOwner(ctx, id)
	switch {
	case errors.Is(err, ErrResponseNotFound):
		return nil, nil
	case err != nil:
		s.p.log.Warn("read "+kind+" owner failed", "request_id", s.id, "err", err)
		return nil, translate.ErrUnavailable()
	case o.KeyID != s.principal.KeyID:
		return nil, notFound(id)
	}
	return o, nil
}

// pinPrevious runs before routing for a Responses request: the owner of its
// previous_response_id, when the gateway handed that id out natively, pins
// the request to the deployment holding it; another key's id is refused
// before anything is admitted.
func (s *stream) pinPrevious(ctx context.Context, body []byte) *translate.APIError {
	if s.p.owners == nil || s.ep.API != translate.APIResponses {
		return nil
	}
	r := ownership.ScanRequest(body) // checkNative reads prev and conv again
	s.own.store, s.own.background, s.own.prev, s.own.conv = r.Store, r.Background, r.Previous, r.Conversation
	if conv := s.own.conv; conv != "" {
		o, e := s.keyOwner(ctx, conv, "conversation", ownership.NotFoundConversationParam)
		if e != nil {
			return e
		}
		if o != nil {
			// The deployment holding the conversation, in the group the
			// request names.
			pin := *o
			pin.Model = s.in.Model
			s.own.pin = &pin
		}
	}
	if s.own.prev == "" {
		return nil
	}
	o, e := s.keyOwner(ctx, s.own.prev, "response", ownership.NotFoundPrevious)
	if o != nil { // nil: not a native id, a translated provider's store decides (responses.go)
		s.own.pin = o
	}
	return e
}

// conversationRun is the run of a Responses request that names no run
// (issue 36): its conversation, so that the turns of one conversation are
// one run — counted, and limited by the key's or team's run policy, as
// the calls of an agent's loop are. "" when it has none.
func (s *stream) conversationRun() string {
	if s.ep == nil || s.ep.API != translate.APIResponses {
		return ""
	}
	return s.own.conv
}

// checkNative runs once the translator is known: a native Responses request
// records its id, and its previous_response_id must be one the gateway
// handed out to this key (an unknown one would reach the provider with the
// gateway's shared credential).
func (s *stream) checkNative(body []byte) *translate.APIError {
	if s.p.owners == nil || s.ep.API != translate.APIResponses || !translate.NativeResponses(s.target) {
		return nil
	}
	s.own.record = true
	if prev := s.own.prev; prev != "" && (s.own.pin == nil || s.own.pin.ID != prev) {
		return ownership.NotFoundPrevious(prev)
	}
	if conv := s.own.conv; conv != "" && s.own.pin == nil {
		return ownership.NotFoundConversationParam(conv) // never handed out: not sent with the shared credential
	}
	return nil
}

// resolvePinned routes a request pinned to its response's deployment: that
// deployment of the group, or a 503 while it cools down.
func (s *stream) resolvePinned(ctx context.Context, o *ResponseOwner) (*translate.Target, error) {
	gc, ok := s.p.cat.(GroupCatalog)
	if !ok {
		t, err := s.p.cat.Resolve(ctx, s.principal, o.Model)
		if err != nil || t == nil || t.Deployment != o.Deployment {
			return nil, ownership.ErrHolderGone
		}
		return t, nil
	}
	g, err := gc.ResolveGroup(ctx, s.principal, o.Model)
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
	now := s.p.now()
	if s.p.router.Cooling(dep.Target.Deployment, now) {
		return nil, &ownership.HolderCooling{Deployment: dep.Target.Deployment, RetryAfter: s.p.router.Soonest(&routing.Group{Deployments: []*routing.Deployment{dep}}, now)}
	}
	s.routeTo(g, dep)
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

// observeNative reads the id of a native response: the JSON reply's id, or
// the response of the stream's response.created event.
func (s *stream) observeNative(body []byte, sse bool) {
	if !s.own.record || s.own.id != "" || s.status < 200 || s.status >= 300 {
		return
	}
	if !sse {
		s.own.id = stringMember(body, "id")
		return
	}
	id, ok := s.own.created.Feed(body)
	s.own.id, s.own.record = id, ok // !ok: no response.created where it should be
}

// owner is what the settlement records: the id handed out, if any.
func (s *stream) owner() *ResponseOwner {
	if !s.own.record || s.own.id == "" || s.p.owners == nil {
		return nil
	}
	return &ResponseOwner{
		ID: s.own.id, KeyID: s.principal.KeyID, Deployment: s.target.Deployment, Model: s.in.Model,
		Store: s.own.store, Background: s.own.background,
	}
}

// forwardOwned answers, at request headers, a request on a native response
// (GET, DELETE, input_items, cancel): nil when the id is not one the gateway
// handed out natively (the translated store answers), else a 404 for another
// key, a 503 when its deployment cools down, or the request sent on to that
// deployment with its credential.
func (s *stream) forwardOwned(ctx context.Context) *extprocv3.ProcessingResponse {
	if s.p.owners == nil {
		return nil
	}
	if pr := s.forwardConversation(ctx); pr != nil { // conversations.go
		return pr
	}
	id, sub, rest, ok := ownership.ResponsePath(s.method, s.path)
	if !ok {
		return nil
	}
	o, e := s.keyOwner(ctx, id, "response", ownership.NotFoundResponse)
	switch {
	case e != nil:
		return s.reject(e)
	case o == nil:
		return nil
	}
	target, err := s.resolvePinned(ctx, o)
	if err != nil || target == nil {
		return s.reject(pinnedError(err, id))
	}
	if sub != "input_items" && s.method != http.MethodDelete {
		// A response object (or its stream): it names the model the client
		// asked for, and may show a background response finished.
		s.tr = translate.ForwardedResponses(o.Model)
	}
	s.own.forget = s.method == http.MethodDelete
	return s.forwardTo(target, o, rest, false)
}

// forwardTo sends the request on to target, the deployment holding o (a
// response, or a conversation), with its credential: rest is the path after
// /v1/responses or /v1/conversations.
func (s *stream) forwardTo(target *translate.Target, o *ResponseOwner, rest string, conversations bool) *extprocv3.ProcessingResponse {
	s.target, s.own.fwd = target, o
	s.rt = nil // no admission, no routing feedback: a read of a stored object
	path, headers := translate.NativeResponsesRequest(target, rest, conversations)
	var kvs [8]headerKV
	var vals [512]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	l = l.add(RouteHeader, target.Deployment)
	l = l.addAll(headers)
	l = l.add(":path", path)
	s.mark(&s.report.Forwarded)
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
		RequestHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{
			ClearRouteCache: true,
			HeaderMutation: &extprocv3.HeaderMutation{
				SetHeaders:    l.options(),
				RemoveHeaders: clientCredentialHeaders,
			},
		}},
	}}
}

// forwardedResponse sees the response to a forwarded request: a deleted
// response is forgotten; a stream (GET ?stream=true) is passed as it comes.
func (s *stream) forwardedResponse(ctx context.Context, contentType *corev3.HeaderValue, eos bool) *extprocv3.ProcessingResponse {
	o := s.own.fwd
	ok := s.status >= 200 && s.status < 300
	if s.own.forget && ok {
		if err := s.p.owners.ForgetResponse(ctx, o.ID); err != nil && !errors.Is(err, ErrResponseNotFound) {
			s.p.log.Warn("forget response owner failed", "request_id", s.id, "response", o.ID, "err", err)
		}
	}
	pr := replyHeadersNamed(s.id, o.Deployment)
	if s.tr != nil && ok && !eos && upstreamStreams(contentType) {
		s.sse = true
		pr.ModeOverride = modeStreamed
		c := pr.GetResponseHeaders().GetResponse()
		c.HeaderMutation.RemoveHeaders = contentLengthHeader
	}
	return pr
}

// forwardedBody sees the body of a forwarded request's response: a response
// object names the client's model, and a background response it shows
// finished is settled (responses_background.go).
func (s *stream) forwardedBody(ctx context.Context, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if s.status < 200 || s.status >= 300 {
		return replyContinueResponseBody
	}
	body := b.GetBody()
	if s.own.create { // conversations.go: the id handed out is the key's
		s.own.create = false
		o := *s.own.fwd
		if o.ID = stringMember(body, "id"); o.ID != "" {
			if err := s.p.owners.PutOwner(ctx, &o, nil); err != nil {
				s.p.log.Warn("record conversation owner failed", "request_id", s.id, "conversation", o.ID, "err", err)
			}
		}
	}
	if s.tr == nil {
		return replyContinueResponseBody
	}
	if s.sse {
		out, err := s.tr.StreamChunk(body, b.GetEndOfStream())
		if err != nil {
			if out == nil {
				out = body
			}
			s.streamError(err)
		}
		if u, reported := s.tr.StreamUsage(); reported {
			s.settleForwarded(ctx, "completed", u, true) // the usage comes with the final event
		}
		if translate.SameBytes(out, body) {
			return replyContinueResponseBody
		}
		return s.newChunkReply(out)
	}
	out, u, err := s.tr.Response(body)
	if out == nil {
		out = body
	}
	s.settleForwarded(ctx, stringMember(out, "status"), u, err == nil)
	if translate.SameBytes(out, body) {
		return replyContinueResponseBody
	}
	pr, x := s.newResponseBodyReply()
	x.c.BodyMutation = x.mutation(out)
	var kvs [1]headerKV
	var vals [24]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	x.setHeaders(l.addInt(hdrContentLength, int64(len(out))))
	return pr
}

// replyHeadersNamed continues response headers, naming the request and the
// deployment that answered.
func replyHeadersNamed(id, deployment string) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
		ResponseHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{
			HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
				{Header: &corev3.HeaderValue{Key: hdrRequestID, RawValue: []byte(id)}, AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD},
				{Header: &corev3.HeaderValue{Key: hdrDeployment, RawValue: []byte(deployment)}, AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD},
			}},
		}},
	}}
}

// stringMember is the string value of a top-level member of a JSON object,
// "" when absent, null or not a string.
func stringMember(body []byte, name string) string { return ownership.StringMember(body, name) }

// replyContinueRequestBody continues a request body unchanged (shared).
var replyContinueRequestBody = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
	RequestBody: &extprocv3.BodyResponse{},
}}

// pinFailed maps a failure to route a pinned request: the catalog's own
// errors (model gone, not allowed) as for any request, else pinnedError.
func (s *stream) pinFailed(err error, model string) *translate.APIError {
	var hc *ownership.HolderCooling
	if errors.As(err, &hc) || errors.Is(err, ownership.ErrHolderGone) {
		return pinnedError(err, s.own.pin.ID)
	}
	return resolveError(s.id, s.p.log, model, err)
}
