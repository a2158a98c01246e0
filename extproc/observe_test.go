package extproc

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// reports is an Observer (and Tracer) that keeps a copy of every report.
type reports struct {
	mu  sync.Mutex
	got []Report
}

func (o *reports) Observe(r *Report) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := *r
	c.Tries = slices.Clone(r.Tries) // r's own are reused after the call
	o.got = append(o.got, c)
}

func (o *reports) UpstreamTraceparent(r *Report) string {
	return "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"
}

func (o *reports) all() []Report {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Report(nil), o.got...)
}

// The processor reports every request once, when its stream ends: what the
// client got, the usage and cost settled, the times of its steps; a Tracer's
// traceparent goes upstream in place of the client's.
func TestObserverGetsOneReportPerRequest(t *testing.T) {
	obs := &reports{}
	e := newTestEnv(t, WithObserver(obs))
	up := &recorder{resp: jsonResponse(200, chatResponse)}

	ok := post("/v1/chat/completions", clientKey, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		extprocfilter.Header{Key: "traceparent", Value: "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01"})
	require.Equal(t, http.StatusOK, e.do(t, ok, up.upstream).Status)
	require.Equal(t, "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01", up.last(t).Headers.Value("traceparent"))
	require.Equal(t, http.StatusUnauthorized, e.do(t, post("/v1/chat/completions", "tg-nope", `{}`), up.upstream).Status)
	require.Equal(t, http.StatusOK, e.do(t, get("/v1/models", clientKey), up.upstream).Status)
	upErr := &recorder{resp: jsonResponse(503, `{"error":{"message":"overloaded"}}`)}
	require.Equal(t, http.StatusServiceUnavailable, e.do(t, ok, upErr.upstream).Status)

	var got []Report
	require.Eventually(t, func() bool { got = obs.all(); return len(got) == 4 }, 5*time.Second, 5*time.Millisecond)
	byStatus := map[int]Report{}
	for _, r := range got {
		byStatus[r.HTTPStatus] = r
	}

	r := byStatus[http.StatusOK]
	if r.Path == "/v1/models" { // both 200s: pick the chat one
		for _, x := range got {
			if x.HTTPStatus == http.StatusOK && x.Path != "/v1/models" {
				r = x
			}
		}
	}
	require.Equal(t, translate.APIChat, r.API)
	require.Equal(t, "k1", r.Principal.KeyID)
	require.Equal(t, "openai-gpt4o", r.Target.Deployment)
	require.Empty(t, r.ErrorType)
	require.True(t, r.Admitted)
	require.True(t, r.Settled)
	require.Equal(t, kernel.StatusCompleted, r.Status)
	require.Positive(t, r.Usage.Output)
	require.Positive(t, r.Cost)
	require.Equal(t, 1, r.Attempts)
	require.Equal(t, "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01", r.ClientTraceparent)
	for _, step := range [][2]string{{"Started", "AdmitStart"}, {"AdmitStart", "Forwarded"}, {"Forwarded", "FirstByte"}, {"FirstByte", "SettleStart"}, {"SettleStart", "Ended"}} {
		a, b := reportTime(r, step[0]), reportTime(r, step[1])
		require.False(t, a.IsZero() || b.IsZero() || b.Before(a), "%s ≤ %s", step[0], step[1])
	}

	r = byStatus[http.StatusUnauthorized]
	require.Equal(t, translate.CodeInvalidAPIKey, r.ErrorType)
	require.Nil(t, r.Principal)
	require.Nil(t, r.Target)
	require.False(t, r.Settled)
	require.Zero(t, r.Attempts)

	r = byStatus[http.StatusServiceUnavailable]
	require.Equal(t, "upstream_error", r.ErrorType)
	require.True(t, r.Settled)
	require.Equal(t, kernel.StatusFailed, r.Status)
}

func reportTime(r Report, name string) time.Time {
	switch name {
	case "Started":
		return r.Started
	case "AdmitStart":
		return r.AdmitStart
	case "Forwarded":
		return r.Forwarded
	case "FirstByte":
		return r.FirstByte
	case "SettleStart":
		return r.SettleStart
	default:
		return r.Ended
	}
}
