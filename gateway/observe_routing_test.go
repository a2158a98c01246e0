package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// The routing metrics through the built-in data plane, against the mock's
// fault injection and its per-deployment counts:
//   - "routed" = dead (500s, allowed_fails 2) + ok: dead cools down once, for
//     allowed_fails;
//   - "primary" = gone (429 with retry-after), falling back to "backup": gone
//     cools down once, for rate_limited, and the requests after it go to
//     "backup" as fallbacks for cooldown;
//   - "quota" = q (rpm 1), falling back to "backup": the requests past q's
//     quota are fallbacks for rate_limited.
//
// Retries are the attempts the mock received beyond one per request: dead's
// two 500s retried on ok, gone's 429 retried on backup (a fallback).
func TestRoutingMetricsCountCooldownsRetriesAndFallbacks(t *testing.T) {
	r := start(t, false)
	metricsURL := "http://" + r.g.MetricsAddr + "/metrics"
	mock := r.mock
	require.NoError(t, mock.SetFault("dead", &mockllm.Fault{Mode: mockllm.FaultError500}))
	require.NoError(t, mock.SetFault("gone", &mockllm.Fault{Mode: mockllm.FaultRateLimit, RetryAfter: 3600}))
	hour := store.DeploymentPolicy{AllowedFails: 2, Cooldown: time.Hour}
	deps := []struct {
		id  string
		dep store.Deployment
	}{
		{"dead", store.Deployment{Weight: 1000, DeploymentPolicy: hour}},
		{"ok", store.Deployment{}},
		{"gone", store.Deployment{DeploymentPolicy: hour}},
		{"q", store.Deployment{RPM: 1}},
		// Last: once the data plane routes to it, it has every deployment
		// above (each snapshot is the whole store). Its warm-ups may meet a
		// data plane without it yet: they must not cool it down.
		{"spare", store.Deployment{DeploymentPolicy: store.DeploymentPolicy{AllowedFails: 1000}}},
	}
	for _, d := range deps {
		put(t, r.st, "p"+d.id, &store.Provider{ID: "p" + d.id, Type: store.ProviderOpenAI, BaseURL: r.mockURL + "/d/" + d.id + "/v1"})
		d.dep.ID, d.dep.Provider, d.dep.ProviderModel = d.id, "p"+d.id, "mock-gpt"
		put(t, r.st, d.id, &d.dep)
	}
	put(t, r.st, "routed", &store.ModelGroup{ID: "routed", Deployments: []string{"dead", "ok"}})
	put(t, r.st, "backup", &store.ModelGroup{ID: "backup", Deployments: []string{"spare"}})
	put(t, r.st, "primary", &store.ModelGroup{ID: "primary", Deployments: []string{"gone"}, GroupRouting: store.GroupRouting{Fallbacks: []string{"backup"}}})
	put(t, r.st, "quota", &store.ModelGroup{ID: "quota", Deployments: []string{"q"}, GroupRouting: store.GroupRouting{Fallbacks: []string{"backup"}}})
	key := r.key(t, "k", kernel.Limits{})
	chat := func(model string) int {
		return r.status(key, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	}
	warm := 0 // warm-ups the processor routed (to spare): counted in backup's series
	eventually(t, func() bool {
		resp, _ := r.post(t, key, "/v1/chat/completions", `{"model":"backup","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
		if resp.Header.Get("x-tollgate-deployment") != "" {
			warm++
		}
		return resp.StatusCode == http.StatusOK
	})
	mock.ResetDeployments()
	require.NoError(t, mock.SetFault("dead", &mockllm.Fault{Mode: mockllm.FaultError500}))
	require.NoError(t, mock.SetFault("gone", &mockllm.Fault{Mode: mockllm.FaultRateLimit, RetryAfter: 3600}))

	sent := 0
	for range 20 {
		chat("routed")
		sent++
	}
	require.Equal(t, http.StatusOK, chat("primary"), "gone answers its 429, retried on backup")
	sent++
	for range 5 {
		require.Equal(t, http.StatusOK, chat("primary"), "primary falls back to backup")
		sent++
	}
	for range 3 {
		require.Equal(t, http.StatusOK, chat("quota"))
		sent++
	}

	got := mock.Deployments()
	received := int64(0)
	for _, d := range got {
		received += d.Received
	}
	require.EqualValues(t, 2, got["dead"].Received, "dead takes allowed_fails failures, then cools down")
	require.EqualValues(t, 1, got["gone"].Received, "gone cools down after its 429")
	qOver := 3 - got["q"].Received // past q's rpm (1, or 2 when a minute began in between)
	require.Positive(t, qOver)

	var m map[string]float64
	eventually(t, func() bool { // the last report may land just after its response
		m = scrape(t, metricsURL)
		routed := 0.0
		for _, g := range []string{"routed", "primary", "quota", "backup"} {
			routed += sum(m, "tollgate_requests_total", `model_group="`+g+`"`)
		}
		// One report per attempt: a retried one is its own request.
		return routed == float64(received)+float64(warm)
	})
	require.InDelta(t, 1, sum(m, "tollgate_deployment_cooldowns_total", `deployment="dead"`, `reason="allowed_fails"`), 0)
	require.InDelta(t, 1, sum(m, "tollgate_deployment_cooldowns_total", `deployment="gone"`, `reason="rate_limited"`), 0)
	require.InDelta(t, 2, sum(m, "tollgate_deployment_cooldowns_total"), 0, "no other cooldown")

	require.InDelta(t, 5, sum(m, "tollgate_fallbacks_total", `from_group="primary"`, `to_group="backup"`, `reason="cooldown"`), 0)
	require.InDelta(t, float64(qOver), sum(m, "tollgate_fallbacks_total", `from_group="quota"`, `to_group="backup"`, `reason="rate_limited"`), 0)
	require.InDelta(t, 1, sum(m, "tollgate_fallbacks_total", `from_group="primary"`, `to_group="backup"`, `reason="failed"`), 0,
		"gone's 429 retried on the fallback group")
	require.InDelta(t, float64(5+qOver+1), sum(m, "tollgate_fallbacks_total"), 0, "no other fallback")

	require.InDelta(t, float64(received-int64(sent)), sum(m, "tollgate_retries_total"), 0,
		"every attempt the mock received beyond one per request is a retry")
	require.InDelta(t, 2, sum(m, "tollgate_retries_total", `model_group="routed"`, `deployment="dead"`, `reason="server_error"`), 0)
	require.InDelta(t, 1, sum(m, "tollgate_retries_total", `model_group="primary"`, `deployment="gone"`, `reason="rate_limited"`), 0)

	for dep, want := range map[string]float64{"dead": 1, "gone": 1, "ok": 0, "q": 0, "spare": 0} {
		require.InDelta(t, want, m[`tollgate_deployment_cooling_down{deployment="`+dep+`"}`], 0, dep)
		require.InDelta(t, 0, m[`tollgate_deployment_requests_in_flight{deployment="`+dep+`"}`], 0, dep)
	}
	require.Positive(t, m[`tollgate_deployment_time_to_first_byte_seconds{deployment="ok"}`])
}
