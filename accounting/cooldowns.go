package accounting

import (
	"context"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Cooldowns shared by replicas: when one replica takes a deployment out of
// rotation it writes the end of the cooldown into one hash (field: the
// deployment id, value: Unix milliseconds); every replica reads the hash
// every poll interval and adopts the cooldowns that have not ended. A later
// end always wins, so the order of writes does not matter; ended entries are
// removed by whoever sees them.

func (c *RedisCounters) cooldownsKey() string { return c.tag + "cooldowns" }

// PublishCooldown records that deployment id is out of rotation until until.
// It does not wait for Redis: the write runs in its own goroutine, bounded by
// the counters' timeout, and a failure only delays the other replicas.
func (c *RedisCounters) PublishCooldown(id string, until time.Time) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.timeout)
		defer cancel()
		// Keep the later end: HSET only when absent or earlier.
		if err := publishScript.Run(ctx, c.rdb, []string{c.cooldownsKey()}, id, until.UnixMilli()).Err(); err != nil {
			c.opts.logger.Warn("redis: publish cooldown failed", "deployment", id, "err", err)
		}
	}()
}

// WatchCooldowns calls adopt with every cooldown in force (other replicas'
// included) every interval until ctx ends.
func (c *RedisCounters) WatchCooldowns(ctx context.Context, every time.Duration, now func() time.Time, adopt func(id string, until time.Time)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		c.pollCooldowns(ctx, now(), adopt)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *RedisCounters) pollCooldowns(ctx context.Context, now time.Time, adopt func(id string, until time.Time)) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	m, err := c.rdb.HGetAll(ctx, c.cooldownsKey()).Result()
	if err != nil {
		if ctx.Err() == nil {
			c.opts.logger.Warn("redis: read cooldowns failed", "err", err)
		}
		return
	}
	var ended []string
	for id, v := range m {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= now.UnixMilli() {
			ended = append(ended, id)
			continue
		}
		adopt(id, time.UnixMilli(n))
	}
	if len(ended) > 0 {
		args := append([]any{now.UnixMilli()}, toAny(ended)...)
		_ = pruneScript.Run(ctx, c.rdb, []string{c.cooldownsKey()}, args...).Err()
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// publishScript sets field ARGV[1] of KEYS[1] to ARGV[2] unless it holds a
// later end already.
var publishScript = goredis.NewScript(`
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if cur < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 0`)

// pruneScript removes the fields ARGV[2..] of KEYS[1] that ended by ARGV[1]
// (a cooldown published since the read is kept).
var pruneScript = goredis.NewScript(`
for i = 2, #ARGV do
  local v = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if v <= tonumber(ARGV[1]) then redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return 0`)
