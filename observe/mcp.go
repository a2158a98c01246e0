package observe

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
)

// MCP reports the MCP gateway's requests: one access-log line per request
// (message "mcp"; arguments are never logged, only their size), the OTel
// MCP semantic conventions' mcp.server.operation.duration as a Prometheus
// histogram, Tollgate's tool-call counters, and a span per request named
// "{mcp.method.name} {gen_ai.tool.name}".
type MCP struct {
	log      *slog.Logger
	on       bool
	duration *prometheus.HistogramVec
	calls    *prometheus.CounterVec
	cost     *prometheus.CounterVec
	tracer   trace.Tracer
}

var _ mcp.Observer = (*MCP)(nil)

// NewMCP reports to log, to m's registry when m is not nil and to t's
// tracer when t is not nil.
func NewMCP(ctx context.Context, log *slog.Logger, m *Metrics, t *Tracing) *MCP {
	o := &MCP{log: log, on: log.Enabled(ctx, slog.LevelInfo)}
	if m != nil {
		o.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcp_server_operation_duration_seconds",
			Help:    "Duration of MCP requests the gateway served (OTel mcp.server.operation.duration), by mcp_method_name, gen_ai_tool_name and error_type.",
			Buckets: durationBuckets,
		}, []string{"mcp_method_name", "gen_ai_tool_name", "error_type"})
		o.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_mcp_tool_calls_total",
			Help: "tools/call requests by MCP server, tool (upstream name) and outcome (ok, refused, failed).",
		}, []string{"server", "tool", "outcome"})
		o.cost = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_mcp_tool_cost_usd_total",
			Help: "Cost charged for tool calls, by MCP server and tool.",
		}, []string{"server", "tool"})
		m.reg.MustRegister(o.duration, o.calls, o.cost)
	}
	if t != nil {
		o.tracer = t.tracer
	}
	return o
}

// Observe implements mcp.Observer.
func (o *MCP) Observe(ctx context.Context, ev *mcp.Event) {
	errType := errorType(ev.Err)
	if o.duration != nil {
		o.duration.WithLabelValues(ev.Method, ev.Tool, errType).Observe(ev.Duration.Seconds())
		if ev.Method == "tools/call" && ev.Server != "" {
			outcome := "ok"
			switch {
			case ev.Call == nil || !ev.Call.Admitted:
				outcome = "refused" // not granted, or admission said no
			case ev.Err != nil:
				outcome = "failed"
			}
			o.calls.WithLabelValues(ev.Server, ev.Tool, outcome).Inc()
			if ev.Cost > 0 {
				o.cost.WithLabelValues(ev.Server, ev.Tool).Add(float64(ev.Cost) / float64(kernel.Dollar))
			}
		}
	}
	if o.tracer != nil {
		o.span(ctx, ev, errType)
	}
	if o.on {
		o.accessLine(ctx, ev, errType)
	}
}

func (o *MCP) span(ctx context.Context, ev *mcp.Event, errType string) {
	name := ev.Method
	if ev.Tool != "" {
		name += " " + ev.Tool
	}
	end := time.Now()
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", ev.Method),
		attribute.String("mcp.protocol.version", ev.ProtocolVersion),
		attribute.String("network.transport", "tcp"),
	}
	if ev.Tool != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", ev.Tool), attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	if ev.Server != "" {
		attrs = append(attrs, attribute.String("tollgate.mcp.server", ev.Server))
	}
	if ev.Caller != nil {
		attrs = append(attrs, attribute.String("tollgate.key.id", ev.Caller.KeyID))
	}
	_, sp := o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(end.Add(-ev.Duration)), trace.WithAttributes(attrs...))
	if ev.Err != nil {
		sp.SetAttributes(attribute.String("error.type", errType))
		sp.SetStatus(codes.Error, errType)
	}
	sp.End(trace.WithTimestamp(end))
}

func (o *MCP) accessLine(ctx context.Context, ev *mcp.Event, errType string) {
	attrs := []slog.Attr{
		slog.String("method", ev.Method),
		slog.String("protocol", ev.ProtocolVersion),
		slog.String("server", ev.Server),
		slog.String("tool", ev.Tool),
		slog.String("error_type", errType),
		slog.Int64("latency_ms", ev.Duration.Milliseconds()),
	}
	if c := ev.Caller; c != nil {
		attrs = append(attrs, slog.String("key_id", c.KeyID), slog.String("team", c.TeamID))
	}
	if c := ev.Call; c != nil {
		attrs = append(attrs,
			slog.String("request_id", c.RequestID),
			slog.Bool("ran", c.Ran),
			slog.Int("arg_bytes", c.ArgBytes),
			slog.String("cost_usd", ev.Cost.String()))
	}
	o.log.LogAttrs(ctx, slog.LevelInfo, "mcp", attrs...)
}

// errorType is the JSON-RPC error code of err ("" for none, "_OTHER" for an
// error without one).
func errorType(err error) string {
	if err == nil {
		return ""
	}
	var w *jsonrpc.Error
	if errors.As(err, &w) {
		return strconv.FormatInt(w.Code, 10)
	}
	return "_OTHER"
}
