package extproc

import (
	"bytes"
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

// GuardHit is one intervention: what matched, never the text.
type GuardHit struct {
	Guardrail string
	Kind      string
	Action    string // block, redact, log
	Types     []string
	Reason    string
	Failed    bool // an external check failed (Action says what was done)
	Message   string
}

// GuardVerdict is the outcome of a request's guardrails at one stage.
type GuardVerdict struct {
	Blocked bool
	// Body is the rewritten text (nil: unchanged).
	Body []byte
	Hits []GuardHit // the block, if any, last
}

// GuardRedactor redacts streamed text, one segment per event (the raw
// content of its JSON string), holding back a bounded window.
type GuardRedactor interface {
	// Push adds a segment; it returns the segments now final, oldest first,
	// or the block that ends the stream.
	Push(seg []byte) ([][]byte, *GuardHit)
	// Flush releases everything held.
	Flush() ([][]byte, *GuardHit)
	// Hits are the interventions so far.
	Hits() []GuardHit
}

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

// guardState is a stream's part in guardrails.
type guardState struct {
	g       Guardrails
	names   string
	red     GuardRedactor
	sse     translate.SSEParser
	held    []heldEvent
	out     []byte
	blocked bool
	logged  int // redactor hits logged
}

// heldEvent is an event whose text is in the redactor's window: the event
// as it will be written, around its text.
type heldEvent struct {
	name       string
	before     []byte // data up to the text
	after      []byte // data after it
	hasSegment bool
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
	if gs.red == nil {
		if !gs.g.At(GuardStream) || s.in.API == translate.APIGeminiGenerate && !strings.Contains(s.in.Path, "alt=sse") {
			// Nothing to do, or a Gemini JSON-array stream (not SSE): passed.
			gs.g = nil // nothing to do on this stream
			return out
		}
		gs.red = gs.g.Redactor()
	}
	if gs.blocked {
		return []byte{}
	}
	var dst []byte
	feed := func(ev translate.SSEEvent) {
		if !gs.blocked {
			dst = s.guardEvent(ctx, dst, ev)
		}
	}
	err := gs.sse.Feed(out, feed)
	if err == nil && eos {
		err = gs.sse.Flush(feed)
		if !gs.blocked {
			dst = s.guardRelease(dst, true)
		}
	}
	if err != nil && !gs.blocked {
		s.streamError(err)
		gs.blocked = true
		dst = append(dst, translate.ErrorEvent(s.in.API, s.in.Path, s.tr, s.guardError(GuardHit{Message: "The stream could not be checked by its guardrails."}))...)
	}
	if dst == nil {
		dst = []byte{}
	}
	return dst
}

// guardEvent takes one event of the client's stream.
func (s *stream) guardEvent(ctx context.Context, dst []byte, ev translate.SSEEvent) []byte {
	gs := &s.guard
	txt, ok := translate.StreamText(s.in.API, ev.Data)
	if !ok || gs.red == nil {
		dst = s.guardRelease(dst, true)
		if gs.blocked {
			return dst
		}
		data := ev.Data
		if bytes.HasPrefix(data, []byte("{")) {
			v := gs.g.Check(ctx, GuardStream, data)
			s.guardLog("stream", v.Hits)
			if v.Blocked {
				return s.guardBlock(dst, v.Hits[len(v.Hits)-1])
			}
			if v.Body != nil {
				data = v.Body
			}
		}
		return translate.AppendSSEEvent(dst, string(ev.Event), data)
	}
	gs.held = append(gs.held, heldEvent{
		name: string(ev.Event), hasSegment: true,
		before: append([]byte(nil), ev.Data[:txt.Start]...), after: append([]byte(nil), ev.Data[txt.End:]...),
	})
	segs, blk := gs.red.Push(ev.Data[txt.Start:txt.End])
	if blk != nil {
		return s.guardBlock(dst, *blk)
	}
	return s.guardEmit(dst, segs)
}

// guardRelease releases what the redactor holds (all: the stream ended or a
// non-text event came).
func (s *stream) guardRelease(dst []byte, all bool) []byte {
	gs := &s.guard
	if gs.red == nil || len(gs.held) == 0 || !all {
		return dst
	}
	segs, blk := gs.red.Flush()
	if blk != nil {
		return s.guardBlock(dst, *blk)
	}
	return s.guardEmit(dst, segs)
}

// guardEmit writes the first len(segs) held events with their final text.
func (s *stream) guardEmit(dst []byte, segs [][]byte) []byte {
	gs := &s.guard
	for i, seg := range segs {
		h := gs.held[i]
		data := make([]byte, 0, len(h.before)+len(seg)+len(h.after))
		data = append(append(append(data, h.before...), seg...), h.after...)
		dst = translate.AppendSSEEvent(dst, h.name, data)
	}
	gs.held = append(gs.held[:0], gs.held[len(segs):]...)
	if hits := gs.red.Hits(); len(hits) > gs.logged {
		s.guardLog("stream", hits[gs.logged:])
		gs.logged = len(hits)
	}
	return dst
}

// guardBlock ends the stream with the error event.
func (s *stream) guardBlock(dst []byte, h GuardHit) []byte {
	s.guard.blocked = true
	s.guard.held = nil
	s.guardLog("stream", []GuardHit{h})
	return append(dst, translate.ErrorEvent(s.in.API, s.in.Path, s.tr, s.guardError(h))...)
}
