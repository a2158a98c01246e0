package accounting_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// countingLedger counts the entries appended and keeps none: the
// accountant's own garbage per settlement, without a store's.
type countingLedger struct{ n int }

func (l *countingLedger) Append(_ context.Context, entries ...store.LedgerEntry) error {
	l.n += len(entries)
	return nil
}

func (*countingLedger) Flush(context.Context) error { return nil }

// BenchmarkLocalAdmitSettle: one admission and its settlement per op on the
// in-process counters, the ledger's Append doing nothing.
func BenchmarkLocalAdmitSettle(b *testing.B) {
	l := &countingLedger{}
	a := accounting.NewLocalAccountant(l, memstore.New(), time.Now, slog.New(slog.DiscardHandler))
	key := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}, Limits: &kernel.Limits{}}
	price := kernel.Price{Input: 1_000_000, Output: 1_000_000}
	ids := make([]string, 1<<12)
	for i := range ids {
		ids[i] = "r" + strconv.Itoa(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := ids[i%len(ids)]
		i++
		d, err := a.Admit(ctx, &kernel.AdmitRequest{ID: id, Scopes: []kernel.Scope{key}, Model: "m", PromptBytes: 100, MaxTokens: 100, Price: price})
		if err != nil || !d.Admitted {
			b.Fatalf("admit: %v %+v", err, d)
		}
		if _, err := a.Settle(ctx, store.LedgerEntry{RequestID: id, KeyID: "k", Model: "m", Usage: kernel.Usage{Input: 25, Output: 10}, Status: kernel.StatusCompleted}); err != nil {
			b.Fatal(err)
		}
	}
	if l.n != i {
		b.Fatalf("%d entries appended, want %d", l.n, i)
	}
}
