package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// alertTests: an alert is claimed once however many callers race for it,
// its deliveries are kept per sink (a later state replaces an earlier one),
// and ListAlerts is newest first with the deliveries; sinks and settings
// round-trip as configuration objects.
func (s *suite) alertTests() []test {
	return []test{
		{"ClaimOnce", func(t *testing.T) {
			st := s.fresh(t)
			ctx := timeout(t, 30*time.Second)
			al, ok := st.(store.Alerts)
			require.True(t, ok, "every backend keeps alerts")
			a := store.AlertRecord{
				ID: "budget|key:k1|daily|1|80", Kind: "budget_threshold",
				Scope: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, Message: "80%", Detail: `{"x":1}`,
				FiredAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			won := 0
			for range 8 {
				wg.Go(func() {
					ok, err := al.ClaimAlert(ctx, a)
					if err != nil {
						t.Errorf("claim: %v", err)
					}
					if ok {
						mu.Lock()
						won++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			require.Equal(t, 1, won, "one claim wins")

			b := a
			b.ID, b.FiredAt, b.Scope = "expiring|key:k2|9", a.FiredAt.Add(time.Hour), kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k2"}
			ok, err := al.ClaimAlert(ctx, b)
			require.NoError(t, err)
			require.True(t, ok)

			require.NoError(t, al.RecordAlertDelivery(ctx, store.AlertDelivery{AlertID: a.ID, Sink: "slack", Attempts: 1, Error: "status 500", At: a.FiredAt}))
			require.NoError(t, al.RecordAlertDelivery(ctx, store.AlertDelivery{AlertID: a.ID, Sink: "hook", Attempts: 2, OK: true, At: a.FiredAt}))
			require.NoError(t, al.RecordAlertDelivery(ctx, store.AlertDelivery{AlertID: a.ID, Sink: "slack", Attempts: 3, OK: true, At: a.FiredAt.Add(time.Minute)}))

			got, err := al.ListAlerts(ctx, 0)
			require.NoError(t, err)
			require.Len(t, got, 2)
			require.Equal(t, b.ID, got[0].ID, "newest first")
			require.Empty(t, got[0].Deliveries)
			g := got[1]
			require.Equal(t, a.ID, g.ID)
			require.Equal(t, a.Kind, g.Kind)
			require.Equal(t, a.Scope, g.Scope)
			require.Equal(t, a.Message, g.Message)
			require.JSONEq(t, a.Detail, g.Detail)
			require.True(t, a.FiredAt.Equal(g.FiredAt))
			require.Equal(t, []store.AlertDelivery{
				{AlertID: a.ID, Sink: "hook", Attempts: 2, OK: true, At: a.FiredAt},
				{AlertID: a.ID, Sink: "slack", Attempts: 3, OK: true, At: a.FiredAt.Add(time.Minute)},
			}, g.Deliveries)

			got, err = al.ListAlerts(ctx, 1)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, b.ID, got[0].ID)
		}},
		{"SinksAndSettings", func(t *testing.T) {
			st := s.fresh(t)
			ctx := timeout(t, 30*time.Second)
			k := store.AlertSink{ID: "hook", Kind: store.AlertSinkWebhook, URL: "https://example.com/h", Secret: []byte{1, 2, 3}}
			_, err := store.Put(ctx, st, k.ID, &k, 0)
			require.NoError(t, err)
			sinks, err := store.List[store.AlertSink](ctx, st)
			require.NoError(t, err)
			require.Equal(t, []store.AlertSink{k}, sinks)
			set := store.AlertSettings{ID: store.AlertSettingsID, Thresholds: []int{25, 90}, AnomalyFactor: 4, ExpiringWithin: 48 * time.Hour}
			_, err = store.Put(ctx, st, set.ID, &set, -1)
			require.NoError(t, err)
			got, _, err := store.Get[store.AlertSettings](ctx, st, store.AlertSettingsID)
			require.NoError(t, err)
			require.Equal(t, set, got)
		}},
	}
}
