package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/alert"
	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// adminREST calls the admin REST API of r with the test's admin secret.
func (r *running) adminREST(t *testing.T, method, path, body string) []byte {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+r.g.AdminAddr+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("authorization", "Bearer tga-test-admin-secret")
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s: %s", method, path, b)
	return b
}

// signedReceiver is a webhook receiver that verifies each delivery's
// signature under secret; counts returns the deliveries so far by alert id.
func signedReceiver(t *testing.T, secret []byte) (hook *httptest.Server, counts func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]int{}
	hook = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err == nil {
			err = alert.Verify(secret, r.Header.Get(alert.HeaderTimestamp), r.Header.Get(alert.HeaderSignature), b, time.Now(), time.Minute)
		}
		var e alert.Event
		if err == nil {
			err = json.Unmarshal(b, &e)
		}
		if err != nil {
			t.Errorf("delivery: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got[e.ID]++
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	return hook, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(got)
	}
}

// TestAlertSinksFromAdminAPIAcrossReplicas: a sink added through one
// replica's admin API is delivered to by both, which share the store and
// no Redis; each replica's own counters pass every threshold of a soft
// budget, yet each alert reaches the (signature-checking) receiver once,
// and the other replica's admin API lists the alerts with their deliveries.
func TestAlertSinksFromAdminAPIAcrossReplicas(t *testing.T) {
	secret := []byte("finance-secret")
	hook, counts := signedReceiver(t, secret)

	st := memstore.New()
	fast := func(_ *gateway.Config, o *gateway.Options) { o.AlertEvery = 20 * time.Millisecond }
	a := startWith(t, false, st, nil, fast)
	b := startWith(t, false, st, nil, fast)

	sink := a.adminREST(t, http.MethodPost, "/v1/alert-sinks",
		`{"sink":{"id":"finance","kind":"webhook","url":"`+hook.URL+`","secret":"`+string(secret)+`"}}`)
	require.NotContains(t, string(sink), string(secret), "the secret is write-only")
	require.Contains(t, string(sink), `"has_secret":true`)
	require.Contains(t, string(b.adminREST(t, http.MethodGet, "/v1/alert-sinks", "")), `"finance"`)

	body := `{"model":"demo","messages":[{"role":"user","content":"hello there gateway"}],"max_tokens":5}`
	key := a.key(t, "agent", kernel.Limits{
		Budgets: []kernel.BudgetWindow{{Limit: 20 * kernel.MicroUSD, Period: kernel.Period{Kind: kernel.PeriodDaily}, Soft: true}},
	})
	a.warm(t, key, body)
	b.warm(t, key, body)
	// Each replica alone spends past the soft budget (its counters live in
	// the process): both would fire every threshold.
	for range 10 {
		require.Equal(t, http.StatusOK, a.status(key, body))
		require.Equal(t, http.StatusOK, b.status(key, body))
	}
	eventually(t, func() bool { return len(counts()) == 3 })
	time.Sleep(200 * time.Millisecond) // ten more checks on each replica
	got := counts()
	for id, c := range got {
		require.Equal(t, 1, c, id)
		require.True(t, strings.HasPrefix(id, "budget|key:agent|daily|"), id)
	}

	var list struct {
		Alerts []struct {
			ID         string `json:"id"`
			Kind       string `json:"kind"`
			Deliveries []struct {
				Sink     string `json:"sink"`
				Attempts int    `json:"attempts"`
				OK       bool   `json:"ok"`
			} `json:"deliveries"`
		} `json:"alerts"`
	}
	require.NoError(t, json.Unmarshal(b.adminREST(t, http.MethodGet, "/v1/alerts", ""), &list))
	require.Len(t, list.Alerts, 3)
	for _, al := range list.Alerts {
		require.Equal(t, "budget_threshold", al.Kind)
		require.Equal(t, 1, got[al.ID], al.ID)
		require.Len(t, al.Deliveries, 1, al.ID)
		require.Equal(t, "finance", al.Deliveries[0].Sink)
		require.True(t, al.Deliveries[0].OK)
		require.Equal(t, 1, al.Deliveries[0].Attempts)
	}

	// The metrics: three alerts fired between the two replicas, each
	// delivered once.
	fired, delivered := 0.0, 0.0
	for _, r := range []*running{a, b} {
		m := scrape(t, "http://"+r.g.MetricsAddr+"/metrics")
		fired += sum(m, "tollgate_alerts_fired_total", `kind="budget_threshold"`)
		delivered += sum(m, "tollgate_alert_deliveries_total", `kind="budget_threshold"`, `ok="true"`, `sink="finance"`)
	}
	require.InDelta(t, 3, fired, 0)
	require.InDelta(t, 3, delivered, 0)

	b.adminREST(t, http.MethodPut, "/v1/alert-settings", `{"settings":{"thresholds_pct":[90,25],"anomaly_factor":4}}`)
	require.JSONEq(t, `{"settings":{"thresholds_pct":[25,90],"anomaly_factor":4,"expiring_within":null}}`,
		string(a.adminREST(t, http.MethodGet, "/v1/alert-settings", "")))
	a.adminREST(t, http.MethodDelete, "/v1/alert-sinks/finance", "")
	require.JSONEq(t, `{"sinks":[]}`, string(b.adminREST(t, http.MethodGet, "/v1/alert-sinks", "")))
}

// TestAlertAnomalyLoop: on a fake clock, the gateway's alert loop compares
// each key's spend in the current hour with its hourly average of the day
// before: a burst above --alert-anomaly-factor × that rate alerts once,
// steady spend and spend under the floor do not, and the next hour's burst
// alerts again.
func TestAlertAnomalyLoop(t *testing.T) {
	secret := []byte("ops-secret")
	hook, counts := signedReceiver(t, secret)
	var clock atomic.Int64
	t0 := time.Date(2026, 3, 10, 12, 30, 0, 0, time.UTC)
	clock.Store(t0.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	st := memstore.New(memstore.WithClock(now))
	startWith(t, false, st, nil, func(_ *gateway.Config, o *gateway.Options) {
		o.Now, o.AlertEvery, o.AlertAnomalyFactor = now, 20*time.Millisecond, 3
		o.Alerts = &alert.Notifier{
			Claimer: &alert.MemoryClaimer{Now: now}, Now: now,
			Sinks: []alert.Sink{&alert.Webhook{URL: hook.URL, Secret: secret, Now: time.Now}},
		}
	})
	n := 0
	spend := func(key string, at time.Time, cost kernel.Money) {
		n++
		require.NoError(t, st.Append(t.Context(), store.LedgerEntry{
			RequestID: fmt.Sprintf("r%d", n), KeyID: key, Model: "demo", Cost: cost, HTTPStatus: 200,
			StartedAt: at.Add(-time.Second), EndedAt: at,
		}))
	}
	hour := t0.Truncate(time.Hour)
	for h := 1; h <= 24; h++ { // a dollar an hour for a day, every key
		for _, k := range []string{"steady", "burst", "small"} {
			spend(k, hour.Add(-time.Duration(h)*time.Hour+time.Minute), kernel.Dollar/10)
		}
		spend("steady", hour.Add(-time.Duration(h)*time.Hour+2*time.Minute), 9*kernel.Dollar/10)
		spend("burst", hour.Add(-time.Duration(h)*time.Hour+2*time.Minute), 9*kernel.Dollar/10)
	}
	spend("steady", t0.Add(-time.Minute), 2*kernel.Dollar)   // 2× its rate: not above 3×
	spend("burst", t0.Add(-time.Minute), 5*kernel.Dollar)    // 5× its rate
	spend("small", t0.Add(-time.Minute), 9*kernel.Dollar/10) // 9× its rate, under the $1 floor
	require.NoError(t, st.Flush(t.Context()))

	first := "anomaly|key:burst|" + strconv.FormatInt(hour.UnixNano(), 10)
	eventually(t, func() bool { return counts()[first] == 1 })
	time.Sleep(200 * time.Millisecond) // ten more checks
	require.Equal(t, map[string]int{first: 1}, counts(), "one alert: the burst, once")

	// The next hour: the burst's own hour is now part of its trailing
	// average (≈ $1.17), and $5 is still above 3× that.
	clock.Store(t0.Add(time.Hour).UnixNano())
	time.Sleep(200 * time.Millisecond)
	require.Len(t, counts(), 1, "a quiet hour does not alert")
	spend("burst", t0.Add(time.Hour-time.Minute), 5*kernel.Dollar)
	require.NoError(t, st.Flush(t.Context()))
	second := "anomaly|key:burst|" + strconv.FormatInt(hour.Add(time.Hour).UnixNano(), 10)
	eventually(t, func() bool { return counts()[second] == 1 })
	require.Len(t, counts(), 2)
}
