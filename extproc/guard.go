package extproc

import (
	"context"
	"net/http"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// Guardrails (guard/ implements them; the processor sees only the interfaces
// below). A request's guardrails are resolved from its key and model once
// its body is parsed:
//
//   - pre, before the model is resolved and anything admitted: a block is an
//     error in the client's translate.API shape (400 guardrail_blocked, naming the
//     guardrail and why, never the matched text) and nothing reaches the
//     provider or the accountant — a refused request costs nothing; a
//     redaction rewrites the body the provider gets.
//   - post, on a whole JSON reply (in the client's format): a block replaces
//     the reply with the error (the provider's usage is still settled);
//     a redaction rewrites it.
//   - stream, on streamed output: the text of each event (chat and
//     completions deltas, Responses output_text deltas, Anthropic text
//     deltas, Gemini parts) goes through the redactor's window; the events
//     are held until their text is final and released rewritten. Any other
//     event first releases everything held and is itself checked whole
//     (a Responses "done" event repeats the text). A block ends the stream
//     with the client format's error event and drops the rest.
//
// Every reply of a request with guardrails carries x-tollgate-guardrails
// (their names); every intervention is logged (guardrail, kind, action,
// types matched) at Info, and an external check that failed at Warn.

// GuardStage is where a guardrail runs (guard.Stage's values).
type GuardStage uint8

// Guard stages.
const (
	GuardPre GuardStage = 1 << iota
	GuardPost
	GuardStream
)

// GuardHit is one intervention: what matched, never the text
// (translate.GuardHit).
type GuardHit = translate.GuardHit

// GuardVerdict is the outcome of a request's guardrails at one stage.
type GuardVerdict struct {
	Blocked bool
	// Body is the rewritten text (nil: unchanged).
	Body []byte
	Hits []GuardHit // the block, if any, last
}

// GuardRedactor redacts streamed text through a window
// (translate.GuardRedactor).
type GuardRedactor = translate.GuardRedactor

// Guardrails are the guardrails of one request.
type Guardrails interface {
	// Names lists them, in the order they run.
	Names() []string
	// At reports whether some run at stage.
	At(stage GuardStage) bool
	// Check runs those of stage on a JSON body.
	Check(ctx context.Context, stage GuardStage, body []byte) GuardVerdict
	// Redactor returns a stream's redactor (nil: none runs on streams).
	Redactor() GuardRedactor
}

// GuardResolver finds the guardrails of a request: those of its key, user,
// team and org and of the model, nil when there are none.
type GuardResolver interface {
	Guardrails(p *Principal, model string) Guardrails
}

// WithGuardrails sets the resolver of the requests' guardrails.
func WithGuardrails(r GuardResolver) Option { return func(p *Processor) { p.guards = r } }

// hdrGuardrails lists the guardrails applied to a request.
const hdrGuardrails = "x-tollgate-guardrails"

// codeGuardrail is the error code of a blocked request.
const codeGuardrail = "guardrail_blocked"

// guardState is a stream's part in guardrails: st runs its stream
// guardrails (translate.GuardedStream), once started.
type guardState struct {
	g       Guardrails
	names   string
	st      translate.GuardedStream
	started bool
	out     []byte
}

// guardPre runs the pre guardrails on the parsed request; it returns the
// request to go on with (re-parsed when a guardrail rewrote the body), or the
// error to refuse it with.
func (s *stream) guardPre(ctx context.Context, in *translate.Inbound) (*translate.Inbound, *translate.APIError) {
	if s.p.guards == nil || s.principal == nil {
		return in, nil
	}
	g := s.p.guards.Guardrails(s.principal, in.Model)
	if g == nil {
		return in, nil
	}
	s.guard.g = g
	s.guard.names = strings.Join(g.Names(), ",")
	if !g.At(GuardPre) {
		return in, nil
	}
	v := g.Check(ctx, GuardPre, in.Body)
	s.guardLog("pre", v.Hits)
	if v.Blocked {
		h := v.Hits[len(v.Hits)-1]
		s.recordRefused(ctx, in, h.Guardrail)
		return in, s.guardError(h)
	}
	if v.Body == nil {
		return in, nil
	}
	out, err := s.ep.parse(s.path, v.Body, &s.parsed)
	if err != nil { // a webhook's rewrite the gateway cannot read
		s.p.log.Warn("guardrail rewrote the request into an unreadable body", "request_id", s.id, "err", err)
		return in, s.guardError(GuardHit{Message: "A guardrail rewrote the request into an invalid body."})
	}
	s.guard.out = v.Body // forwarded even when the translator edits nothing
	return out, nil
}

// guardDeployment prefixes the guardrail's name in a refused row's
// deployment column (the spend logs' "served by").
const guardDeployment = "guardrail:"

// recordRefused writes the $0 row of a request blocked by guardrail name
// before admission (once: not for a try of a routed request, whose router
// stream refused it first).
func (s *stream) recordRefused(ctx context.Context, in *translate.Inbound, name string) {
	if s.isTry() {
		return
	}
	s.refusedAttribution(ctx, in)
	now := s.p.now()
	rec := &Record{
		RequestID: s.id, Principal: s.principal, CustomerID: s.customer, RunID: s.runID, Tags: s.tags, Model: in.Model,
		Deployment: guardDeployment + name, Status: kernel.StatusRefused, HTTPStatus: http.StatusBadRequest,
		Stream: in.Stream, StartedAt: s.started, EndedAt: now,
	}
	if err := s.p.acct.RecordRefused(ctx, rec); err != nil {
		s.p.log.Warn("recording a refused request failed", "request_id", s.id, "guardrail", name, "err", err)
	}
}

// refusedAttribution resolves what a settled row names beyond the
// principal — the customer, the run and the tags — for the row of a request
// guardPre refused before the body's handling resolved them, so that spend
// reports by customer, run or tag count its refusals too. A run id or tags
// the request spelled wrong are left out (the row is written anyway); a
// customer is named only when the catalog knows it, as for a settled row.
func (s *stream) refusedAttribution(ctx context.Context, in *translate.Inbound) {
	if s.principal != nil {
		_, _ = s.withRun(s.principal.Scopes)
		_, _ = s.withTags(s.principal.Scopes, in.Body)
	}
	id := s.customerHdr
	if id == "" {
		id = in.User
	}
	if id != "" {
		if _, ok := s.p.cat.Customer(ctx, id); ok {
			s.customer = id
		}
	}
}

// guardBody is the body to forward when the translator left it as is: the
// redacted one when a guardrail rewrote it.
func (s *stream) guardBody(b []byte) []byte {
	if b == nil && s.guard.out != nil {
		return s.guard.out
	}
	return b
}

func (s *stream) guardError(h GuardHit) *translate.APIError {
	e := &translate.APIError{Status: http.StatusBadRequest, Type: translate.TypeInvalidRequest, Code: codeGuardrail, Message: h.Message}
	if s.guard.names != "" {
		e.Headers = [][2]string{{hdrGuardrails, s.guard.names}}
	}
	return e
}

// guardHeaders adds x-tollgate-guardrails to a reply's headers.
func (s *stream) guardHeaders(l headerList) headerList {
	if s.guard.names == "" {
		return l
	}
	return l.add(hdrGuardrails, s.guard.names)
}

// GuardReport is one intervention as an Observer sees it.
type GuardReport struct {
	Guardrail, Kind, Action, Stage string
	Failed                         bool // an external check failed
}

// guardLog writes one audit line per intervention, and reports it.
func (s *stream) guardLog(stage string, hits []GuardHit) {
	for _, h := range hits {
		if s.p.obs != nil {
			s.report.Guardrails = append(s.report.Guardrails, GuardReport{Guardrail: h.Guardrail, Kind: h.Kind, Action: h.Action, Stage: stage, Failed: h.Failed})
		}
		if h.Failed {
			s.p.log.Warn("guardrail check failed", "request_id", s.id, "stage", stage, "guardrail", h.Guardrail,
				"kind", h.Kind, "action", h.Action, "reason", h.Reason)
			continue
		}
		s.p.log.Info("guardrail", "request_id", s.id, "stage", stage, "guardrail", h.Guardrail,
			"kind", h.Kind, "action", h.Action, "types", h.Types)
	}
}

// guardReply runs the post guardrails on a whole reply in the client's
// format; a block turns it into the error (status in l).
func (s *stream) guardReply(ctx context.Context, out []byte, l headerList) ([]byte, headerList) {
	l = s.guardHeaders(l)
	if s.guard.g == nil || !s.guard.g.At(GuardPost) {
		return out, l
	}
	v := s.guard.g.Check(ctx, GuardPost, out)
	s.guardLog("post", v.Hits)
	if v.Blocked {
		e := s.guardError(v.Hits[len(v.Hits)-1])
		l = l.addInt(":status", int64(e.Status))
		l = l.add(hdrContentType, "application/json")
		return s.ep.errorBody(e), l
	}
	if v.Body != nil {
		return v.Body, l
	}
	return out, l
}

// guardStream passes a translated stream chunk (client format, split
// anywhere) through the stream guardrails; it returns what to send.
func (s *stream) guardStream(ctx context.Context, out []byte, eos bool) []byte {
	gs := &s.guard
	if gs.g == nil {
		return out
	}
	if !gs.started {
		if !gs.g.At(GuardStream) || s.in.API == translate.APIGeminiGenerate && !strings.Contains(s.in.Path, "alt=sse") {
			// Nothing to do, or a Gemini JSON-array stream (not SSE): passed.
			gs.g = nil // nothing to do on this stream
			return out
		}
		gs.started = true
		gs.st = translate.GuardedStream{API: s.in.API, Red: gs.g.Redactor(), Check: s.guardCheck, Log: s.guardLogStream, Block: s.guardBlockEvent}
	}
	dst, err := gs.st.Feed(ctx, out, eos)
	if err != nil {
		s.streamError(err)
	}
	return dst
}

// guardCheck runs the stream guardrails on one whole event's data.
func (s *stream) guardCheck(ctx context.Context, data []byte) (*GuardHit, []byte) {
	v := s.guard.g.Check(ctx, GuardStream, data)
	s.guardLog("stream", v.Hits)
	if v.Blocked {
		return &v.Hits[len(v.Hits)-1], nil
	}
	return nil, v.Body
}

func (s *stream) guardLogStream(hits []GuardHit) { s.guardLog("stream", hits) }

// guardBlockEvent is the client format's error event ending a blocked stream.
func (s *stream) guardBlockEvent(h GuardHit) []byte {
	return translate.ErrorEvent(s.in.API, s.in.Path, s.tr, s.guardError(h))
}
