package redis

import (
	"context"
	"errors"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Usage is the spent and reserved money of ref's window of p current at now,
// as Redis holds them (zero when the window was never touched).
func (c *Counters) Usage(ctx context.Context, ref kernel.ScopeRef, p kernel.Period, now time.Time) (spent, reserved kernel.Money, err error) {
	sp := windowAt(ref, p, now, c)
	v, err := c.rdb.HMGet(ctx, sp.key, sp.field+"sp", sp.field+"rs").Result()
	if err != nil {
		return 0, 0, unavailable("usage", err)
	}
	return kernel.Money(parseInt(v[0])), kernel.Money(parseInt(v[1])), nil
}

// InFlight is the number of open reservations charged to ref.
func (c *Counters) InFlight(ctx context.Context, ref kernel.ScopeRef) (int64, error) {
	v, err := c.rdb.HGet(ctx, c.scopeKey(ref), "f").Result()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, unavailable("in flight", err)
	}
	return parseInt(v), nil
}

func parseInt(v any) int64 {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
