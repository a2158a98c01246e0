package extproc

import (
	"context"
	"net/http"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/responsesapi"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/responses"
)

// The Responses and Conversations APIs beyond translation — stored
// responses, native ids, background settlements — are responsesapi's
// (Processor.resp); the stream lends it an ownStream and turns what it
// answers into ext_proc messages here.

// The Responses API's stores (responsesapi's and ownership's types).
type (
	// StoredResponse is one stored response (responses.Stored).
	StoredResponse = responses.Stored
	// ResponseStore keeps stored responses (the gateway adapts the store's).
	ResponseStore = responses.Store
	// ResponseOwner is the owner of a native response id (ownership.Owner).
	ResponseOwner = ownership.Owner
	// ResponseOwners records and reads the owners of native response ids;
	// the owner of a new id is handed to the Accountant with the settlement
	// (Record.Owner), which writes it with the ledger row.
	ResponseOwners = ownership.Owners[*Record]
	// Deferred is a background response's settlement kept until it finishes.
	Deferred = ownership.Deferred[*Record]
)

// ErrResponseNotFound is what a ResponseStore or ResponseOwners returns for
// an unknown, expired or another key's response.
var ErrResponseNotFound = responses.ErrNotFound

// DefaultBackgroundLease is a background response's lease by default.
const DefaultBackgroundLease = responsesapi.DefaultBackgroundLease

// WithResponseStore keeps the Responses API's stored responses in rs; without
// it nothing is stored and previous_response_id is refused on translated
// providers.
func WithResponseStore(rs ResponseStore) Option { return func(p *Processor) { p.resp.Store = rs } }

// WithResponseOwners records native response ids in o and routes requests on
// them (without it, native ids pass through unchecked).
func WithResponseOwners(o ResponseOwners) Option { return func(p *Processor) { p.resp.Owners = o } }

// WithBackgroundLease sets how long a background response's reservation
// waits for a poll that sees it finished before its lease settles it.
func WithBackgroundLease(d time.Duration) Option {
	return func(p *Processor) { p.resp.BackgroundLease = d }
}

// SettleBackground settles the background response of o from its
// provider's answer to GET /v1/responses/{id} (responsesapi's).
func (p *Processor) SettleBackground(ctx context.Context, o *ResponseOwner, status int, body []byte) bool {
	return p.resp.SettleBackground(ctx, o, status, body)
}

// initResponses completes p.resp once the options are applied.
func (p *Processor) initResponses() {
	r := &p.resp
	r.Log, r.Debug, r.Now, r.SettleTimeout, r.Router = p.log, p.debug, p.now, p.settleTimeout, p.router
	r.Settle, r.FormatCost = func(ctx context.Context, rec *Record) (kernel.Money, error) { return p.acct.Settle(ctx, rec) }, formatUSD
	r.End = func(rec *Record, st kernel.Status, at time.Time, u *kernel.Usage) (string, kernel.Usage) {
		if u != nil {
			rec.Usage = *u
		}
		rec.Status, rec.HTTPStatus, rec.EndedAt = st, http.StatusOK, at
		return rec.RequestID, rec.Usage
	}
}

func init() {
	registerEndpoint(&endpoint{Path: "/v1/conversations", Reply: conversationReply})
	registerEndpoint(&endpoint{Path: "/v1/conversations/", Prefix: true, Reply: conversationReply})
	registerEndpoint(&endpoint{Path: "/v1/responses/", Prefix: true, Reply: storedResponseReply})
}

func conversationReply(_ context.Context, s *stream) *apiReply {
	status, body := responsesapi.UnknownConversation(s.path)
	return &apiReply{Status: status, Body: body}
}

func storedResponseReply(ctx context.Context, s *stream) *apiReply {
	status, body := s.p.resp.Serve(ctx, (*ownStream)(s), s.method, s.path)
	return &apiReply{Status: status, Body: body}
}

// ownStream is the stream as responsesapi sees it (responsesapi.Stream).
type ownStream stream

func (o *ownStream) RequestID() string { return o.id }
func (o *ownStream) KeyID() string     { return o.principal.KeyID }
func (o *ownStream) Models(ctx context.Context) []ModelInfo {
	return o.p.cat.Models(ctx, o.principal)
}

func (o *ownStream) Resolve(ctx context.Context, model string) (*translate.Target, error) {
	return o.p.cat.Resolve(ctx, o.principal, model)
}

func (o *ownStream) ResolveGroup(ctx context.Context, model string) (*routing.Group, bool, error) {
	gc, ok := o.p.cat.(GroupCatalog)
	if !ok {
		return nil, false, nil
	}
	g, err := gc.ResolveGroup(ctx, o.principal, model)
	return g, true, err
}

func (o *ownStream) Route(ctx context.Context, model string) (*translate.Target, error) {
	return (*stream)(o).resolve(ctx, model)
}
func (o *ownStream) RouteTo(g *routing.Group, dep *routing.Deployment) { (*stream)(o).routeTo(g, dep) }
func (o *ownStream) ResolveError(model string, err error) *translate.APIError {
	return resolveError(o.id, o.p.log, model, err)
}

func (o *ownStream) Defer() (*Record, *ownership.Hold) {
	s := (*stream)(o)
	rec := s.fillRecord(kernel.StatusCompleted, s.status, kernel.Usage{Input: s.inputEstimate()})
	rec.Owner = nil
	return rec, responsesapi.HoldOf(&s.areq, s.decision.MaxTokens, s.p.now().Add(s.backgroundLease()))
}
func (o *ownStream) Deferred() { o.settled = true; (*stream)(o).doneRouting(kernel.Usage{}) }

// pinned reports whether the request must stay on one deployment.
func (s *stream) pinned() bool { return s.own.Pinned() }

// backgroundLease is the lease of the request's reservation (0: the
// accountant's).
func (s *stream) backgroundLease() time.Duration {
	return s.p.resp.Lease(&s.own, s.in != nil && s.in.Stream)
}

// owner is what the settlement records: the native id handed out, if any.
func (s *stream) owner() *ResponseOwner {
	return s.p.resp.Owner(&s.own, s.principal.KeyID, s.target.Deployment, s.in.Model)
}

// forwardOwned answers, at request headers, a request on a native response
// or a conversation (responsesapi.Service.Forward): nil when the gateway
// answers it itself, else a rejection or the request sent on, with its
// credential, to the deployment holding the object.
func (s *stream) forwardOwned(ctx context.Context) *extprocv3.ProcessingResponse {
	f, e := s.p.resp.Forward(ctx, (*ownStream)(s), &s.own, s.method, s.path)
	switch {
	case e != nil:
		return s.reject(e)
	case f == nil:
		return nil
	case f.Translator != nil:
		s.tr = f.Translator
	}
	s.target = f.Target
	s.rt = nil // no admission, no routing feedback: a read of a stored object
	var kvs [8]headerKV
	var vals [512]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	l = l.add(RouteHeader, f.Target.Deployment)
	l = l.addAll(f.Headers)
	l = l.add(":path", f.Path)
	s.mark(&s.report.Forwarded)
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
		RequestHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{
			ClearRouteCache: true,
			HeaderMutation:  &extprocv3.HeaderMutation{SetHeaders: l.options(), RemoveHeaders: clientCredentialHeaders},
		}},
	}}
}

// forwardedResponse sees the response to a forwarded request: a deleted
// object is forgotten; a stream (GET ?stream=true) is passed as it comes.
func (s *stream) forwardedResponse(ctx context.Context, contentType *corev3.HeaderValue, eos bool) *extprocv3.ProcessingResponse {
	s.p.resp.ForwardedStatus(ctx, (*ownStream)(s), &s.own, s.status)
	pr := replyHeadersNamed(s.id, s.own.Forwarded().Deployment)
	if s.tr != nil && s.status >= 200 && s.status < 300 && !eos && upstreamStreams(contentType) {
		s.sse = true
		pr.ModeOverride = modeStreamed
		pr.GetResponseHeaders().GetResponse().HeaderMutation.RemoveHeaders = contentLengthHeader
	}
	return pr
}

// forwardedBody sees the body of a forwarded request's response: a created
// conversation is recorded, a response object names the client's model, and
// a background response it shows finished is settled.
func (s *stream) forwardedBody(ctx context.Context, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if s.status < 200 || s.status >= 300 {
		return replyContinueResponseBody
	}
	body, rs := b.GetBody(), (*ownStream)(s)
	s.p.resp.ForwardedBody(ctx, rs, &s.own, body)
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
			s.p.resp.SettleForwarded(ctx, rs, &s.own, "completed", u, true) // the usage comes with the final event
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
	s.p.resp.SettleForwarded(ctx, rs, &s.own, responsesapi.StringMember(out, "status"), u, err == nil)
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

// replyContinueRequestBody continues a request body unchanged (shared).
var replyContinueRequestBody = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
	RequestBody: &extprocv3.BodyResponse{},
}}
