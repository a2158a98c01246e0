package accounting

import (
	"context"
	"fmt"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/kernel"
)

// A run's counters are its scope hash, which expires (its TTL: the run's
// Limits.TTL or the lease, plus a minute, from its last admission); the next
// admission of the run seeds it again from the ledger. That seed misses any
// settlement of the run another replica still holds uncommitted (queued in
// its ledger writer while PostgreSQL is slow or down): the run would overspend
// its budget (the spin model's -DEARLYRUNEXP). So a replica keeps the hash of
// every run it holds such a settlement of: at each Sync it extends the TTL of
// those hashes to at least keepRunsFor, until its ledger confirmed them.

// keepRunsFor is the least TTL Sync (every second) leaves on the hash of a run
// with an uncommitted settlement: many Syncs, so that one failing or late
// does not let it expire.
const keepRunsFor = time.Minute

// keepRunsLua extends the TTL of every hash of KEYS that exists to at least
// ARGV[1] ms (a hash that expired stays gone: it is seeded again from the
// ledger, and this replica re-registers the settlement into a wiped Redis).
var keepRunsLua = goredis.NewScript(`
local keep = tonumber(ARGV[1])
for _, k in ipairs(KEYS) do
  local t = redis.call('PTTL', k)
  if t >= 0 and t < keep then redis.call('PEXPIRE', k, keep) end
end
return 0
`)

// uncommittedRunsLocked is the hash key of every run scope charged by a
// settlement the ledger has not confirmed durable (redis_uncommitted.go);
// c.mu held.
func (c *RedisCounters) uncommittedRunsLocked() []string {
	var keys []string
	add := func(x *correction) {
		for _, ref := range x.rec.Scopes {
			if ref.Kind == kernel.ScopeRun {
				if k := c.scopeKey(ref); !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
	}
	for _, x := range c.unc.settled {
		add(&x)
	}
	for i := range c.unc.queued {
		add(&c.unc.queued[i].correction)
	}
	return keys
}

// keepRuns extends the TTL of the hash of every run this replica holds an
// uncommitted settlement of (none: no round trip).
func (c *RedisCounters) keepRuns(ctx context.Context) error {
	c.mu.Lock()
	keys := c.uncommittedRunsLocked()
	c.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	if err := keepRunsLua.Run(ctx, c.rdb, keys, keepRunsFor.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("accounting: keep runs: %w", err)
	}
	return nil
}
