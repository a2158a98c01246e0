package formal_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// tool returns the path of a prover or model checker; like testenv's servers
// it skips locally and fails under CI=true when the tool is missing.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if testenv.CI() {
		t.Fatalf("formal: %s (Debian package %s) is required under CI=true", name, pkg)
	}
	t.Skipf("formal: %s (Debian package %s) not on PATH; skipped (fails under CI=true)", name, pkg)
	return ""
}

// redisClient connects to the throw-away Redis of `make test`.
func redisClient(t *testing.T) *goredis.Client {
	t.Helper()
	opt, err := goredis.ParseURL(testenv.Redis(t))
	require.NoError(t, err)
	c := goredis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newPrefix is a key prefix of its own; its keys are deleted at the end.
func newPrefix(t *testing.T, c *goredis.Client) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	p := "f" + hex.EncodeToString(b)
	t.Cleanup(func() { flushPrefix(t, c, p) })
	return p
}

// flushPrefix deletes every key of prefix p: a Redis restart for that prefix.
func flushPrefix(t *testing.T, c *goredis.Client, p string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := c.Keys(ctx, "{"+p+"}:*").Result()
	require.NoError(t, err)
	if len(keys) > 0 {
		require.NoError(t, c.Del(ctx, keys...).Err())
	}
}
