package accounting_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-ai/tollgate/accounting"

	"github.com/stretchr/testify/require"
)

// A cooldown published by one replica reaches another through the hash; a
// later end wins over an earlier one whatever the order of the writes, and
// ended cooldowns are pruned.
func TestCooldownsSharedByReplicas(t *testing.T) {
	c := client(t)
	p := prefix(t, c)
	a := accounting.NewRedisCounters(c, zeroSeed, accounting.WithPrefix(p))
	b := accounting.NewRedisCounters(c, zeroSeed, accounting.WithPrefix(p))
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)

	now := time.Now().Truncate(time.Millisecond)
	var mu sync.Mutex
	seen := map[string]time.Time{}
	adopt := func(id string, until time.Time) { mu.Lock(); seen[id] = until; mu.Unlock() }
	get := func(id string) time.Time { mu.Lock(); defer mu.Unlock(); return seen[id] }

	a.PublishCooldown("dead", now.Add(30*time.Second))
	a.PublishCooldown("dead", now.Add(10*time.Second)) // earlier: ignored
	a.PublishCooldown("gone", now.Add(-time.Second))   // already over
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.WatchCooldowns(ctx, 10*time.Millisecond, func() time.Time { return now }, adopt)
	}()
	require.Eventually(t, func() bool { return get("dead").Equal(now.Add(30 * time.Second)) }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		n, err := c.HLen(context.Background(), "{"+p+"}:cooldowns").Result()
		return err == nil && n == 1
	}, 5*time.Second, 10*time.Millisecond, "the ended cooldown is pruned")
	cancel()
	<-done
	require.True(t, get("gone").IsZero(), "an ended cooldown is never adopted")
}
