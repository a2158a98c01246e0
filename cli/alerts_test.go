package cli_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// TestAlertCommands: alert sink add|list|delete (the secret from the
// environment, never printed), alert settings shown and set, alert list
// with each alert's deliveries.
func TestAlertCommands(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, open(t))
			ctx := context.Background()
			al, ok := s.st.(store.Alerts)
			require.True(t, ok)
			fired := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
			_, err := al.ClaimAlert(ctx, store.AlertRecord{
				ID: "budget|key:k1|daily|1|80", Kind: "budget_threshold", Scope: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"},
				Message: "key:k1: 80% of its daily budget of $10 reached", Detail: "{}", FiredAt: fired,
			})
			require.NoError(t, err)
			require.NoError(t, al.RecordAlertDelivery(ctx, store.AlertDelivery{AlertID: "budget|key:k1|daily|1|80", Sink: "finance", Attempts: 2, OK: true, At: fired}))
			t.Setenv("TOLLGATE_ALERT_SECRET", "s3cret")
			runSteps(t, s, []step{
				{args: []string{"alert", "sink", "add", "finance", "--url", "https://hooks.example.com/t"}, want: []string{"finance", "webhook", "true"}},
				{args: []string{"alert", "sink", "add", "ops", "--kind", "slack", "--url", "https://hooks.slack.com/services/x"}, want: []string{"ops", "slack", "false"}},
				{args: []string{"alert", "sink", "add", "nourl"}, wantErr: "--url"},
				{args: []string{"alert", "sink", "list"}, want: []string{"finance", "https://hooks.example.com/t", "ops"}},
				{args: []string{"alert", "sink", "list", "-o", "json"}, want: []string{`"has_secret": true`}},
				{args: []string{"alert", "sink", "delete", "ops"}, want: []string{"alert sink ops deleted"}},
				{args: []string{"alert", "settings"}, want: []string{"50,80,100 (default)", "168h0m0s (default)"}},
				{args: []string{"alert", "settings", "--thresholds", "90,25", "--anomaly-factor", "4"}, want: []string{"25,90", "4"}},
				{args: []string{"alert", "settings"}, want: []string{"25,90"}},
				{args: []string{"alert", "settings", "--thresholds", "0"}, wantErr: "thresholds_pct"},
				{args: []string{"alert", "list"}, want: []string{"2026-03-10T12:00:00Z", "budget_threshold", "80% of its daily budget", "finance:ok/2"}},
			})
			out, err := s.run(t, "alert", "sink", "list", "-o", "json")
			require.NoError(t, err)
			require.NotContains(t, out, "s3cret")
		})
	}
}
