package accounting

import (
	"context"
	"fmt"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// SettleBatch settles a batch admitted as one reservation (batch/): the
// counters settle the reservation with the total usage of the lines that
// ran (charging it at the batch price the reservation was admitted with and
// releasing the rest), and the ledger records each line's entry rather than
// one entry for the reservation. Both halves are idempotent: the counters
// settle a reservation once, the ledger records a request id once. When the
// reservation is gone (the counters of one process restarted) the lines are
// still recorded, and the counters learn them from the ledger at the next
// seed.
func (a *Accountant) SettleBatch(ctx context.Context, reservationID string, entries []store.LedgerEntry) error {
	var total kernel.Usage
	for i := range entries {
		u := entries[i].Usage
		total.Input += u.Input
		total.CachedInput += u.CachedInput
		total.CacheWrite += u.CacheWrite
		total.Output += u.Output
		total.Reasoning += u.Reasoning
	}
	if _, _, err := a.counters.Settle(ctx, a.now(), reservationID, total, kernel.StatusCompleted); err != nil {
		return fmt.Errorf("accounting: settle batch %s: %w", reservationID, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if err := a.ledger.Append(ctx, entries...); err != nil {
		return fmt.Errorf("accounting: settle batch %s: %w", reservationID, err)
	}
	return nil
}
