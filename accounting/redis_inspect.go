package accounting

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Usage is the spent and reserved money of ref's window of p current at now,
// as Redis holds them (zero when the window was never touched).
func (c *RedisCounters) Usage(ctx context.Context, ref kernel.ScopeRef, p kernel.Period, now time.Time) (spent, reserved kernel.Money, err error) {
	sp := windowAt(c.scopeKey(ref), ref, p, now)
	v, err := c.rdb.HGet(ctx, sp.key, sp.field).Result()
	if errors.Is(err, goredis.Nil) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, unavailable("usage", err)
	}
	w := unpackFields(v) // seeded, spent, reserved
	return kernel.Money(w[1]), kernel.Money(w[2]), nil
}

// InFlight is the number of open reservations charged to ref.
func (c *RedisCounters) InFlight(ctx context.Context, ref kernel.ScopeRef) (int64, error) {
	v, err := c.rdb.HGet(ctx, c.scopeKey(ref), "n").Result()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable("in flight", err)
	}
	return unpackFields(v)[0], nil // f, m, r, k
}

// unpackFields decodes a packed hash field of batchLua (little-endian
// doubles); a field of another layout reads as zeros.
func unpackFields(v string) [4]int64 {
	var out [4]int64
	for i := 0; i < len(out) && 8*i+8 <= len(v); i++ {
		out[i] = int64(math.Float64frombits(binary.LittleEndian.Uint64([]byte(v[8*i : 8*i+8]))))
	}
	return out
}

func parseInt(v any) int64 {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
