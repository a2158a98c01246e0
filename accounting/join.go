package accounting

import (
	"context"
	"time"
)

// Join registers this replica with shared counters before it serves
// (RedisCounters.Join: the other replicas then wait for it after Redis loses
// its data); nothing for counters of one process.
func (a *Accountant) Join(ctx context.Context) error {
	if j, ok := a.counters.(interface {
		Join(ctx context.Context, now time.Time) error
	}); ok {
		return j.Join(ctx, a.now())
	}
	return nil
}
