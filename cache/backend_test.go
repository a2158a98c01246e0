package cache

import (
	"context"
	"crypto/sha256"
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
	got, err := b.Get(ctx, key("absent"))
	require.NoError(t, err)
	require.Nil(t, got)

	require.NoError(t, b.Set(ctx, key("k"), []byte("v1"), time.Second))
	got, err = b.Get(ctx, key("k"))
	require.NoError(t, err)
	require.Equal(t, "v1", string(got))
	require.NoError(t, b.Set(ctx, key("k"), []byte("v2"), 2*time.Second))
	got, err = b.Get(ctx, key("k"))
	require.NoError(t, err)
	require.Equal(t, "v2", string(got))

	advance(2100 * time.Millisecond)
	got, err = b.Get(ctx, key("k"))
	require.NoError(t, err)
	require.Nil(t, got, "expired")

	require.ErrorIs(t, b.Set(ctx, key("big"), make([]byte, maxEntry+1), time.Minute), ErrTooLarge)
}

func TestMemoryBackend(t *testing.T) {
	c := newClock()
	backendContract(t, NewMemory(1<<20, 100, c.now), c.add, 100)
}

// key is a test's key named s.
func key(s string) Key { return Key(sha256.Sum256([]byte(s))) }

// The in-process backend holds at most its cap, each entry counted as its
// value and entryOverhead, evicting the least recently used entry first;
// slots freed are used again.
func TestMemoryEvictsLRU(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(3*(entryOverhead+9), 200, nil) // three entries of 9 bytes
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, m.Set(ctx, key(k), []byte("123456789"), time.Hour))
	}
	_, _ = m.Get(ctx, key("a")) // a is now the most recent
	require.NoError(t, m.Set(ctx, key("d"), []byte("123456789"), time.Hour))
	require.Equal(t, 3, m.Len())
	require.EqualValues(t, 3*(entryOverhead+9), m.Size())
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		v, err := m.Get(ctx, key(k))
		require.NoError(t, err)
		require.Equal(t, want, v != nil, k)
	}
	for _, k := range []string{"c", "d", "a"} {
		_, _ = m.Get(ctx, key(k))
	}
	// c and d are the least recent: a larger entry evicts both.
	require.NoError(t, m.Set(ctx, key("e"), make([]byte, 2*9+entryOverhead), time.Hour))
	for k, want := range map[string]bool{"a": true, "c": false, "d": false, "e": true} {
		v, err := m.Get(ctx, key(k))
		require.NoError(t, err)
		require.Equal(t, want, v != nil, k)
	}
	require.EqualValues(t, 5, m.slots, "the slots of b, c and d were reused")
	require.ErrorIs(t, m.Set(ctx, key("f"), make([]byte, 201), time.Hour), ErrTooLarge)
}

// Many more entries than the cap holds, replaced and expired at random: the
// size never passes the cap and always equals what the entries count for,
// and the list holds exactly the map's entries.
func TestMemoryChurn(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	m := NewMemory(40*entryOverhead, 1000, clk.now)
	for i := range 5000 {
		k := key(fmt.Sprint(i % 97))
		switch i % 5 {
		case 0, 1, 2:
			require.NoError(t, m.Set(ctx, k, make([]byte, i%300), time.Duration(1+i%7)*time.Second))
		case 3:
			_, _ = m.Get(ctx, k)
		case 4:
			clk.add(time.Second)
		}
		require.LessOrEqual(t, m.Size(), int64(40*entryOverhead))
		requireListed(t, m)
	}
}

// requireListed: m's list holds exactly its map's entries, and its size is
// what they count for.
func requireListed(t *testing.T, m *Memory) {
	t.Helper()
	var size int64
	n := 0
	for j := m.slot(0).next; j != 0; j = m.slot(j).next {
		size += int64(len(m.slot(j).val)) + entryOverhead
		require.Equal(t, j, m.m[m.slot(j).key])
		n++
	}
	require.Equal(t, len(m.m), n)
	require.Equal(t, m.Size(), size)
}

// Entries over several chunks of the slab, then the oldest evicted and
// their slots reused: every entry is found, the slab adds no chunk while
// slots are free.
func TestMemoryChunks(t *testing.T) {
	ctx := context.Background()
	const n = 3*chunkLen + 5
	m := NewMemory(n*(entryOverhead+8), 0, newClock().now)
	for i := range n {
		require.NoError(t, m.Set(ctx, key(fmt.Sprint(i)), fmt.Appendf(nil, "%08d", i), time.Hour))
	}
	require.Len(t, m.chunks, 4)
	for i := range n {
		v, err := m.Get(ctx, key(fmt.Sprint(i)))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%08d", i), string(v))
	}
	requireListed(t, m)
	for i := range chunkLen { // each evicts the least recently used
		require.NoError(t, m.Set(ctx, key(fmt.Sprint("new", i)), fmt.Appendf(nil, "%08d", i), time.Hour))
	}
	require.Len(t, m.chunks, 4)
	require.Equal(t, n, m.Len())
	v, err := m.Get(ctx, key("0"))
	require.NoError(t, err)
	require.Nil(t, v, "the least recently used went first")
	requireListed(t, m)
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
	ttl, err := rdb.PTTL(context.Background(), prefix+key("absent").String()).Result()
	require.NoError(t, err)
	require.Negative(t, ttl)
	require.NoError(t, NewRedis(rdb, prefix, 0).Set(context.Background(), key("x"), []byte("y"), time.Hour))
	ttl, err = rdb.PTTL(context.Background(), prefix+key("x").String()).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute, "the TTL is Redis's own")
}
