package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// TestApplyAlerts: alert_sinks (the secret from the environment, sealed,
// kept when the document leaves it out) and the alert settings; applying
// again changes nothing; a bad sink is refused with its place.
func TestApplyAlerts(t *testing.T) {
	st := memstore.New()
	ctx := context.Background()
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	t.Setenv("FINANCE_HOOK_SECRET", "s3cret")
	doc := `alert_sinks:
  - {id: finance, url: "https://hooks.example.com/tollgate", secret: "${FINANCE_HOOK_SECRET}"}
  - {id: ops, kind: slack, url: "https://hooks.slack.com/services/T/B/X"}
alerts:
  thresholds_pct: [80, 50, 100]
  anomaly_factor: 5
  expiring_within: 72h
`
	res, err := admin.Apply(ctx, st, sealer, []byte(doc), "ops")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"alert_sink/finance", "alert_sink/ops", "alert_settings/alerts"}, res.Created)
	k, _, err := store.Get[store.AlertSink](ctx, st, "finance")
	require.NoError(t, err)
	require.Equal(t, store.AlertSinkWebhook, k.Kind)
	plain, err := sealer.Open(k.Secret)
	require.NoError(t, err)
	require.Equal(t, "s3cret", string(plain))
	set, _, err := store.Get[store.AlertSettings](ctx, st, store.AlertSettingsID)
	require.NoError(t, err)
	require.Equal(t, store.AlertSettings{ID: store.AlertSettingsID, Thresholds: []int{50, 80, 100}, AnomalyFactor: 5, ExpiringWithin: 72 * time.Hour}, set)

	res, err = admin.Apply(ctx, st, sealer, []byte(doc), "ops")
	require.NoError(t, err)
	require.False(t, res.Changed(), "applying again changes nothing (the same secret is kept)")
	audit, err := st.ListAudit(ctx, 0, 0)
	require.NoError(t, err)
	for _, e := range audit {
		require.NotContains(t, e.Detail, "s3cret")
	}

	for doc, want := range map[string]string{
		"alert_sinks:\n  - {id: x, url: \"ftp://h/\"}\n":                           "alert_sinks[0].url",
		"alert_sinks:\n  - {id: x, kind: pager, url: \"https://h/\"}\n":            "alert_sinks[0].kind",
		"alert_sinks:\n  - {id: x, kind: slack, url: \"https://h/\", secret: s}\n": "alert_sinks[0].secret",
		"alerts: {thresholds_pct: [0]}\n":                                          "alerts.thresholds_pct",
		"alerts: {expiring_within: soon}\n":                                        "alerts.expiring_within",
	} {
		_, err := admin.Apply(ctx, memstore.New(), sealer, []byte(doc), "ops")
		require.ErrorContains(t, err, want, doc)
	}
}
