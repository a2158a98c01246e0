package cache

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the backend replicas share: one string per entry under
// "<prefix><key>", set with its TTL (SET … PX), so that Redis expires it
// itself. The total size is Redis's to cap: run it with maxmemory and
// maxmemory-policy volatile-lru (every entry has a TTL), as
// docs/caching.md says; this side refuses entries above maxEntry bytes.
type Redis struct {
	rdb      redis.UniversalClient
	prefix   string
	maxEntry int64
}

var _ Backend = (*Redis)(nil)

// DefaultRedisPrefix prefixes every key the cache writes.
const DefaultRedisPrefix = "tollgate:cache:"

// NewRedis returns the Redis backend over rdb; prefix "" is
// DefaultRedisPrefix, maxEntry 0 is DefaultMaxEntry.
func NewRedis(rdb redis.UniversalClient, prefix string, maxEntry int64) *Redis {
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	if maxEntry <= 0 {
		maxEntry = DefaultMaxEntry
	}
	return &Redis{rdb: rdb, prefix: prefix, maxEntry: maxEntry}
}

// Get returns the stored value, nil when there is none.
func (r *Redis) Get(ctx context.Context, key Key) ([]byte, error) {
	b, err := r.rdb.Get(ctx, r.prefix+key.String()).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}

// Set stores val for ttl (at least a millisecond).
func (r *Redis) Set(ctx context.Context, key Key, val []byte, ttl time.Duration) error {
	if int64(len(val)) > r.maxEntry {
		return ErrTooLarge
	}
	return r.rdb.Set(ctx, r.prefix+key.String(), val, max(ttl, time.Millisecond)).Err()
}
