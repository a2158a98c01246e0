package accounting

import (
	"context"
	"errors"
	"fmt"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Settling with the spill written first.
//
// Settle closes the reservation in the counters, then writes the entry to
// the spill and queues it for the ledger. A process killed between the two
// (after Redis closed the reservation, before the spill write) left the
// request with no ledger row at all, and no reservation left to expire: the
// provider's bill for it was lost (seen in e2e/TestFaultKill9 once expiries
// stopped over-charging). When the counters can price the settlement before
// closing it (the replica admitted the request: RedisCounters keeps its
// price), the entry is written to the spill first, under the spill's gate, so
// a crash at any point leaves the row for the next process to replay. A crash
// between the spill write and the close replays the row while the reservation
// stays open until its lease ends; the expiry's own row is then dropped by the
// ledger (it keeps the first entry of a request id) and the counters charge
// the window a second time until it is next seeded: conservative. A
// settlement that finds the reservation already closed leaves its line in the
// spill unrecorded; the line goes at the next checkpoint, and a replay after
// a crash is one more entry of an id the ledger already holds (or will: the
// expiry's), so it records the request once either way.
//
// The gate is held across the counters' round trip, so a spill checkpoint
// (every second) waits for the settlements in flight: a Redis round trip
// normally, up to the Redis timeout while Redis stalls.

// settleCoster is implemented by counters that can price a settlement before
// closing it.
type settleCoster interface {
	settleCost(id string, u kernel.Usage, p *kernel.Price) (kernel.Money, bool)
}

var _ settleCoster = (*RedisCounters)(nil)

// settleCost is the cost Settle would charge reservation id for u, when this
// replica admitted it through Redis.
func (c *RedisCounters) settleCost(id string, u kernel.Usage, p *kernel.Price) (kernel.Money, bool) {
	c.mu.Lock()
	rec := c.cache[id]
	c.mu.Unlock()
	if rec == nil {
		return 0, false
	}
	if p != nil {
		return kernel.Cost(*p, u), true
	}
	return kernel.Cost(rec.Price, u), true
}

// settleAhead is Settle with e, priced at cost, written to the spill before
// the counters close the reservation.
func (a *Accountant) settleAhead(ctx context.Context, e store.LedgerEntry, p *kernel.Price, cost kernel.Money) (kernel.Money, error) {
	now := a.now()
	one := oneEntry(e)
	ep := &one[0]
	ep.Cost, ep.EndedAt = cost, now
	var (
		charged   kernel.Money
		settleErr error
	)
	err := a.spill.writeThen(ep, func() error {
		s, ok, err := a.settleCounters(ctx, now, ep, p)
		if err != nil || !ok {
			settleErr = err
			return nil // not settled here: nothing to record
		}
		charged = s.Cost
		ep.Cost, ep.EndedAt = s.Cost, s.SettledAt
		return a.appendLedger(ctx, one)
	})
	switch {
	case err != nil && !errors.Is(err, errAppend):
		// The spill could not be written: settle as without one (record
		// logs the spill's failure).
		return a.settleThenRecord(ctx, *ep, p)
	case settleErr != nil:
		return 0, fmt.Errorf("accounting: settle %s: %w", ep.RequestID, settleErr)
	}
	return charged, err
}
