package accounting_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
)

// deadClient is a client of a port nothing listens on.
func deadClient(t *testing.T) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{
		Addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), DialTimeout: 200 * time.Millisecond, MaxRetries: -1,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestFailClosed(t *testing.T) {
	c := accounting.NewRedisCounters(deadClient(t), zeroSeed)
	t.Cleanup(c.Close)
	d, err := c.Admit(t.Context(), time.Now(), &kernel.AdmitRequest{
		ID: "x", Scopes: []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}, Limits: &kernel.Limits{}}},
	})
	require.ErrorIs(t, err, accounting.ErrUnavailable)
	require.False(t, d.Admitted)
}

// TestLocalFallback: with Redis unreachable, admission runs on a local
// kernel.State whose budget windows are seeded from the ledger first; if the
// ledger cannot be read either, nothing is admitted.
func TestLocalFallback(t *testing.T) {
	ctx := t.Context()
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}
	var ledgerDown bool
	seed := func(_ context.Context, ref kernel.ScopeRef, since, until time.Time) (kernel.Money, error) {
		if ledgerDown {
			return 0, errors.New("ledger down")
		}
		require.Equal(t, key, ref)
		return 95, nil // already spent according to the ledger
	}
	c := accounting.NewRedisCounters(deadClient(t), seed, accounting.WithFailurePolicy(accounting.LocalFallback))
	t.Cleanup(c.Close)
	lim := &kernel.Limits{RPM: 3, Shortfall: kernel.Reject, Budgets: []kernel.BudgetWindow{
		{Limit: 100, Period: kernel.Period{Kind: kernel.PeriodDaily}},
	}}
	price := kernel.Price{Output: 1_000_000}
	now := time.Date(2026, 11, 30, 12, 0, 30, 0, time.UTC)
	req := func(id string, maxTokens int64) *kernel.AdmitRequest {
		return &kernel.AdmitRequest{ID: id, Scopes: []kernel.Scope{{Ref: key, Limits: lim}}, MaxTokens: maxTokens, Price: price}
	}
	d, err := c.Admit(ctx, now, req("a", 10))
	require.NoError(t, err)
	require.Equal(t, kernel.ReasonBudgetExceeded, d.Reason, "95 spent + 10 > 100: the seed counts")
	d, err = c.Admit(ctx, now, req("b", 5))
	require.NoError(t, err)
	require.True(t, d.Admitted)
	s, ok, err := c.Settle(ctx, now, "b", kernel.Usage{Output: 5}, kernel.StatusCompleted)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, kernel.Money(5), s.Cost)

	ledgerDown = true
	_, err = c.Admit(ctx, now.Add(24*time.Hour), req("c", 1)) // a new daily window needs seeding
	require.ErrorIs(t, err, accounting.ErrUnavailable)
}
