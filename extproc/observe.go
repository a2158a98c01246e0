package extproc

import (
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// Observer is told about every request the processor handled, once, when its
// stream ends: metrics, the access log and traces are built from it
// (observe/). Observe runs on the request's goroutine: it must not block, and
// must not keep r nor its Tries past the call: the request's state is pooled,
// zeroed and reused once its stream ended (replies.go).
type Observer interface {
	Observe(r *Report)
}

// Tracer, when the Observer also implements it, chooses the W3C traceparent
// the upstream request carries: the processor sets it as a request header when
// the request is admitted (header mutation). clientTraceparent is the one the
// client sent ("" for none); the tracer records the ids it chose in r.Trace.
type Tracer interface {
	UpstreamTraceparent(r *Report) string
}

// Report is what the processor observed of one request, from its headers to
// the end of its stream. It never holds a secret: the key is its id, the
// target's credential is not read.
type Report struct {
	RequestID string
	// API is the client API (APIChat, APIMessages, …); "" when the path is
	// not one the processor serves or the request has no body (GET /v1/models).
	API  translate.API
	Path string
	// Principal is the authenticated key, nil before authentication.
	Principal *Principal
	// Model is the model the client asked for ("" before the body was read).
	Model string
	// Target is the deployment the request went to, nil when none was chosen.
	Target     *translate.Target
	CustomerID string
	Stream     bool

	// Cache is the response cache's part of the request (settled requests).
	Cache CacheRecord

	// HTTPStatus is the status the client got (0: the stream ended first).
	HTTPStatus int
	// ErrorType is "" for a 2xx, the error code the client saw for a refusal
	// (rate_limit_exceeded, budget_exceeded, model_not_allowed, …), or
	// "upstream_error" for an upstream non-2xx, "aborted" for a stream that
	// ended before its response did.
	ErrorType string
	// Admitted: a reservation was made; Settled: its settlement was recorded
	// (Usage, Cost and Status are then the ledger's).
	Admitted, Settled bool
	Status            kernel.Status
	Usage             kernel.Usage
	Cost              kernel.Money
	// Attempts is the number of upstream requests made (0: none).
	Attempts int
	// Tries are the upstream attempts in order, recorded when an Observer is
	// set (len(Tries) == Attempts); each retry is a try after the first.
	Tries []Try
	// FallbackFrom is the model group the client asked for when the request
	// was admitted on one of its fallback groups ("" otherwise);
	// FallbackReason is why the last group was left: FallbackCooldown (no
	// deployment in rotation) or FallbackRateLimited (every deployment's
	// rpm/tpm quota full).
	FallbackFrom, FallbackReason string
	// RetryOf is the failed attempt this request's attempt retries (its
	// group, deployment and status; Sent is zero): a retry the data plane
	// carried out. Nil for a first attempt.
	RetryOf *Try
	// Retried: this attempt (its last try) failed and the data plane's
	// retry policy sends the request on (per-try routing, where the
	// retrying try cannot know which try failed before it).
	Retried bool

	// Times on the processor's clock; zero when the step did not happen.
	Started     time.Time // request headers received
	AdmitStart  time.Time // request body received, admission starts
	Forwarded   time.Time // request released upstream, or answered by the gateway
	FirstByte   time.Time // upstream response headers
	FirstToken  time.Time // first streamed response chunk
	SettleStart time.Time
	Ended       time.Time // stream ended (after settlement)

	// Guardrails are the guardrails' interventions (guard.go).
	Guardrails []GuardReport

	// ClientTraceparent is the client's traceparent header ("" for none).
	ClientTraceparent string
	// Trace holds the ids a Tracer chose for the request's spans.
	Trace TraceIDs

	tries [2]Try // Tries' backing array: no allocation up to one retry
}

// Try is one upstream attempt of a request.
type Try struct {
	Group, Deployment string    // the attempt's model group and deployment
	Sent              time.Time // when the attempt was released upstream
	// Status is the attempt's response status: 0 when none came (the
	// stream ended first).
	Status int
	// Span is the attempt's span id, chosen by a Tracer: the parent in the
	// traceparent the attempt was sent with (zero without a Tracer).
	Span [8]byte
}

// TraceIDs are the ids of a request's trace, chosen when the request is
// admitted so the upstream request can carry its span's id.
type TraceIDs struct {
	TraceID  [16]byte
	Root     [8]byte // the request's span
	Upstream [8]byte // the upstream attempt's span
	Sampled  bool
}

// WithObserver reports every request to o (default: none).
func WithObserver(o Observer) Option {
	return func(p *Processor) {
		p.obs = o
		p.tracer, _ = o.(Tracer)
	}
}

// hdrTraceparent is the W3C Trace Context header.
const hdrTraceparent = "traceparent"

// mark sets *t to now when the processor reports requests.
func (s *stream) mark(t *time.Time) {
	if s.p.obs != nil && t.IsZero() {
		*t = s.p.now()
	}
}

// traceHeader adds the upstream traceparent to an admitted request's headers
// when a Tracer is configured.
func (s *stream) traceHeader(l headerList) headerList {
	s.mark(&s.report.Forwarded)
	s.report.Attempts++
	s.addTry()
	if s.p.tracer == nil {
		return l
	}
	s.fillReport()
	if tp := s.p.tracer.UpstreamTraceparent(&s.report); tp != "" {
		l = l.add(hdrTraceparent, tp)
	}
	return l
}

// addTry records an attempt about to be sent to s.target (a retry closes the
// previous one with the status it ended on).
func (s *stream) addTry() {
	if s.p.obs == nil || s.target == nil {
		return
	}
	r := &s.report
	if r.Tries == nil {
		r.Tries = r.tries[:0]
	}
	sent := r.Forwarded // the first try leaves when the request does: no second clock read
	if n := len(r.Tries); n > 0 {
		r.Tries[n-1].Status = s.status
		sent = time.Time{}
	}
	if sent.IsZero() {
		sent = s.p.now()
	}
	r.Tries = append(r.Tries, Try{Group: s.target.Model, Deployment: s.target.Deployment, Sent: sent})
}

// fillReport copies the stream's state into its report.
func (s *stream) fillReport() {
	r := &s.report
	r.RequestID, r.Path, r.Principal, r.Target, r.CustomerID = s.id, s.path, s.principal, s.target, s.customer
	r.Started, r.Admitted = s.started, s.admitted
	if s.ep != nil {
		r.API = s.ep.API
	}
	if s.in != nil {
		r.Model, r.Stream = s.in.Model, s.in.Stream
	}
	if a := &s.att; a.N > 1 && len(a.Avoid) > 0 {
		r.RetryOf = &Try{Group: a.FailedGroup, Deployment: a.Avoid[len(a.Avoid)-1], Status: a.FailedStatus}
		if s.admitted && s.in != nil && a.Group != "" && a.Group != a.FailedGroup {
			r.FallbackFrom, r.FallbackReason = a.FailedGroup, a.Why
		}
	}
	if s.rt != nil && s.admitted {
		// Admitted past the requested group: on a fallback group (resolve
		// keeps only the requested one when it serves the request itself).
		if from, why := s.rt.FallbackReason(); from != "" {
			r.FallbackFrom, r.FallbackReason = from, why
			s.tryFallbackReason(r)
		}
	}
	r.Retried = s.try != nil && s.try.Retried
}

// rejected records the error a request was refused with.
func (s *stream) rejected(e *translate.APIError) { s.report.ErrorType = e.Code }

// settled records a settlement's outcome.
func (s *stream) settledReport(rec *Record, cost kernel.Money, err error) {
	if s.p.obs == nil || err != nil {
		return
	}
	r := &s.report
	r.Settled, r.Status, r.Usage, r.Cost = true, rec.Status, rec.Usage, cost
	r.Cache = rec.Cache
}

// observed reports the finished request; called once, when the stream ends.
func (s *stream) observed() {
	if s.p.obs == nil || s.id == "" || s.try != nil && s.try.Owned || s.mcpReq != nil {
		// A router-level stream whose try reported the request; an MCP
		// request, which the MCP observer reports (endpoints.go).
		return
	}
	s.fillReport()
	r := &s.report
	if r.HTTPStatus == 0 {
		r.HTTPStatus = s.status
	}
	if n := len(r.Tries); n > 0 {
		r.Tries[n-1].Status = s.status
	}
	if r.ErrorType == "" {
		switch {
		case r.Settled && r.Status == kernel.StatusAborted, s.admitted && !r.Settled && s.status == 0:
			r.ErrorType = "aborted"
		case r.HTTPStatus >= 400 || r.HTTPStatus != 0 && r.HTTPStatus < 200:
			r.ErrorType = "upstream_error"
		}
	}
	r.Ended = s.p.now()
	s.p.obs.Observe(r)
}

// SetServing sets what the processor's gRPC health service reports for the
// whole server and the ext_proc service: SERVING when the gateway behind it
// is ready, NOT_SERVING when not (observe's readiness checks drive it).
func (p *Processor) SetServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	p.health.SetServingStatus("", st)
	p.health.SetServingStatus(extprocv3.ExternalProcessor_ServiceDesc.ServiceName, st)
}
