package gateway_test

import (
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	collectorv1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/observe"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// otlpReceiver is an in-process OTLP/gRPC trace collector.
type otlpReceiver struct {
	collectorv1.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracev1.Span
}

func (o *otlpReceiver) Export(_ context.Context, req *collectorv1.ExportTraceServiceRequest) (*collectorv1.ExportTraceServiceResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			o.spans = append(o.spans, ss.GetSpans()...)
		}
	}
	return &collectorv1.ExportTraceServiceResponse{}, nil
}

func (o *otlpReceiver) byTrace(id []byte) []*tracev1.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracev1.Span
	for _, s := range o.spans {
		if string(s.GetTraceId()) == string(id) {
			out = append(out, s)
		}
	}
	return out
}

func startOTLP(t *testing.T) (*otlpReceiver, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rcv := &otlpReceiver{}
	srv := grpc.NewServer()
	collectorv1.RegisterTraceServiceServer(srv, rcv)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return rcv, lis.Addr().String()
}

func attrs(s *tracev1.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.GetAttributes() {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.GetKey()] = v.GetStringValue()
		default:
			m[kv.GetKey()] = strings.TrimSpace(v.String())
		}
	}
	return m
}

// One trace per request, continuing the client's: a server span with GenAI
// attributes and admission, upstream and settlement children; the upstream
// request carries the upstream span as its traceparent's parent.
func TestTracesReachAnOTLPReceiver(t *testing.T) {
	rcv, addr := startOTLP(t)
	tracing, err := observe.NewTracing(context.Background(), otlptracegrpc.WithEndpoint(addr), otlptracegrpc.WithInsecure())
	require.NoError(t, err)

	// An upstream that records the traceparent it gets.
	var mu sync.Mutex
	var upstreamTP []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upstreamTP = append(upstreamTP, r.Header.Get("traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1","object":"chat.completion","model":"traced-1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`))
	}))
	t.Cleanup(up.Close)

	st := memstore.New()
	r := startWith(t, false, st, nil, func(_ *gateway.Config, o *gateway.Options) { o.Observe.Tracing = tracing })
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, st, "traced", &store.Provider{ID: "traced", Type: store.ProviderOpenAI, BaseURL: up.URL + "/v1", Credential: sealer.Seal([]byte("sk-traced"))})
	put(t, st, "traced-1", &store.Deployment{ID: "traced-1", Provider: "traced", ProviderModel: "traced-1"})
	put(t, st, "traced", &store.ModelGroup{ID: "traced", Deployments: []string{"traced-1"}})
	put(t, st, "traced", &store.ModelPrice{ID: "traced", Price: kernel.Price{Input: kernel.Dollar, Output: kernel.Dollar}})
	key := r.key(t, "k-trace", kernel.Limits{})

	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	const clientSpan = "00f067aa0ba902b7"
	body := `{"model":"traced","messages":[{"role":"user","content":"trace me"}],"max_tokens":4}`
	eventually(t, func() bool {
		req, err := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	require.NoError(t, tracing.ForceFlush(context.Background()))

	mu.Lock()
	require.Len(t, upstreamTP, 1)
	tp := upstreamTP[0]
	mu.Unlock()
	parts := strings.Split(tp, "-")
	require.Len(t, parts, 4, tp)
	require.Equal(t, clientTrace, parts[1], "the client's trace goes on upstream")
	require.Equal(t, "01", parts[3])

	tid, err := hex.DecodeString(clientTrace)
	require.NoError(t, err)
	var spans []*tracev1.Span
	require.Eventually(t, func() bool {
		spans = rcv.byTrace(tid)
		byName := map[string]bool{}
		for _, s := range spans {
			byName[s.GetName()] = true
		}
		return byName["chat traced"] && len(spans) >= 4
	}, 10*time.Second, 20*time.Millisecond)

	// Every request of the client's trace is one server span; the retries of
	// eventually (404s while the snapshot propagates) are their own.
	var root *tracev1.Span
	for _, s := range spans {
		if s.GetName() == "chat traced" && attrs(s)["http.response.status_code"] == "int_value:200" {
			root = s
		}
	}
	require.NotNil(t, root)
	require.Equal(t, clientSpan, hex.EncodeToString(root.GetParentSpanId()))
	require.Equal(t, tracev1.Span_SPAN_KIND_SERVER, root.GetKind())
	a := attrs(root)
	require.Equal(t, "chat", a["gen_ai.operation.name"])
	require.Equal(t, "traced", a["gen_ai.request.model"])
	require.Equal(t, "traced-1", a["gen_ai.response.model"])
	require.Equal(t, "openai", a["gen_ai.provider.name"])
	require.Equal(t, "int_value:9", a["gen_ai.usage.input_tokens"])
	require.Equal(t, "int_value:4", a["gen_ai.usage.output_tokens"])
	require.Equal(t, "k-trace", a["tollgate.key_id"])

	children := map[string]*tracev1.Span{}
	for _, s := range spans {
		if string(s.GetParentSpanId()) == string(root.GetSpanId()) {
			children[s.GetName()] = s
		}
	}
	require.Len(t, children, 3, "admission, upstream, settlement")
	upSpan := children["upstream"]
	require.NotNil(t, upSpan)
	require.Equal(t, tracev1.Span_SPAN_KIND_CLIENT, upSpan.GetKind())
	require.Equal(t, parts[2], hex.EncodeToString(upSpan.GetSpanId()), "the upstream request's parent is the upstream span")
	for _, name := range []string{"admission", "settlement"} {
		s := children[name]
		require.NotNil(t, s, name)
		require.GreaterOrEqual(t, s.GetStartTimeUnixNano(), root.GetStartTimeUnixNano())
		require.LessOrEqual(t, s.GetEndTimeUnixNano(), root.GetEndTimeUnixNano())
	}
	for _, s := range spans {
		for k, v := range attrs(s) {
			require.NotContains(t, v, "trace me", "no prompt in %s", k)
			require.NotContains(t, v, "sk-traced")
		}
	}
}
