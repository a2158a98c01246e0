package extproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/responsesapi"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// Processor is the ext_proc server: one Process call per HTTP request. It holds
// only immutable configuration; all request state lives in the stream.
type Processor struct {
	cat             Catalog
	acct            Accountant
	log             *slog.Logger
	debug           bool
	now             func() time.Time
	newID           func() string
	maxBody         int
	settleTimeout   time.Duration
	shutdownTimeout time.Duration
	health          *health.Server
	resp            responsesapi.Service[*Record] // the Responses API's stores (responses.go)
	router          *routing.Router               // deployment health and choice (routing.go)
	retryKey        []byte                        // signs retry tokens (routing.go)
	perTry          bool                          // route retrying groups per try (pertry.go)
	// observe, when set (benchmarks), receives the processing time of every
	// message: from its receipt to its reply being ready.
	observe func(time.Duration)
	// obs receives every request's Report (nil: none); tracer is obs's
	// Tracer side, when it has one.
	obs    Observer
	tracer Tracer
	cp     UsageCheckpointer // streams' usage so far (estimate.go; nil: none)
	guards GuardResolver     // guard.go (nil: none)
	cache  ResponseCache     // the response cache (cache.go; nil: none)
	mcp    MCPAuthorizer     // /mcp on Envoy (endpoints.go; nil: none)
}

var _ extprocv3.ExternalProcessorServer = (*Processor)(nil)

// New returns a Processor serving from cat and accounting through acct.
func New(cat Catalog, acct Accountant, opts ...Option) *Processor {
	p := &Processor{
		cat:             cat,
		acct:            acct,
		log:             slog.Default(),
		now:             time.Now,
		maxBody:         DefaultMaxBodyBytes,
		settleTimeout:   10 * time.Second,
		shutdownTimeout: 30 * time.Second,
		health:          health.NewServer(),
		router:          routing.NewRouter(),
		retryKey:        routing.NewTokenKey(),
	}
	for _, o := range opts {
		o(p)
	}
	if p.newID == nil {
		p.newID = defaultRequestIDs()
	}
	p.debug = p.log.Enabled(context.Background(), slog.LevelDebug)
	p.initResponses()
	return p
}

// Process runs one request's ext_proc stream to its end and settles the
// request exactly once, whatever the end.
func (p *Processor) Process(srv extprocv3.ExternalProcessor_ProcessServer) error {
	ss := p.Session(srv.Context())
	defer ss.Close()
	var rb *recvBuf
	if _, ok := srv.(*grpc.GenericServerStream[extprocv3.ProcessingRequest, extprocv3.ProcessingResponse]); ok {
		rb = &recvBuf{} // over gRPC: every message decoded into this one
	}
	for {
		req, err := recv(srv, rb)
		if err != nil {
			if errors.Is(err, io.EOF) || ss.ctx.Err() != nil {
				return nil
			}
			return err
		}
		resp, end := ss.handle(req)
		if resp == nil {
			continue
		}
		err = srv.Send(resp)
		if rb != nil && !grpc.EnableTracing {
			ss.ReleaseReply(resp) // encoded by Send (replies.go)
		}
		if err != nil {
			return err
		}
		if end {
			return nil
		}
	}
}

// Session is one ext_proc stream handled by calls rather than over a gRPC
// stream: the in-process data plane calls Handle for each message in its own
// goroutine (extprocfilter.Sync), with no goroutine, channel or copy between
// them. It is Process's loop without the transport: the same messages get
// the same replies. A Session is used by one goroutine at a time.
type Session struct {
	s    *stream // pooled: nil once the session closed (replies.go)
	ctx  context.Context
	done bool
	lent [4]*pooledReply // replies lent to the data plane (replies.go)
}

// Session starts a stream whose context is ctx (cancelled: the stream was
// reset). End it with Close unless Handle returned an error.
func (p *Processor) Session(ctx context.Context) *Session {
	return &Session{ctx: ctx, s: p.newStream()}
}

// Handle processes one message and sends its reply (none in observability
// mode). io.EOF means the stream ended after the reply (an immediate
// response, R1.8c): the stream finished and Handle is not called again. The
// session only reads req, and keeps nothing of it (the data plane reuses
// it); the reply is read-only (it may be shared with other streams), and the
// data plane may give it back with ReleaseReply once it applied it.
func (ss *Session) Handle(req *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse)) error {
	if ss.done {
		return io.EOF
	}
	resp, end := ss.handle(req)
	if resp != nil {
		send(resp)
	}
	if end {
		ss.Close()
		return io.EOF
	}
	return nil
}

// handle returns req's reply (nil: none) and whether the stream ends with it.
func (ss *Session) handle(req *extprocv3.ProcessingRequest) (*extprocv3.ProcessingResponse, bool) {
	p := ss.s.p
	var t0 time.Time
	if p.observe != nil {
		t0 = time.Now()
	}
	resp := ss.s.handle(ss.ctx, req)
	x := ss.s.takeLent(resp)
	if p.observe != nil {
		p.observe(time.Since(t0))
	}
	if resp == nil || req.GetObservabilityMode() {
		x.release() // not sent
		return nil, false
	}
	ss.lend(x)
	// Envoy closes the stream after an immediate response (R1.8c).
	return resp, resp.GetImmediateResponse() != nil
}

// Close ends the stream (the client half-closed or reset it): a request
// that was admitted and not settled is settled with what was observed.
func (ss *Session) Close() {
	if ss.done {
		return
	}
	ss.done = true
	ss.s.finish(ss.ctx)
	ss.s.observed()
	ss.s.release()
	ss.s = nil
}

// recv returns srv's next message: decoded into rb when it is not nil (the
// stream keeps nothing of a message once handled), else the one Recv returns
// (in-process, extprocfiltertest.Direct, the sender's own).
func recv(srv extprocv3.ExternalProcessor_ProcessServer, rb *recvBuf) (*extprocv3.ProcessingRequest, error) {
	if rb == nil {
		return srv.Recv()
	}
	if err := srv.RecvMsg(rb); err != nil {
		return nil, err
	}
	return &rb.ProcessingRequest, nil
}

// stream is the state of one request.
type stream struct {
	p            *Processor
	lendsBodies  bool // the data plane lends its body buffers (LendingSession)
	ep           *endpoint
	id           string
	path         string
	method       string
	hadCL        bool
	customerHdr  string
	runHdr       string   // x-tollgate-run-id (runs.go)
	runID        string   // the run scope's id, once admitted against it
	tagsHdr      string   // x-tollgate-tags (tags.go)
	tags         []string // the request's tags, sorted (tags.go)
	principal    *Principal
	target       *translate.Target
	rt           *routing.Route // routing state when the catalog routes by group (&rtState)
	rtState      routing.Route
	att          routing.Attempt // which attempt this stream is (routing.go)
	try          *routing.Try    // its part in per-try routing, nil: none (pertry.go)
	lent         *pooledReply    // the reply being built, from the pool (replies.go)
	upRetryAfter time.Duration   // a 429's retry-after
	tr           translate.Translator
	in           *translate.Inbound
	promptBytes  int64
	promptText   int64 // bytes of the prompt's text (estimate.go)
	decision     kernel.Decision
	customer     string
	started      time.Time
	admitted     bool
	settled      bool
	status       int
	sse          bool
	loggedErr    bool
	ckReasoning  int8 // estimate.go: 0 not yet known, 1 shows all it is billed, 2 may hide reasoning

	cache streamCache // the response cache's part (cache.go)

	// anthropicVersion is the client's anthropic-version header (Inbound).
	anthropicVersion string
	// googleKey: the key came as Google's (x-goog-api-key or ?key=), from a
	// Gemini API client (endpoints.go).
	googleKey bool

	// The request's admission and settlement, allocated with the stream
	// (each is made once).
	areq kernel.AdmitRequest
	rec  Record
	// report is what Observer gets (filled only when there is one).
	report Report
	// parsed holds in when the endpoint's request is parsed by parseRequest.
	parsed translate.ParsedRequest
	guard  guardState // guard.go
	// own: native response ids (responses.go, responsesapi/).
	own responsesapi.State
	// units: a multipart unit request's headers (units.go).
	units unitState
	// mcpReq: an MCP request's method, path and headers (endpoints.go).
	mcpReq *http.Request
}

func (s *stream) handle(ctx context.Context, req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
	switch r := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		s.readTryAttribute(req)
		return s.requestHeaders(ctx, r.RequestHeaders)
	case *extprocv3.ProcessingRequest_RequestBody:
		return s.requestBody(ctx, r.RequestBody)
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return replyContinueRequestTrailers
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return s.responseHeaders(ctx, r.ResponseHeaders)
	case *extprocv3.ProcessingRequest_ResponseBody:
		if d := cutDetails(req); d != "" { // the built-in data plane's last message (upstream.go)
			return s.responseCut(ctx, r.ResponseBody, d)
		}
		return s.responseBody(ctx, r.ResponseBody)
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return s.responseTrailers(ctx)
	default:
		return nil
	}
}

// --- request headers --------------------------------------------------------

func (s *stream) requestHeaders(ctx context.Context, h *extprocv3.HttpHeaders) *extprocv3.ProcessingResponse {
	s.started = s.p.now()
	s.id = s.p.newID()
	var bearer, xKey, apiKey, googKey string
	// Read after the loop, without copies where they are the endpoint's.
	var path, method, contentLength *corev3.HeaderValue
	for _, hv := range h.GetHeaders().GetHeaders() {
		switch hv.GetKey() {
		case ":path":
			path = hv
		case ":method":
			method = hv
		case translate.HdrAuthorization:
			bearer = translate.BearerToken(headerValue(hv))
		case translate.HdrXAPIKey:
			xKey = headerValue(hv)
		case translate.HdrAPIKey:
			apiKey = headerValue(hv)
		case translate.HdrGoogAPIKey:
			googKey = headerValue(hv)
		case hdrCustomer:
			s.customerHdr = headerValue(hv)
		case hdrRunID:
			s.runHdr = headerValue(hv)
		case responsesapi.HdrModel: // conversations
			s.own.SetModelHeader(headerValue(hv))
		case hdrTags:
			s.tagsHdr = headerValue(hv)
		case translate.HdrAnthropicVersion:
			s.anthropicVersion = headerValue(hv)
		case hdrContentLength:
			contentLength = hv
			s.hadCL = true
		case hdrTraceparent:
			s.report.ClientTraceparent = headerValue(hv)
		case hdrRetry:
			s.retryHeader(headerValue(hv))
		case envoy.AttemptCountHeader, envoy.ReservedHeader, hdrClient, translate.HdrAnthropicBeta:
			s.tryHeader(hv.GetKey(), headerValue(hv))
			s.cacheHeader(hv.GetKey(), headerValue(hv))
		case hdrCacheControl, hdrCacheTTL:
			s.cacheHeader(hv.GetKey(), headerValue(hv))
		}
	}
	s.tryID()
	if e := s.readTryClient(ctx, &path); e != nil {
		return s.reject(e)
	}
	s.readTryOrigin(h.GetHeaders())
	if s.p.debug {
		s.p.log.Debug("request headers", "request_id", s.id, "headers", redactedHeaders(h.GetHeaders()))
	}
	ep := lookupEndpointHeader(path)
	var epPath, epMethod string
	if ep != nil {
		epPath, epMethod = ep.Path, ep.Method
	}
	s.path, s.method = headerValueAs(path, epPath), headerValueAs(method, epMethod)
	if ep == nil || ep.Method != "" && ep.Method != s.method {
		if pr := s.mcpHeaders(ctx, h); pr != nil { // endpoints.go
			return pr
		}
		pathOnly, _, _ := strings.Cut(s.path, "?")
		return s.reject(&translate.APIError{
			Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Code: translate.CodeUnknownURL,
			Message: fmt.Sprintf("Invalid URL (%s %s)", s.method, pathOnly),
		})
	}
	s.ep = ep
	secret := bearer
	if secret == "" {
		secret = xKey
	}
	if secret == "" {
		secret = apiKey
	}
	if secret == "" {
		secret = googKey
	}
	if secret == "" && ep.QueryKey {
		secret = translate.QueryKey(s.path)
	}
	s.googleKey = secret != "" && secret != bearer && secret != xKey && secret != apiKey
	if secret == "" && !s.signedTry() {
		return s.reject(&translate.APIError{
			Status: http.StatusUnauthorized, Type: translate.TypeInvalidRequest, Code: translate.CodeInvalidAPIKey,
			Message: "You didn't provide an API key. Send it as 'Authorization: Bearer YOUR_KEY' or 'x-api-key: YOUR_KEY'.",
		})
	}
	pr, err := s.authenticate(ctx, secret)
	if err != nil || pr == nil {
		if err == nil || errors.Is(err, ErrUnauthorized) {
			return s.reject(&translate.APIError{
				Status: http.StatusUnauthorized, Type: translate.TypeInvalidRequest, Code: translate.CodeInvalidAPIKey,
				Message: "Invalid API key: it is unknown, expired or revoked.",
			})
		}
		s.p.log.Warn("authenticate failed", "request_id", s.id, "err", err)
		return s.reject(translate.ErrUnavailable())
	}
	s.principal = pr
	if ep.API == translate.APIPassthrough { // passthrough.go
		n, _ := headerInt(contentLength)
		return s.passthroughHeaders(ctx, h.GetEndOfStream(), n)
	}
	if ep.Reply != nil {
		if pr := s.forwardOwned(ctx); pr != nil { // responses.go (responsesapi)
			return pr
		}
		r := ep.Reply(ctx, s)
		return s.immediate(r.Status, r.Body, nil)
	}
	if ep.Multipart { // units.go: uploads, seen in part
		return s.multipartHeaders(h, contentLength)
	}
	if h.GetEndOfStream() {
		return s.reject(translate.ErrInvalidRequest("The request has no body: send a JSON object.", ""))
	}
	if n, err := headerInt(contentLength); err == nil && n > int64(s.p.maxBody) {
		return s.reject(translate.ErrTooLarge(s.p.maxBody))
	}
	return replyContinueRequestHeaders
}

// --- request body -------------------------------------------------------------

func (s *stream) requestBody(ctx context.Context, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	defer s.releaseBody()
	if s.mcpReq != nil { // endpoints.go
		return s.mcpBody(ctx, b)
	}
	if s.own.Forwarded() != nil { // a forwarded request's body (responses.go)
		return replyContinueRequestBody
	}
	if s.ep == nil || s.principal == nil || s.admitted {
		// request_header_mode SKIP, or a second body: the filter is misconfigured.
		// Fail closed: without the headers there is no key and no route.
		return s.reject(&translate.APIError{
			Status: http.StatusInternalServerError, Type: translate.TypeServer, Code: "gateway_misconfigured",
			Message: "The gateway received a request body without its headers.",
		})
	}
	body := b.GetBody()
	if len(body) > s.p.maxBody && !s.ep.Multipart { // an upload's first bytes may pass the limit by a chunk
		return s.reject(translate.ErrTooLarge(s.p.maxBody))
	}
	if s.ep.API == translate.APIPassthrough {
		return s.passthroughBody(ctx, body)
	}
	in, err := s.parseBody(body, b.GetEndOfStream()) // units.go: multipart forms too
	if err != nil {
		return s.reject(translate.BodyError(err))
	}
	choices, err := in.Choices()
	if err != nil {
		return s.reject(translate.BodyError(err))
	}
	if in.Model == "" {
		return s.reject(translate.ErrInvalidRequest("You must provide a model parameter.", "model"))
	}
	in, ge := s.guardPre(ctx, in) // guard.go: before anything is charged
	if ge != nil {
		return s.reject(ge)
	}
	body = in.Body
	s.in = in
	in.ReplyInPlace = s.lendsBodies
	in.AnthropicVersion, in.RequestID = s.anthropicVersion, s.id
	s.promptBytes = int64(len(body))
	s.promptText = translate.PromptTextBytes(in)
	if in.Stream && s.p.cp != nil && translate.ReasoningAsked(body) {
		s.ckReasoning = 2 // estimate.go: the body is not kept
	}
	if e := s.p.resp.PinPrevious(ctx, (*ownStream)(s), &s.own, s.ep.API, in.Model, body); e != nil { // responses.go
		return s.reject(e)
	}
	target, err := s.resolve(ctx, in.Model)
	if err != nil || target == nil {
		if s.own.Pinned() {
			return s.reject(responsesapi.PinFailed((*ownStream)(s), &s.own, err, in.Model))
		}
		return s.reject(resolveError(s.id, s.p.log, in.Model, err))
	}
	s.target = target
	tr := translate.NewTranslator(s.ep.API, target.Provider)
	if tr == nil {
		return s.reject(&translate.APIError{
			Status: http.StatusBadRequest, Type: translate.TypeInvalidRequest, Code: "unsupported_endpoint",
			Message: fmt.Sprintf("The model `%s` does not support %s.", in.Model, s.ep.Path), Param: "model",
		})
	}
	s.tr = tr
	if e := s.p.resp.Prepare(ctx, (*ownStream)(s), &s.own, tr, target, body, &s.promptBytes); e != nil {
		return s.reject(e)
	}
	if e := s.p.resp.CheckNative(&s.own, s.ep.API, target); e != nil {
		return s.reject(e)
	}

	scopes, rerr := s.withRun(s.principal.Scopes)
	if rerr == nil {
		scopes, rerr = s.withTags(scopes, body) // tags.go
	}
	if rerr != nil {
		return s.reject(rerr)
	}
	if id := s.customerID(); id != "" {
		if cs, ok := s.p.cat.Customer(ctx, id); ok {
			s.customer = id
			// A new slice: the principal's is shared by concurrent requests.
			scopes = append(slices.Clip(scopes), cs)
		}
	}
	if s.p.cache != nil {
		if pr := s.cacheLookup(ctx, body, scopes); pr != nil {
			return pr
		}
	}
	areq := &s.areq
	*areq = kernel.AdmitRequest{
		ID:               s.id,
		Scopes:           scopes,
		Model:            target.Model,
		PromptBytes:      s.promptBytes,
		MaxTokens:        in.MaxTokens,
		DefaultMaxTokens: target.DefaultMaxTokens,
		Price:            target.Price,
		Lease:            s.backgroundLease(), // responses.go
	}
	if s.ep.NoOutput {
		areq.MaxTokens, areq.DefaultMaxTokens = 0, 1
	} else {
		kernel.ReserveChoices(areq, choices) // n × the output bound
	}
	s.priceUnits(areq) // units.go: per unit (routing.go again for each candidate)
	s.mark(&s.report.AdmitStart)
	d, err := s.admit(ctx) // s.areq
	if err != nil {
		s.p.log.Warn("admit failed", "request_id", s.id, "err", err)
		return s.reject(translate.ErrUnavailable())
	}
	if !d.Admitted {
		if d.Reason == kernel.ReasonUnpriced { // upstream.go: name the missing price
			return s.reject(s.unpricedError(d))
		}
		return s.reject(s.refused(d, in.Model))
	}
	s.admitted, s.decision = true, d
	if s.unitClamped(d) { // units.go
		s.settle(ctx, kernel.StatusFailed, http.StatusBadRequest, kernel.Usage{}, true)
		return s.reject(translate.ErrDecision(kernel.BudgetRefusal(scopes), in.Model))
	}
	if !s.ep.NoOutput && d.MaxTokens > 0 && (d.Clamped || in.MaxTokens == 0 && strictBudget(scopes)) {
		// The reservation covers d.MaxTokens output tokens: send that bound when
		// the kernel lowered it, and when the client gave none while a strict
		// budget applies (else the provider's own default could exceed it).
		// Each of the request's choices gets an equal share.
		if in.ClampMaxTokens = kernel.PerChoice(d.MaxTokens, choices); in.ClampMaxTokens == 0 {
			s.settle(ctx, kernel.StatusFailed, http.StatusBadRequest, kernel.Usage{}, true)
			return s.reject(translate.ErrDecision(kernel.BudgetRefusal(scopes), in.Model))
		}
	}
	if s.routesPerTry() {
		return s.routeTry(ctx, d)
	}
	out, err := s.tr.Request(in, s.target)
	if err != nil {
		s.settle(ctx, kernel.StatusFailed, http.StatusBadRequest, kernel.Usage{}, true)
		return s.reject(translate.ErrInvalidRequest(err.Error(), ""))
	}
	if out.Reply != nil { // answered by the gateway itself: free
		s.settle(ctx, kernel.StatusCompleted, http.StatusOK, kernel.Usage{}, true)
		return s.immediate(http.StatusOK, out.Reply, nil)
	}
	if target.Signer != nil { // upstream.go: after the body is final
		if err := out.Sign(ctx, s.target, s.method, s.path, s.in.Body); err != nil {
			s.p.log.Warn("signing the upstream request failed", "request_id", s.id, "deployment", target.Deployment, "err", err)
			s.settle(ctx, kernel.StatusFailed, http.StatusBadGateway, kernel.Usage{}, true)
			return s.reject(&translate.APIError{
				Status: http.StatusBadGateway, Type: translate.TypeServer, Code: "upstream_auth_error",
				Message: "The gateway could not sign the request for this deployment.",
			})
		}
	}

	pr, x := s.newRequestBodyReply()
	x.c.ClearRouteCache = true
	var kvs [8]headerKV
	var vals [512]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	l = l.add(RouteHeader, s.target.Deployment)
	l = l.addAll(out.Headers)
	l = s.traceHeader(l)
	if out.Path != "" && out.Path != s.path {
		l = l.add(":path", out.Path)
	}
	x.hm.RemoveHeaders = clientCredentialHeaders
	if len(out.Remove) > 0 {
		// A new slice: clientCredentialHeaders is shared.
		x.hm.RemoveHeaders = append(slices.Clip(x.hm.RemoveHeaders), out.Remove...)
	}
	if out.Body = s.guardBody(out.Body); out.Body != nil {
		x.set.Body = out.Body
		x.bm.Mutation = &x.set
		x.c.BodyMutation = &x.bm
		if s.hadCL {
			l = l.addInt(hdrContentLength, int64(len(out.Body)))
		} else {
			x.hm.RemoveHeaders = append(slices.Clip(x.hm.RemoveHeaders), hdrContentLength)
		}
	} else if s.att.N > 1 && s.hadCL {
		l = l.addInt(hdrContentLength, s.promptBytes) // a fallback redirect's holds the try's (routing.go)
	}
	if s.isTry() || s.att.N > 1 { // from scratch: the header map may hold a previous try's (pertry.go)
		l, x.hm.RemoveHeaders = s.tryRequestHeaders(l, out, x.hm.RemoveHeaders)
	}
	x.setHeaders(l)
	return pr
}

// strictBudget reports whether the request is under a strict budget: the key's
// mode is Strict and some scope has a budget window.
func strictBudget(scopes []kernel.Scope) bool {
	if len(scopes) == 0 || scopes[0].Limits != nil && scopes[0].Limits.Mode != kernel.Strict {
		return false
	}
	for _, sc := range scopes {
		if sc.Limits != nil && len(sc.Limits.Budgets) > 0 {
			return true
		}
	}
	return false
}

// customerID is the end customer of the request: the x-tollgate-customer header,
// else the body's user field (metadata.user_id for Anthropic).
func (s *stream) customerID() string {
	if s.customerHdr != "" {
		return s.customerHdr
	}
	return s.in.User
}

// --- response headers -------------------------------------------------------

func (s *stream) responseHeaders(ctx context.Context, h *extprocv3.HttpHeaders) *extprocv3.ProcessingResponse {
	var contentType *corev3.HeaderValue
	for _, hv := range h.GetHeaders().GetHeaders() {
		switch hv.GetKey() {
		case ":status":
			n, _ := headerInt(hv)
			s.status = int(n)
			s.mark(&s.report.FirstByte)
		case hdrContentType:
			contentType = hv
		}
	}
	if !s.admitted {
		if s.own.Forwarded() != nil {
			return s.forwardedResponse(ctx, contentType, h.GetEndOfStream())
		}
		return replyContinueResponseHeaders
	}
	if s.isRouterTry() {
		if pr := s.tryResponse(h); pr != nil {
			return pr
		}
	}
	s.observeResponse(h)
	pr, x := s.newResponseHeadersReply()
	var kvs [8]headerKV
	var vals [256]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	l = l.add(hdrRequestID, s.id)
	l = l.add(hdrDeployment, s.target.Deployment)
	l = s.cacheReplyHeader(l)
	if s.rt != nil {
		l = l.addInt(hdrAttempts, int64(s.att.Number()))
	}
	l = l.addRateLimits(s.decision.RateLimit)
	l = s.guardHeaders(l)
	l = l.addBudgetWarnings(s.decision.Warnings)
	if rh, ok := s.tr.(translate.ReplyHeaderer); ok {
		l = l.addAll(rh.ReplyHeaders())
	}
	x.hm.RemoveHeaders = s.redirectRemoved()
	ok := s.status >= 200 && s.status < 300
	if ok && upstreamStreams(contentType) && !h.GetEndOfStream() {
		s.sse = true
		x.hm.RemoveHeaders = contentLengthHeader
		pr.ModeOverride = modeStreamed
		if ct, ok := s.tr.(translate.StreamContentTyper); ok && ct.StreamContentType() != "" {
			l = l.add(hdrContentType, ct.StreamContentType())
		}
	} else if h.GetEndOfStream() { // no body follows (204, HEAD-like): settle now
		st := kernel.StatusCompleted
		if !ok {
			st = kernel.StatusFailed
		}
		if cost, settled := s.settle(ctx, st, s.status, kernel.Usage{}, !ok); settled {
			l = l.addUSD(hdrCost, cost)
		}
		if !ok {
			l = s.upstreamAuthNoBody(x, l) // upstream.go
			l = l.addAll(s.retryAfterFailure(ctx, s.status, nil))
		}
	}
	x.setHeaders(l)
	return pr
}

// contentLengthHeader is the RemoveHeaders of a reply removing content-length
// (shared: read-only).
var contentLengthHeader = []string{hdrContentLength}

func isEventStream(ct string) bool {
	ct, _, _ = strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(ct), "text/event-stream")
}

// --- response body ----------------------------------------------------------

func (s *stream) responseBody(ctx context.Context, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if s.own.Forwarded() != nil { // responses.go (responsesapi)
		return s.forwardedBody(ctx, b)
	}
	if !s.admitted || s.settled && !s.sse {
		return replyContinueResponseBody
	}
	body := b.GetBody()
	if s.sse {
		if s.settled { // bytes after the end (trailers already settled): pass
			return replyContinueResponseBody
		}
		s.mark(&s.report.FirstToken)
		s.own.Observe(body, true, s.status)
		out, err := s.tr.StreamChunk(body, b.GetEndOfStream())
		if err != nil {
			if out == nil {
				out = body // untranslatable: pass the bytes rather than drop them
			}
			s.streamError(err)
		}
		out = s.guardStream(ctx, out, b.GetEndOfStream()) // guard.go
		pr := replyContinueResponseBody
		if !translate.SameBytes(out, body) {
			pr = s.newChunkReply(out)
		}
		s.cacheChunk(out)
		if b.GetEndOfStream() {
			u, reported := s.tr.StreamUsage()
			cost, _ := s.settle(ctx, kernel.StatusCompleted, s.status, u, reported)
			s.cacheDone(ctx, nil, u, cost)
		} else if s.p.cp != nil {
			s.checkpoint()
		}
		return pr
	}
	// BUFFERED: the whole body, headers still held.
	pr, x := s.newResponseBodyReply()
	var kvs [4]headerKV
	var vals [64]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	var cost kernel.Money
	var settled bool
	if s.status >= 400 || s.status < 200 {
		out, status := s.upstreamError(body) // upstream.go
		if status != 0 {
			l = l.addInt(":status", int64(status))
		}
		x.c.BodyMutation = x.mutation(out)
		l = l.add(hdrContentType, "application/json")
		l = l.addInt(hdrContentLength, int64(len(out)))
		cost, settled = s.settle(ctx, kernel.StatusFailed, s.status, kernel.Usage{}, true)
		l = l.addAll(s.retryAfterFailure(ctx, s.status, body))
	} else {
		s.own.Observe(body, false, s.status)
		out, u, err := s.tr.Response(body)
		reported := err == nil
		if err != nil {
			if s.p.debug {
				s.p.log.Debug("no usage in response", "request_id", s.id, "err", err)
			}
			if out == nil {
				out = body
			}
			u = kernel.Usage{Output: translate.EstimateTokens(translate.TextBytes(body))}
		}
		out, l = s.guardReply(ctx, out, l) // guard.go
		if !translate.SameBytes(out, body) {
			x.c.BodyMutation = x.mutation(out)
			l = l.addInt(hdrContentLength, int64(len(out)))
		}
		if s.p.resp.DeferSettlement(ctx, (*ownStream)(s), &s.own, out, s.in.Stream, s.target.Deployment, s.in.Model) { // settled when a poll sees it done
			x.setHeaders(l)
			return pr
		}
		cost, settled = s.settle(ctx, kernel.StatusCompleted, s.status, u, reported)
		if reported {
			s.cacheDone(ctx, out, u, cost)
		}
	}
	if settled {
		l = l.addUSD(hdrCost, cost)
	}
	x.setHeaders(l)
	return pr
}

func (s *stream) responseTrailers(ctx context.Context) *extprocv3.ProcessingResponse {
	if s.admitted && !s.settled && s.sse {
		// The stream ended with trailers: the last body chunk had no end_of_stream.
		if _, err := s.tr.StreamChunk(nil, true); err != nil {
			s.streamError(err)
		}
		u, reported := s.tr.StreamUsage()
		cost, _ := s.settle(ctx, kernel.StatusCompleted, s.status, u, reported)
		s.cacheDone(ctx, nil, u, cost)
	}
	return replyContinueResponseTrailers
}

// streamError logs the first translation error of a stream.
func (s *stream) streamError(err error) {
	if !s.loggedErr {
		s.loggedErr = true
		s.p.log.Warn("stream translation failed", "request_id", s.id, "err", err)
	}
}

// --- settlement -------------------------------------------------------------

// finish settles a request the stream left unsettled: an abnormal end (client
// disconnect, upstream reset, stream cancelled) is charged what was observed.
func (s *stream) finish(ctx context.Context) {
	if !s.admitted || s.settled || s.isRouterTry() && s.status == 0 {
		// A router-level stream without a response: its try (if one ran)
		// holds the reservation.
		return
	}
	if s.status >= 400 || s.isTry() && s.status == 0 {
		// A try that ended without a response (connect failure, reset,
		// per-try timeout): the provider sent nothing, $0 like the data
		// plane's local 503/504 (pertry.go).
		if s.status == 0 {
			s.tryEndedUnanswered(ctx)
		}
		s.settle(ctx, kernel.StatusFailed, s.status, kernel.Usage{}, true)
		return
	}
	var u kernel.Usage
	reported := false
	if s.tr != nil && s.sse {
		u, reported = s.tr.StreamUsage()
	}
	s.settle(ctx, kernel.StatusAborted, s.status, u, reported)
}

// settle charges the request once. Without reported usage, input is estimated
// from the prompt's text (4 bytes a token; the whole body when it has no text
// the estimate can find) so an admitted request is never free.
func (s *stream) settle(ctx context.Context, st kernel.Status, httpStatus int, u kernel.Usage, reported bool) (kernel.Money, bool) {
	if !s.admitted || s.settled {
		return 0, false
	}
	s.settled = true
	s.doneRouting(u)
	if !reported && u.Input+u.CachedInput+u.CacheWrite == 0 {
		u.Input = s.inputEstimate()
	}
	rec := s.fillRecord(st, httpStatus, u)
	if s.ep.API == translate.APIPassthrough {
		s.passthroughPrice(ctx, rec) // passthrough.go
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), s.p.settleTimeout)
		defer cancel()
	}
	if s.p.obs != nil && s.report.SettleStart.IsZero() {
		s.report.SettleStart = rec.EndedAt // read just above: one clock read for both
	}
	cost, err := s.p.acct.Settle(ctx, rec)
	s.settledReport(rec, cost, err)
	if err != nil {
		s.p.log.Warn("settle failed", "request_id", s.id, "model", rec.Model, "err", err)
		return 0, false
	}
	if s.p.debug {
		s.p.log.Debug("settled", "request_id", s.id, "model", rec.Model, "deployment", rec.Deployment,
			"status", st, "http_status", httpStatus, "usage", u, "reported", reported, "cost", translate.FormatUSD(cost))
	}
	return cost, true
}

// fillRecord fills the stream's Record of its settlement.
func (s *stream) fillRecord(st kernel.Status, httpStatus int, u kernel.Usage) *Record {
	rec := &s.rec
	*rec = Record{
		RequestID:  s.id,
		Principal:  s.principal,
		CustomerID: s.customer,
		RunID:      s.runID,
		Tags:       s.tags,
		Model:      s.target.Model,
		Deployment: s.target.Deployment,
		// The name the client asked for, beside its group (an alias or a
		// pattern's match; the reply names it too).
		RequestedModel: requestedModel(s.in.Model, s.target.Model),
		Usage:          u,
		Status:         st,
		HTTPStatus:     httpStatus,
		Stream:         s.in.Stream,
		StartedAt:      s.started,
		EndedAt:        s.p.now(),
		Unpriced:       s.target.Price.Unpriced,
		Cache:          CacheRecord{Status: s.cache.status},
		Owner:          s.p.resp.Owner(&s.own, s.principal.KeyID, s.target.Deployment, s.in.Model),
	}
	if rec.RunID == "" {
		rec.RunID = s.startedRun() // runs.go: the first response of a Responses chain
	}
	s.recordUnits(rec) // units.go
	return rec
}

// --- rejections -------------------------------------------------------------

// reject answers with an error in the endpoint's shape.
func (s *stream) reject(e *translate.APIError) *extprocv3.ProcessingResponse {
	if s.p.debug {
		s.p.log.Debug("rejected", "request_id", s.id, "status", e.Status, "code", e.Code)
	}
	s.rejected(e)
	return s.immediate(e.Status, s.ep.errorBody(e), e.Headers)
}

func (s *stream) immediate(status int, body []byte, headers [][2]string) *extprocv3.ProcessingResponse {
	s.mark(&s.report.Forwarded) // answered: nothing goes upstream
	s.report.HTTPStatus = status
	x := &struct {
		pr extprocv3.ProcessingResponse
		w  extprocv3.ProcessingResponse_ImmediateResponse
		ir extprocv3.ImmediateResponse
		st typev3.HttpStatus
		hm extprocv3.HeaderMutation
	}{}
	var kvs [12]headerKV
	var vals [256]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	l = l.add(hdrContentType, "application/json")
	l = l.add(hdrRequestID, s.id)
	if s.isTry() { // the router-level stream knows a try answered
		l = l.addInt(hdrAttempts, int64(s.att.Number()))
	}
	l = l.addAll(headers)
	x.hm.SetHeaders = l.options()
	x.st.Code = typev3.StatusCode(status)
	x.ir.Status, x.ir.Headers, x.ir.Body = &x.st, &x.hm, body
	x.ir.Details = "tollgate_" + strconv.Itoa(status)
	x.w.ImmediateResponse = &x.ir
	x.pr.Response = &x.w
	return &x.pr
}

// resolveError maps a Catalog.Resolve error (translate.ErrResolve; a
// group with no deployment in rotation: translate.ErrNoDeployment).
func resolveError(id string, log *slog.Logger, model string, err error) *translate.APIError {
	notAllowed := errors.Is(err, ErrModelNotAllowed)
	if u := routing.AsUnavailable(err); u != nil && !notAllowed {
		return translate.ErrNoDeployment(model, nil, u.RetryAfter)
	}
	notFound := err == nil || errors.Is(err, ErrModelNotFound)
	if !notAllowed && !notFound {
		log.Warn("resolve failed", "request_id", id, "err", err)
	}
	return translate.ErrResolve(model, notAllowed, notFound)
}

// requestedModel is the client's model name when it is not its group's own
// ("" when it is).
func requestedModel(requested, group string) string {
	if requested == group {
		return ""
	}
	return requested
}
