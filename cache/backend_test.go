package cache

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// clock is a settable clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// backendContract is what every Backend does: absent is nil, a value lives
// until its TTL, a set replaces, an entry above the cap is refused.
func backendContract(t *testing.T, b Backend, advance func(time.Duration), maxEntry int) {
	ctx := context.Background()
	got, err := b.Get(ctx, "absent")
	require.NoError(t, err)
	require.Nil(t, got)

	require.NoError(t, b.Set(ctx, "k", []byte("v1"), time.Second))
	got, err = b.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v1", string(got))
	require.NoError(t, b.Set(ctx, "k", []byte("v2"), 2*time.Second))
	got, err = b.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v2", string(got))

	advance(2100 * time.Millisecond)
	got, err = b.Get(ctx, "k")
	require.NoError(t, err)
	require.Nil(t, got, "expired")

	require.ErrorIs(t, b.Set(ctx, "big", make([]byte, maxEntry+1), time.Minute), ErrTooLarge)
}

func TestMemoryBackend(t *testing.T) {
	c := newClock()
	backendContract(t, NewMemory(1<<20, 100, c.now), c.add, 100)
}

// The in-process backend holds at most its cap, evicting the least recently
// used entry first.
func TestMemoryEvictsLRU(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(30, 30, nil) // three entries of 1+9 bytes
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, m.Set(ctx, k, []byte("123456789"), time.Hour))
	}
	_, _ = m.Get(ctx, "a") // a is now the most recent
	require.NoError(t, m.Set(ctx, "d", []byte("123456789"), time.Hour))
	require.Equal(t, 3, m.Len())
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		v, err := m.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, want, v != nil, k)
	}
}

func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(testenv.Redis(t))
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Redis expires entries itself: the contract runs on the real clock.
func TestRedisBackend(t *testing.T) {
	rdb := redisClient(t)
	prefix := fmt.Sprintf("test:%d:", time.Now().UnixNano())
	backendContract(t, NewRedis(rdb, prefix, 100), time.Sleep, 100)
	ttl, err := rdb.PTTL(context.Background(), prefix+"absent").Result()
	require.NoError(t, err)
	require.Negative(t, ttl)
	require.NoError(t, NewRedis(rdb, prefix, 0).Set(context.Background(), "x", []byte("y"), time.Hour))
	ttl, err = rdb.PTTL(context.Background(), prefix+"x").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute, "the TTL is Redis's own")
}
