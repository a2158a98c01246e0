package groupcommit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
)

func Example() {
	// The FlushFunc writes one batch in one transaction; here it prints the
	// totals a backend would add to its hourly spend rows.
	flush := func(_ context.Context, batch []store.LedgerEntry) error {
		for _, t := range groupcommit.Totals(groupcommit.Unique(batch)) {
			fmt.Printf("scope %d %q hour %s: cost %d, %d requests\n",
				t.Scope.Kind, t.Scope.ID, t.Hour.Format("15:04"), t.Cost, t.Requests)
		}
		return nil
	}
	w := groupcommit.New(flush, groupcommit.WithWindow(time.Hour))
	ctx := context.Background()
	end := time.Date(2026, 1, 1, 9, 30, 0, 0, time.UTC)
	_ = w.Append(ctx,
		store.LedgerEntry{RequestID: "r1", KeyID: "k1", Cost: 5 * kernel.MicroUSD, EndedAt: end},
		store.LedgerEntry{RequestID: "r2", KeyID: "k1", Cost: 7 * kernel.MicroUSD, EndedAt: end},
		store.LedgerEntry{RequestID: "r1", KeyID: "k1", Cost: 5 * kernel.MicroUSD, EndedAt: end}, // a retry
	)
	// Flush does not wait for the (hour-long) window: it returns once the
	// batch is written.
	if err := w.Flush(ctx); err != nil {
		fmt.Println(err)
	}
	if err := w.Close(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println(w.Stats().Batches, "batch")
	// Output:
	// scope 0 "" hour 09:00: cost 12000, 2 requests
	// scope 5 "k1" hour 09:00: cost 12000, 2 requests
	// 1 batch
}
