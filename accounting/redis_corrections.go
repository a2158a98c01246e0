package accounting

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// maxCorrections bounds the settlements kept for Redis while it is
// unreachable; beyond it the counters learn the oldest ones only when their
// windows are next seeded from the ledger.
const maxCorrections = 100_000

// correction is a settlement charged to the ledger while Redis could not
// count it: the close it still owes Redis.
type correction struct {
	rec    *record
	at     time.Time // the settlement time: the windows it is charged to
	cost   kernel.Money
	tokens int64 // Usage.Total(), for the tpm correction
}

// settleWithout settles rec, which this replica admitted, without Redis:
// Redis is the counter, the ledger is the truth. closeErr nil means Redis
// answered but no longer holds the reservation while its lease still runs, so
// Redis lost it (a restart or a flush): its windows are rebuilt from the
// ledger, which will hold this settlement. Otherwise Redis could not be
// reached (or did not answer in time): the close is queued and applied by
// Expire once Redis answers again — idempotent, since the script closes a
// reservation at most once.
func (c *RedisCounters) settleWithout(now time.Time, rec *record, u kernel.Usage, cost kernel.Money, st kernel.Status, closeErr error) kernel.Settlement {
	c.mu.Lock()
	delete(c.cache, rec.ID)
	c.settledLocked(correction{rec: rec, at: now, cost: cost, tokens: u.Total()})
	dropped := false
	if closeErr != nil {
		if len(c.corrections) >= maxCorrections {
			c.corrections, dropped = c.corrections[1:], true
		}
		c.corrections = append(c.corrections, correction{rec: rec, at: now, cost: cost, tokens: u.Total()})
	}
	c.mu.Unlock()
	if closeErr != nil {
		c.opts.logger.Warn("redis: settlement not counted in Redis; recorded in the ledger, counters corrected when Redis answers",
			"request_id", rec.ID, "err", closeErr, "dropped_oldest_correction", dropped)
	}
	return settlement(rec, now, u, cost, rec.Reserved, st)
}

// applyCorrections closes, in Redis, the reservations settled while it was
// unreachable, oldest first; it stops at the first error and keeps the rest.
func (c *RedisCounters) applyCorrections(ctx context.Context) error {
	for {
		c.mu.Lock()
		if len(c.corrections) == 0 {
			c.mu.Unlock()
			return nil
		}
		x := c.corrections[0]
		c.mu.Unlock()
		if _, _, _, err := c.close(ctx, x.at, x.rec, int64(x.cost), true, x.tokens); err != nil {
			return err
		}
		c.mu.Lock()
		c.corrections = c.corrections[1:]
		c.mu.Unlock()
	}
}

// PendingCorrections is the number of settlements recorded in the ledger that
// Redis has not counted yet (it was unreachable when they settled).
func (c *RedisCounters) PendingCorrections() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.corrections)
}
