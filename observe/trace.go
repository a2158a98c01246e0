package observe

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-ai/tollgate/extproc"
)

// TracingEnabled reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_TRACES_EXPORTER is not "none"
// and OTEL_SDK_DISABLED is not "true".
func TracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Tracing makes one OpenTelemetry trace per request, exported over OTLP/gRPC:
// a server span for the request with GenAI attributes, and child spans for
// admission, the upstream attempt and settlement. Spans are made when the
// request ends, with the times the processor recorded; the upstream
// attempt's span id is chosen at admission so the upstream request carries it
// in its traceparent. Prompts and completions are never recorded.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

var (
	_ extproc.Observer = (*Tracing)(nil)
	_ extproc.Tracer   = (*Tracing)(nil)
)

// NewTracing starts an OTLP/gRPC exporter configured by the standard OTEL_*
// variables (endpoint, headers, TLS, timeouts, OTEL_BSP_* batching,
// OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
// Shutdown flushes it.
func NewTracing(ctx context.Context, opts ...otlptracegrpc.Option) (*Tracing, error) {
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("observe: otlp exporter: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(attribute.String("service.name", "tollgate")), resource.Environment())
	if err != nil {
		res = resource.Default()
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(presetIDs{}),
	)
	return &Tracing{tp: tp, tracer: tp.Tracer("github.com/tollgate-ai/tollgate/observe")}, nil
}

// Shutdown exports what is buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// ForceFlush exports what is buffered.
func (t *Tracing) ForceFlush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }

// UpstreamTraceparent implements extproc.Tracer: the client's trace goes on
// (a new one starts when the client sent none), and the upstream request's
// parent is the upstream attempt's span.
func (t *Tracing) UpstreamTraceparent(r *extproc.Report) string {
	chooseIDs(r)
	span := r.Trace.Upstream
	if n := len(r.Tries); n > 0 {
		// Each attempt is its own span: the first has the id chosen with the
		// trace, a retry a new one.
		try := &r.Tries[n-1]
		if try.Span == ([8]byte{}) {
			try.Span = span
			if n > 1 {
				try.Span = newSpanID()
			}
		}
		span = try.Span
	}
	flags := "00"
	if r.Trace.Sampled {
		flags = "01"
	}
	var b [55]byte
	n := copy(b[:], "00-")
	n += hex.Encode(b[n:], r.Trace.TraceID[:])
	b[n] = '-'
	n++
	n += hex.Encode(b[n:], span[:])
	b[n] = '-'
	n++
	copy(b[n:], flags)
	return string(b[:])
}

// chooseIDs picks the request's trace ids once.
func chooseIDs(r *extproc.Report) {
	if r.Trace.Root != ([8]byte{}) {
		return
	}
	if sc, ok := parseTraceparent(r.ClientTraceparent); ok {
		r.Trace.TraceID, r.Trace.Sampled = sc.TraceID(), sc.IsSampled()
	} else {
		r.Trace.TraceID, r.Trace.Sampled = newTraceID(), true
	}
	r.Trace.Root, r.Trace.Upstream = newSpanID(), newSpanID()
}

// Observe implements extproc.Observer: it makes the request's spans.
func (t *Tracing) Observe(r *extproc.Report) {
	chooseIDs(r)
	ctx := context.Background()
	if sc, ok := parseTraceparent(r.ClientTraceparent); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	} else {
		ctx = context.WithValue(ctx, traceIDKey{}, trace.TraceID(r.Trace.TraceID))
	}
	op := operationName(r.API)
	name := op
	if r.Model != "" {
		name = strings.TrimSpace(op + " " + r.Model)
	}
	if name == "" {
		name = "request"
	}
	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs,
		attribute.String("tollgate.request_id", r.RequestID),
		attribute.String("url.path", pathOnly(r.Path)),
		attribute.Int("http.response.status_code", r.HTTPStatus),
	)
	if op != "" {
		attrs = append(attrs, attribute.String("gen_ai.operation.name", op))
	}
	if r.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", r.Model))
	}
	if p := r.Principal; p != nil {
		attrs = append(attrs, attribute.String("tollgate.key_id", p.KeyID))
		if p.TeamID != "" {
			attrs = append(attrs, attribute.String("tollgate.team", p.TeamID))
		}
	}
	if tg := r.Target; tg != nil {
		attrs = append(attrs,
			attribute.String("gen_ai.provider.name", providerName(tg.Provider)),
			attribute.String("gen_ai.response.model", tg.ProviderModel),
			attribute.String("tollgate.model_group", tg.Model),
			attribute.String("tollgate.deployment", tg.Deployment),
		)
	}
	if r.Settled {
		attrs = append(attrs,
			attribute.Int64("gen_ai.usage.input_tokens", r.Usage.Input+r.Usage.CachedInput+r.Usage.CacheWrite),
			attribute.Int64("gen_ai.usage.output_tokens", r.Usage.Output),
			attribute.String("tollgate.cost_usd", r.Cost.String()),
		)
	}
	if r.ErrorType != "" {
		attrs = append(attrs, attribute.String("error.type", r.ErrorType))
	}
	if r.Stream {
		attrs = append(attrs, attribute.Bool("gen_ai.request.stream", true))
	}
	ctx, root := t.tracer.Start(withSpanID(ctx, r.Trace.Root), name,
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(r.Started), trace.WithAttributes(attrs...))
	if r.ErrorType != "" {
		root.SetStatus(codes.Error, r.ErrorType)
	}
	end := r.Ended
	if !r.AdmitStart.IsZero() {
		admitEnd := firstSet(r.Forwarded, r.SettleStart, end)
		_, s := t.tracer.Start(withSpanID(ctx, newSpanID()), "admission", trace.WithTimestamp(r.AdmitStart))
		if !r.Admitted {
			s.SetStatus(codes.Error, r.ErrorType)
		}
		s.End(trace.WithTimestamp(admitEnd))
	}
	for i := range r.Tries {
		t.attemptSpan(ctx, r, i, end)
	}
	if !r.SettleStart.IsZero() {
		_, s := t.tracer.Start(withSpanID(ctx, newSpanID()), "settlement", trace.WithTimestamp(r.SettleStart))
		if !r.Settled {
			s.SetStatus(codes.Error, "settlement failed")
		}
		s.End(trace.WithTimestamp(end))
	}
	root.End(trace.WithTimestamp(end))
}

// attemptSpan makes the upstream span of r's attempt i (one per attempt: a
// retry is a sibling of the attempt it follows), ending when the next
// attempt starts or, for the last, when settlement starts.
func (t *Tracing) attemptSpan(ctx context.Context, r *extproc.Report, i int, end time.Time) {
	try := &r.Tries[i]
	id := try.Span
	if id == ([8]byte{}) {
		id = newSpanID()
		if i == 0 {
			id = r.Trace.Upstream
		}
	}
	last := i == len(r.Tries)-1
	attrs := []attribute.KeyValue{
		attribute.Int("tollgate.attempt", i+1),
		attribute.String("tollgate.deployment", try.Deployment),
		attribute.String("tollgate.model_group", try.Group),
	}
	if try.Status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", try.Status))
	}
	_, s := t.tracer.Start(withSpanID(ctx, id), "upstream", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(try.Sent), trace.WithAttributes(attrs...))
	switch {
	case !last:
		s.SetStatus(codes.Error, retryReason(try.Status))
		s.End(trace.WithTimestamp(r.Tries[i+1].Sent))
		return
	case !r.FirstByte.IsZero() && !r.FirstByte.Before(try.Sent):
		s.AddEvent("response headers", trace.WithTimestamp(r.FirstByte))
	}
	if r.ErrorType != "" && r.Admitted {
		s.SetStatus(codes.Error, r.ErrorType)
	}
	s.End(trace.WithTimestamp(firstSet(r.SettleStart, end)))
}

func firstSet(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func pathOnly(p string) string {
	p, _, _ = strings.Cut(p, "?")
	return p
}

// parseTraceparent reads a W3C traceparent (version 00, or a later version
// read as 00 per the spec).
func parseTraceparent(s string) (trace.SpanContext, bool) {
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" || s[:2] == "00" && len(s) != 55 {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(s[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(s[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	var fl [1]byte
	if _, err := hex.Decode(fl[:], []byte(s[53:55])); err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(fl[0]) & trace.FlagsSampled, Remote: true,
	})
	return sc, sc.IsValid()
}

func newTraceID() [16]byte {
	var b [16]byte
	for b == ([16]byte{}) {
		putUint64(b[:8], rand.Uint64())
		putUint64(b[8:], rand.Uint64())
	}
	return b
}

func newSpanID() [8]byte {
	var b [8]byte
	for b == ([8]byte{}) {
		putUint64(b[:], rand.Uint64())
	}
	return b
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}

// presetIDs is the SDK's IDGenerator: it gives a span the id the context
// carries (withSpanID), so spans made after the fact keep the ids the
// upstream request was sent with.
type presetIDs struct{}

type spanIDKey struct{}

func withSpanID(ctx context.Context, id [8]byte) context.Context {
	return context.WithValue(ctx, spanIDKey{}, trace.SpanID(id))
}

func (presetIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	// A root span: its trace id is the one chosen at admission, carried as
	// the parent's (the only root is the request's, made under a context
	// without a parent only when the client sent no traceparent).
	tid, _ := ctx.Value(traceIDKey{}).(trace.TraceID)
	if !tid.IsValid() {
		tid = newTraceID()
	}
	return tid, presetIDs{}.NewSpanID(ctx, tid)
}

func (presetIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if id, ok := ctx.Value(spanIDKey{}).(trace.SpanID); ok && id.IsValid() {
		return id
	}
	return newSpanID()
}

type traceIDKey struct{}
