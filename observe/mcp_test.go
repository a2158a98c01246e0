package observe

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
)

func TestMCPObserver(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	m := NewMetrics()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	o := NewMCP(context.Background(), log, m, &Tracing{tp: tp, tracer: tp.Tracer("test")})
	caller := &mcp.Caller{KeyID: "k1", TeamID: "eng"}

	ok := &mcp.Call{RequestID: "mcp-1", Caller: caller, Server: "github", Tool: "search", Admitted: true, Ran: true, ArgBytes: 42}
	o.Observe(context.Background(), &mcp.Event{
		Method: "tools/call", ProtocolVersion: "2026-07-28", Server: "github", Tool: "search",
		Caller: caller, Call: ok, Cost: kernel.Cent, Duration: 30 * time.Millisecond,
	})
	refused := &mcp.Call{RequestID: "mcp-2", Caller: caller, Server: "github", Tool: "search"}
	o.Observe(context.Background(), &mcp.Event{
		Method: "tools/call", Server: "github", Tool: "search", Caller: caller, Call: refused,
		Err: &jsonrpc.Error{Code: mcp.CodeBudgetExceeded, Message: "budget exceeded"},
	})
	o.Observe(context.Background(), &mcp.Event{
		Method: "tools/call", Server: "github", Tool: "create_issue", Caller: caller,
		Err: &jsonrpc.Error{Code: mcp.CodeToolNotGranted, Message: "not granted"},
	})
	o.Observe(context.Background(), &mcp.Event{Method: "tools/list", Caller: caller})

	value := func(c prometheus.Counter) float64 {
		var d dto.Metric
		require.NoError(t, c.Write(&d))
		return d.GetCounter().GetValue()
	}
	require.InDelta(t, 1, value(o.calls.WithLabelValues("github", "search", "ok")), 0)
	require.InDelta(t, 1, value(o.calls.WithLabelValues("github", "search", "refused")), 0)
	require.InDelta(t, 1, value(o.calls.WithLabelValues("github", "create_issue", "refused")), 0)
	require.InDelta(t, 0.01, value(o.cost.WithLabelValues("github", "search")), 1e-12)
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	var observed uint64
	for _, f := range families {
		if f.GetName() == "mcp_server_operation_duration_seconds" {
			for _, mm := range f.GetMetric() {
				observed += mm.GetHistogram().GetSampleCount()
			}
		}
	}
	require.Equal(t, uint64(4), observed)

	spans := exp.GetSpans()
	require.Len(t, spans, 4)
	require.Equal(t, "tools/call search", spans[0].Name)
	attrs := map[attribute.Key]string{}
	for _, a := range spans[0].Attributes {
		attrs[a.Key] = a.Value.AsString()
	}
	require.Equal(t, "tools/call", attrs["mcp.method.name"])
	require.Equal(t, "search", attrs["gen_ai.tool.name"])
	require.Equal(t, "2026-07-28", attrs["mcp.protocol.version"])
	require.Equal(t, "tools/list", spans[3].Name)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 4, "one access-log line per request")
	require.Contains(t, lines[0], "msg=mcp")
	require.Contains(t, lines[0], "key_id=k1")
	require.Contains(t, lines[0], "arg_bytes=42")
	require.Contains(t, lines[0], "cost_usd=0.01")
	require.Contains(t, lines[1], "error_type=-32043")
}
