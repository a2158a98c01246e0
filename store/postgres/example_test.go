package postgres_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/postgres"
)

// Open a store, append a settled request to the group-committed ledger and
// read the spend back.
func ExampleOpen() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, "postgres://tollgate@127.0.0.1:5432/tollgate?sslmode=disable",
		postgres.WithMaxConns(16), postgres.WithWindow(2*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = s.Close(ctx) }() // drains the ledger queue

	now := time.Now()
	_ = s.Append(ctx, store.LedgerEntry{
		RequestID: "req-1", KeyID: "k1", Model: "gpt", Deployment: "openai-gpt",
		Usage: kernel.Usage{Input: 300, Output: 120}, Cost: 1_950_000, StartedAt: now, EndedAt: now,
	})
	_ = s.Flush(ctx)
	spent, err := s.ScopeSpend(ctx, kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, now.Truncate(time.Hour), time.Time{})
	fmt.Println(spent, err)
}
