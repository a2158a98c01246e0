package alert_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/alert"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// receiver is a webhook endpoint that verifies each delivery's signature
// and counts deliveries per event id; it fails the first fail attempts.
type receiver struct {
	t      *testing.T
	secret []byte
	now    func() time.Time
	mu     sync.Mutex
	got    map[string]int
	events []alert.Event
	fail   int
	tries  int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.t.Errorf("read delivery: %v", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries++
	if r.tries <= r.fail {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if err := alert.Verify(r.secret, req.Header.Get(alert.HeaderTimestamp), req.Header.Get(alert.HeaderSignature), body, r.now(), 5*time.Minute); err != nil {
		r.t.Errorf("delivery %s: %v", req.Header.Get(alert.HeaderEvent), err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var e alert.Event
	if err := json.Unmarshal(body, &e); err != nil || e.ID != req.Header.Get(alert.HeaderEvent) {
		r.t.Errorf("delivery %q: %v, event id %q", body, err, e.ID)
	}
	r.got[e.ID]++
	r.events = append(r.events, e)
}

func newReceiver(t *testing.T, secret []byte, now func() time.Time) (*receiver, string) {
	r := &receiver{t: t, secret: secret, now: now, got: map[string]int{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL
}

func redisClient(t *testing.T) *goredis.Client {
	t.Helper()
	opt, err := goredis.ParseURL(testenv.Redis(t))
	require.NoError(t, err)
	c := goredis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func noSleep(context.Context, time.Duration) error { return nil }

// TestThresholdsFireOnceAcrossReplicas: two replicas check the same budgets
// concurrently while the spend grows through 50, 80 and 100 % of a daily
// budget and a soft one: each threshold is delivered exactly once (signature
// verified), the next day's window fires again, and every alert is in the
// audit log.
func TestThresholdsFireOnceAcrossReplicas(t *testing.T) {
	rdb := redisClient(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "alert-" + hex.EncodeToString(b)
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	secret := []byte("s3cret")
	rcv, url := newReceiver(t, secret, clock)
	audit := memstore.New()
	replica := func() *alert.Notifier {
		return &alert.Notifier{
			Claimer: alert.RedisClaimer{Client: rdb, Prefix: prefix},
			Sinks:   []alert.Sink{&alert.Webhook{URL: url, Secret: secret, Now: clock, Sleep: noSleep}},
			Audit:   audit, Now: clock,
		}
	}
	reps := []*alert.Notifier{replica(), replica()}
	team := kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "search"}
	daily := kernel.Period{Kind: kernel.PeriodDaily}
	scopes := []kernel.Scope{{Ref: team, Limits: &kernel.Limits{Budgets: []kernel.BudgetWindow{
		{Limit: 100 * kernel.Dollar, Period: daily},
		{Limit: 200 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodMonthly}, Soft: true},
	}}}}
	var mu sync.Mutex
	spent := map[string]kernel.Money{}
	usage := func(_ context.Context, ref kernel.ScopeRef, p kernel.Period, at time.Time) (kernel.Money, error) {
		mu.Lock()
		defer mu.Unlock()
		start, _ := p.Window(at)
		return spent[ref.String()+p.String()+start.String()], nil
	}
	set := func(p kernel.Period, m kernel.Money) {
		mu.Lock()
		defer mu.Unlock()
		start, _ := p.Window(now)
		spent[team.String()+p.String()+start.String()] = m
	}
	checkBoth := func() int {
		var wg sync.WaitGroup
		var n [2]int
		for i, r := range reps {
			wg.Go(func() {
				var err error
				n[i], err = r.CheckBudgets(t.Context(), now, scopes, nil, usage)
				require.NoError(t, err)
			})
		}
		wg.Wait()
		return n[0] + n[1]
	}
	monthly := kernel.Period{Kind: kernel.PeriodMonthly}
	for _, step := range []struct {
		daily, monthly kernel.Money
		fired          int
	}{
		{10 * kernel.Dollar, 10 * kernel.Dollar, 0},
		{50 * kernel.Dollar, 10 * kernel.Dollar, 1},   // daily 50 %
		{60 * kernel.Dollar, 60 * kernel.Dollar, 0},   // nothing new
		{99 * kernel.Dollar, 120 * kernel.Dollar, 2},  // daily 80 %, monthly (soft) 50 %
		{130 * kernel.Dollar, 200 * kernel.Dollar, 3}, // daily 100 %, monthly 80 and 100 %
		{140 * kernel.Dollar, 250 * kernel.Dollar, 0},
	} {
		set(daily, step.daily)
		set(monthly, step.monthly)
		for range 3 {
			require.Equal(t, step.fired, checkBoth(), "spent %s/%s", step.daily, step.monthly)
			step.fired = 0 // checking again fires nothing
		}
	}
	require.Len(t, rcv.got, 6)
	for id, n := range rcv.got {
		require.Equal(t, 1, n, "deliveries of %s", id)
	}
	// The next day's window starts over; the month does not.
	now = now.Add(24 * time.Hour)
	set(daily, 55*kernel.Dollar)
	set(monthly, 260*kernel.Dollar)
	require.Equal(t, 1, checkBoth())
	require.Len(t, rcv.got, 7)

	entries, err := audit.ListAudit(t.Context(), 0, 100)
	require.NoError(t, err)
	require.Len(t, entries, 7)
	require.Equal(t, "alert.budget_threshold", entries[0].Action)
	require.Equal(t, "team:search", entries[0].Target)
	require.Equal(t, store.KindTeam, entries[0].Kind)
	var soft int
	for _, e := range rcv.events {
		if e.Soft {
			soft++
			require.Contains(t, e.Message, "soft budget")
		}
	}
	require.Equal(t, 3, soft)
	var delivered int
	for _, r := range reps {
		for _, d := range r.Deliveries() {
			require.True(t, d.OK, "%+v", d)
			delivered++
		}
	}
	require.Equal(t, 7, delivered, "each event delivered by one replica only")
}

func TestWebhookRetriesThenGivesUp(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	secret := []byte("k")
	rcv, url := newReceiver(t, secret, clock)
	rcv.fail = 2
	var waits []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	n := &alert.Notifier{
		Claimer: &alert.MemoryClaimer{Now: clock}, Now: clock,
		Sinks: []alert.Sink{&alert.Webhook{URL: url, Secret: secret, Now: clock, Sleep: sleep, Attempts: 4, Backoff: time.Second}},
	}
	key := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, Limits: &kernel.Limits{ExpiresAt: now.Add(48 * time.Hour)}}
	fired, err := n.CheckExpiring(t.Context(), now, []kernel.Scope{key}, 72*time.Hour)
	require.NoError(t, err)
	require.Equal(t, 1, fired)
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second}, waits, "exponential backoff")
	d := n.Deliveries()
	require.Len(t, d, 1)
	require.Equal(t, 3, d[0].Attempts)
	require.True(t, d[0].OK)
	fired, err = n.CheckExpiring(t.Context(), now, []kernel.Scope{key}, 72*time.Hour)
	require.NoError(t, err)
	require.Zero(t, fired, "once per key and expiry")

	// A receiver that always fails: the delivery state says so.
	rcv.fail, rcv.tries = 100, 0
	ok, err := n.CheckAnomaly(t.Context(), now, key.Ref, now.Truncate(time.Hour), []kernel.Money{10, 12, 8, 100}, 5, 50)
	require.True(t, ok)
	require.ErrorContains(t, err, "after 4 attempts")
	d = n.Deliveries()
	require.False(t, d[1].OK)
	require.Equal(t, 4, d[1].Attempts)
	require.Contains(t, d[1].Error, "status 503")
}

func TestAnomalyAndSlack(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if r.Header.Get(alert.HeaderSignature) != "" {
			t.Error("Slack's payload is unsigned")
		}
	}))
	t.Cleanup(srv.Close)
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	n := &alert.Notifier{Claimer: &alert.MemoryClaimer{Now: func() time.Time { return now }}, Sinks: []alert.Sink{alert.NewSlack(srv.URL)}}
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}
	hour := now.Truncate(time.Hour)
	// 3× the trailing average is not above 3×.
	ok, err := n.CheckAnomaly(t.Context(), now, key, hour, []kernel.Money{kernel.Dollar, kernel.Dollar, 3 * kernel.Dollar}, 3, 0)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = n.CheckAnomaly(t.Context(), now, key, hour, []kernel.Money{kernel.Dollar, kernel.Dollar, 4 * kernel.Dollar}, 3, 0)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = n.CheckAnomaly(t.Context(), now, key, hour, []kernel.Money{kernel.Dollar, kernel.Dollar, 5 * kernel.Dollar}, 3, 0)
	require.NoError(t, err)
	require.False(t, ok, "once per hour")
	require.Equal(t, []string{`{"text":":rotating_light: Tollgate spend_anomaly: key:k1 spent $4 in the hour from 2026-12-05T09:00:00Z, above 3× its trailing average of $1"}`}, bodies)
}

func TestVerifyRejects(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"x"}`)
	sig := alert.Sign([]byte("k"), "1800000000", body)
	require.NoError(t, alert.Verify([]byte("k"), "1800000000", sig, body, now, time.Minute))
	require.ErrorIs(t, alert.Verify([]byte("other"), "1800000000", sig, body, now, time.Minute), alert.ErrBadSignature)
	require.ErrorIs(t, alert.Verify([]byte("k"), "1800000000", sig, []byte(`{"id":"y"}`), now, time.Minute), alert.ErrBadSignature)
	require.ErrorIs(t, alert.Verify([]byte("k"), "1800000000", sig, body, now.Add(time.Hour), time.Minute), alert.ErrBadSignature, "too old")
}
