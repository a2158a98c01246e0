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

// The Responses API's stores, native ids and background settlements are
// responsesapi's (Processor.resp); the stream lends it an ownStream and turns
// what it answers into ext_proc messages here.
type (
	// StoredResponse is one stored response (responses.Stored).
	StoredResponse = responses.Stored
	// ResponseStore keeps stored responses (the gateway adapts the store's).
	ResponseStore = responses.Store
	// ResponseOwner is the owner of a native response id (ownership.Owner).
	ResponseOwner = ownership.Owner
	// ResponseOwners keeps the owners of native ids (Record.Owner: a new one).
	ResponseOwners = ownership.Owners[*Record]
	// Deferred is a background response's settlement kept until it finishes.
	Deferred = ownership.Deferred[*Record]
)

// ErrResponseNotFound: an unknown, expired or another key's response.
var ErrResponseNotFound = responses.ErrNotFound

// DefaultBackgroundLease is a background response's lease by default.
const DefaultBackgroundLease = responsesapi.DefaultBackgroundLease

// WithResponseStore keeps the Responses API's stored responses in rs (none:
// previous_response_id is refused on translated providers).
func WithResponseStore(rs ResponseStore) Option { return func(p *Processor) { p.resp.Store = rs } }

// WithResponseOwners records native response ids in o and routes requests on
// them (without it, native ids pass through unchecked).
func WithResponseOwners(o ResponseOwners) Option { return func(p *Processor) { p.resp.Owners = o } }

// WithBackgroundLease sets the lease of a background response's reservation.
func WithBackgroundLease(d time.Duration) Option {
	return func(p *Processor) { p.resp.BackgroundLease = d }
}

// SettleBackground settles o's background response from its provider's GET.
func (p *Processor) SettleBackground(ctx context.Context, o *ResponseOwner, status int, body []byte) bool {
	return p.resp.SettleBackground(ctx, o, status, body)
}

// initResponses completes p.resp once the options are applied.
func (p *Processor) initResponses() {
	r := &p.resp
	r.Log, r.Debug, r.Now, r.SettleTimeout, r.Router = p.log, p.debug, p.now, p.settleTimeout, p.router
	r.Settle, r.FormatCost = func(ctx context.Context, rec *Record) (kernel.Money, error) { return p.acct.Settle(ctx, rec) }, translate.FormatUSD
	r.End = func(rec *Record, st kernel.Status, at time.Time, u *kernel.Usage) (string, kernel.Usage) {
		if u != nil {
			rec.Usage = *u
		}
		rec.Status, rec.HTTPStatus, rec.EndedAt = st, http.StatusOK, at
		return rec.RequestID, rec.Usage
	}
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

func (o *ownStream) RequestID() string                               { return o.id }
func (o *ownStream) KeyID() string                                   { return o.principal.KeyID }
func (o *ownStream) Models(ctx context.Context) []ModelInfo          { return o.p.cat.Models(ctx, o.principal) }
func (o *ownStream) RouteTo(g *routing.Group, d *routing.Deployment) { (*stream)(o).routeTo(g, d) }
func (o *ownStream) Route(ctx context.Context, m string) (*Target, error) {
	return (*stream)(o).resolve(ctx, m)
}

func (o *ownStream) Resolve(ctx context.Context, m string) (*Target, error) {
	return o.p.cat.Resolve(ctx, o.principal, m)
}

func (o *ownStream) ResolveError(m string, err error) *translate.APIError {
	return resolveError(o.id, o.p.log, m, err)
}

func (o *ownStream) ResolveGroup(ctx context.Context, model string) (*routing.Group, bool, error) {
	gc, ok := o.p.cat.(GroupCatalog)
	if !ok {
		return nil, false, nil
	}
	g, err := gc.ResolveGroup(ctx, o.principal, model)
	return g, true, err
}

func (o *ownStream) Defer() (*Record, *ownership.Hold) {
	s := (*stream)(o)
	rec := s.fillRecord(kernel.StatusCompleted, s.status, kernel.Usage{Input: s.inputEstimate()})
	rec.Owner = nil
	return rec, responsesapi.HoldOf(&s.areq, s.decision.MaxTokens, s.p.now().Add(s.backgroundLease()))
}
func (o *ownStream) Deferred() { o.settled = true; (*stream)(o).doneRouting(kernel.Usage{}) }

// backgroundLease is the lease of the request's reservation (0: the
// accountant's).
func (s *stream) backgroundLease() time.Duration {
	return s.p.resp.Lease(&s.own, s.in != nil && s.in.Stream)
}

// forwardOwned sends a request on a native response or conversation to the
// deployment holding it, or refuses it (nil: the gateway answers; Forward).
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

// forwardedBody sees a forwarded request's response body (ForwardedReply).
func (s *stream) forwardedBody(ctx context.Context, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if s.status < 200 || s.status >= 300 {
		return replyContinueResponseBody
	}
	body := b.GetBody()
	out, err := s.p.resp.ForwardedReply(ctx, (*ownStream)(s), &s.own, s.tr, body, s.sse, b.GetEndOfStream())
	if err != nil {
		s.streamError(err)
	}
	switch {
	case translate.SameBytes(out, body):
		return replyContinueResponseBody
	case s.sse:
		return s.newChunkReply(out)
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
