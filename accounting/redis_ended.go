package accounting

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// forgetBatch bounds the cached reservations one Expire checks in Redis.
const forgetBatch = 1000

// forgetEnded drops from the cache the reservations whose lease ended more
// than a minute ago and whose record Redis no longer holds under this
// replica's epoch: another replica's lease loop expired them (or their safety
// TTL ran out). A record gone while the epoch changed (or before this replica
// registered under one) stays cached: Redis lost it, and the next rejoin
// re-registers it, so that its settlement, however late, or its expiry
// reaches the ledger (docs/accounting.md, the late settlement).
func (c *RedisCounters) forgetEnded(ctx context.Context, nowN int64) {
	c.mu.Lock()
	epoch := c.epoch
	var ids []string
	for id, rec := range c.cache {
		if len(ids) == forgetBatch {
			break
		}
		if rec.Deadline <= nowN-int64(time.Minute) {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	if len(ids) == 0 || epoch == "" {
		return
	}
	// One transaction: the epoch and the records as of the same instant.
	var ep *goredis.StringCmd
	exists := make([]*goredis.IntCmd, len(ids))
	_, err := c.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		ep = p.Get(ctx, c.epochKey())
		for i, id := range ids {
			exists[i] = p.Exists(ctx, c.recordKey(id))
		}
		return nil
	})
	if err != nil || ep.Val() != epoch {
		return // unknown, or Redis lost its data: the rejoin needs them
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	for i, id := range ids {
		if exists[i].Val() == 0 {
			delete(c.cache, id)
		}
	}
}
