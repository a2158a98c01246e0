package observe

import (
	"context"
	"encoding/hex"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tollgate-ai/tollgate/extproc"
)

// retriedReport is a request sent three times: a 429 on a, a 503 on b, then
// a 200 on c, admitted on the fallback group "backup" of "main".
func retriedReport(t0 time.Time) *extproc.Report {
	r := &extproc.Report{
		API: extproc.APIChat, Model: "main", HTTPStatus: 200, Attempts: 3, Admitted: true,
		Target:       &extproc.Target{Model: "backup", Deployment: "c", Provider: extproc.ProviderOpenAI, ProviderModel: "m"},
		FallbackFrom: "main", FallbackReason: extproc.FallbackCooldown,
		Started: t0, AdmitStart: t0, Forwarded: t0.Add(time.Millisecond), FirstByte: t0.Add(7 * time.Millisecond),
		SettleStart: t0.Add(8 * time.Millisecond), Ended: t0.Add(9 * time.Millisecond),
	}
	r.Tries = []extproc.Try{
		{Group: "main", Deployment: "a", Sent: t0.Add(time.Millisecond), Status: 429},
		{Group: "main", Deployment: "b", Sent: t0.Add(3 * time.Millisecond), Status: 503},
		{Group: "backup", Deployment: "c", Sent: t0.Add(5 * time.Millisecond), Status: 200},
	}
	return r
}

// gathered is every sample of m's counters and gauges, as
// "name{label=value,…}" (labels sorted) → value.
func gathered(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
		}
	}
	return out
}

// only keeps the samples of got whose name starts with prefix.
func only(got map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range got {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func TestRetriesAndFallbacksAreCountedFromTheReport(t *testing.T) {
	m := NewMetrics()
	m.Observe(retriedReport(time.Unix(100, 0)))
	m.Observe(&extproc.Report{ // one attempt, no fallback: neither
		API: extproc.APIChat, HTTPStatus: 200, Attempts: 1,
		Target: &extproc.Target{Model: "main", Deployment: "a"},
		Tries:  []extproc.Try{{Group: "main", Deployment: "a", Status: 200}},
	})
	got := gathered(t, m)
	require.Equal(t, map[string]float64{
		"tollgate_retries_total{deployment=a,model_group=main,reason=rate_limited}": 1,
		"tollgate_retries_total{deployment=b,model_group=main,reason=server_error}": 1,
	}, only(got, "tollgate_retries_total"))
	require.Equal(t, map[string]float64{
		"tollgate_fallbacks_total{from_group=main,reason=cooldown,to_group=backup}": 1,
	}, only(got, "tollgate_fallbacks_total"))

	m.CooledDown("a", extproc.CooldownRateLimited, time.Minute)
	m.CooledDown("a", extproc.CooldownRateLimited, time.Minute)
	m.CooledDown("b", extproc.CooldownAllowedFails, time.Minute)
	require.Equal(t, map[string]float64{
		"tollgate_deployment_cooldowns_total{deployment=a,reason=rate_limited}":  2,
		"tollgate_deployment_cooldowns_total{deployment=b,reason=allowed_fails}": 1,
	}, only(gathered(t, m), "tollgate_deployment_cooldowns_total"))
}

func TestRetryReasons(t *testing.T) {
	for status, want := range map[int]string{
		0: "no_response", 429: "rate_limited", 408: "timeout", 504: "timeout",
		500: "server_error", 503: "server_error", 400: "other",
	} {
		require.Equal(t, want, retryReason(status), status)
	}
}

type fakeStates map[string]extproc.DeploymentState

func (f fakeStates) States(time.Time) map[string]extproc.DeploymentState { return f }

func TestRouterStatesAreExported(t *testing.T) {
	m := NewMetrics()
	now := time.Unix(100, 0)
	m.WatchRouter(fakeStates{
		"a": {CoolingUntil: now.Add(time.Minute), InFlight: 2},
		"b": {Latency: 250 * time.Millisecond},
	}, func() time.Time { return now })
	require.Equal(t, map[string]float64{
		"tollgate_deployment_cooling_down{deployment=a}": 1, "tollgate_deployment_requests_in_flight{deployment=a}": 2, "tollgate_deployment_time_to_first_byte_seconds{deployment=a}": 0,
		"tollgate_deployment_cooling_down{deployment=b}": 0, "tollgate_deployment_requests_in_flight{deployment=b}": 0, "tollgate_deployment_time_to_first_byte_seconds{deployment=b}": 0.25,
	}, only(gathered(t, m), "tollgate_deployment_"))
}

// Each attempt is its own upstream span, with its deployment and number; a
// retry's span id is the parent in the traceparent it was sent with.
func TestEachAttemptIsAnUpstreamSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(presetIDs{}))
	tr := &Tracing{tp: tp, tracer: tp.Tracer("test")}
	r := retriedReport(time.Unix(100, 0))
	tries := r.Tries
	r.Tries = nil
	var parents []string
	for i := range tries { // as the processor sends them: one traceparent per attempt
		r.Tries = tries[:i+1]
		parents = append(parents, tr.UpstreamTraceparent(r)[36:52])
	}
	require.Equal(t, hex.EncodeToString(r.Trace.Upstream[:]), parents[0], "the first attempt's span was chosen with the trace")
	tr.Observe(r)
	require.NoError(t, tp.ForceFlush(context.Background()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	var ups []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "upstream" {
			ups = append(ups, s)
		}
	}
	require.Len(t, ups, 3)
	for i, s := range ups {
		attrs := map[string]string{}
		for _, kv := range s.Attributes {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		require.Equal(t, parents[i], s.SpanContext.SpanID().String(), "attempt %d", i+1)
		require.Equal(t, map[string]string{
			"tollgate.attempt": []string{"1", "2", "3"}[i], "tollgate.deployment": tries[i].Deployment,
			"tollgate.model_group": tries[i].Group, "http.response.status_code": []string{"429", "503", "200"}[i],
		}, attrs)
		require.Equal(t, tries[i].Sent, s.StartTime)
		if i < 2 {
			require.Equal(t, codes.Error, s.Status.Code)
			require.Equal(t, tries[i+1].Sent, s.EndTime, "an attempt ends when the next starts")
		} else {
			require.Equal(t, codes.Unset, s.Status.Code)
			require.Equal(t, r.SettleStart, s.EndTime)
		}
	}
	require.NotEqual(t, parents[0], parents[1])
	require.NotEqual(t, parents[1], parents[2])
}
