package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/reconcile"
	"github.com/tollgate-ai/tollgate/store"
)

func TestJobAlertsAboveTheThreshold(t *testing.T) {
	_, base := mock(t)
	price := kernel.Price{Input: kernel.Dollar, CachedInput: kernel.Dollar / 2, Output: 2 * kernel.Dollar}
	body := `{"model":"mock-gpt","max_tokens":5,"messages":[{"role":"user","content":"twelve bytes"}]}`
	var rows ledger
	for i := range 9 {
		rows = append(rows, call(t, base, "/v1/chat/completions", "sk-gateway", body, price, i))
	}
	src, err := reconcile.NewSource(store.ProviderOpenAI, reconcile.Endpoint{BaseURL: base + "/v1", AdminKey: "sk-admin-mock"})
	require.NoError(t, err)
	targets := func(context.Context) ([]reconcile.Target, error) {
		return []reconcile.Target{{Provider: "p", Source: src, Deployments: map[string]reconcile.Deployment{"d1": {ProviderModel: "mock-gpt"}}}}, nil
	}
	type seen struct {
		res   *reconcile.Result
		alert bool
	}
	var got []seen
	obs := reconcile.ObserverFunc(func(_ context.Context, provider string, res *reconcile.Result, alert bool, err error) {
		require.NoError(t, err)
		require.Equal(t, "p", provider)
		got = append(got, seen{res, alert})
	})
	// The job reconciles the days before today: run it "tomorrow".
	tomorrow := time.Now().UTC().Truncate(reconcile.Day).Add(reconcile.Day + time.Hour)
	cfg := reconcile.JobConfig{Interval: time.Hour, Threshold: 0.05, Days: 1}
	require.NoError(t, cfg.Validate())
	job := reconcile.NewJob(cfg, targets, rows, obs, reconcile.WithClock(func() time.Time { return tomorrow }))

	require.Equal(t, 0, job.RunOnce(context.Background()))
	require.Len(t, got, 1)
	require.False(t, got[0].alert)
	require.Zero(t, got[0].res.Worst())

	// One request of ten bypasses the gateway: 10 % drift, above 5 %.
	call(t, base, "/v1/chat/completions", "sk-other", body, price, 100)
	require.Equal(t, 1, job.RunOnce(context.Background()))
	require.True(t, got[1].alert)
	require.InDelta(t, 0.1, got[1].res.Worst(), 1e-9)
}

func TestJobConfigValidate(t *testing.T) {
	require.NoError(t, reconcile.DefaultJobConfig().Validate())
	for _, c := range []reconcile.JobConfig{
		{Interval: -1, Days: 1}, {Interval: time.Second, Days: 1}, {Threshold: -1, Days: 1}, {Days: 0}, {Days: 100},
	} {
		require.ErrorIs(t, c.Validate(), reconcile.ErrJobConfig, "%+v", c)
	}
}
