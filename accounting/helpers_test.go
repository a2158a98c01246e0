package accounting_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
)

func client(t testing.TB) *goredis.Client {
	t.Helper()
	u := testenv.Redis(t)
	opt, err := goredis.ParseURL(u)
	require.NoError(t, err)
	opt.PoolSize = 128
	c := goredis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// prefix is a key prefix of its own for one test; its keys are deleted at the end.
func prefix(t testing.TB, c *goredis.Client) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	p := "t" + hex.EncodeToString(b)
	t.Cleanup(func() { deletePrefix(c, p) })
	return p
}

func deletePrefix(c *goredis.Client, p string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, "{"+p+"}:*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 500 {
			c.Del(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		c.Del(ctx, keys...)
	}
}

// zeroSeed is the SeedFunc of an empty ledger.
func zeroSeed(context.Context, kernel.ScopeRef, time.Time, time.Time) (kernel.Money, error) {
	return 0, nil
}
