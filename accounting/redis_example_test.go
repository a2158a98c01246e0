package accounting_test

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
)

// Counters shared by replicas: admit on every scope at once, settle with the
// exact usage. The SeedFunc is the ledger's ScopeSpend (a PostgreSQL store's,
// flushed first).
func ExampleNewRedisCounters() {
	ctx := context.Background()
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
	defer func() { _ = rdb.Close() }()
	ledger := func(ctx context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error) {
		return 0, nil // e.g. pg.Flush(ctx) then pg.ScopeSpend(ctx, scope, since, until)
	}
	c := accounting.NewRedisCounters(rdb, ledger, accounting.WithFailurePolicy(accounting.FailClosed))
	defer c.Close()

	key := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, Limits: &kernel.Limits{
		RPM:     60,
		Budgets: []kernel.BudgetWindow{{Limit: 5 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodDaily}}},
	}}
	now := time.Now()
	d, err := c.Admit(ctx, now, &kernel.AdmitRequest{
		ID: "req-1", Scopes: []kernel.Scope{key}, Model: "gpt", PromptBytes: 1200, MaxTokens: 256,
		Price: kernel.Price{Input: 2500 * kernel.MicroUSD, Output: 10 * kernel.Cent},
	})
	if err != nil || !d.Admitted {
		fmt.Println("refused:", err, d.Reason)
		return
	}
	s, ok, err := c.Settle(ctx, time.Now(), "req-1", kernel.Usage{Input: 300, Output: 120}, kernel.StatusCompleted)
	fmt.Println(s.Cost, ok, err)
}
