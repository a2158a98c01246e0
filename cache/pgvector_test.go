package cache

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

func pgIndex(t *testing.T, now func() time.Time) *PGVector {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.FreshPostgres(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	idx := NewPGVector(pool, "", now)
	require.NoError(t, idx.Migrate(ctx))
	require.NoError(t, idx.Migrate(ctx), "idempotent")
	return idx
}

func TestSemanticPGVector(t *testing.T) {
	semanticContract(t, pgIndex(t, nil))
}

// Rows expire, vectors of another dimension are not compared, an upsert
// replaces a key's vector.
func TestPGVectorRows(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	idx := pgIndex(t, clk.now)
	require.NoError(t, idx.Add(ctx, "ns", []float32{1, 0, 0}, "a", clk.now().Add(time.Minute)))
	require.NoError(t, idx.Add(ctx, "ns", []float32{1, 0}, "two", clk.now().Add(time.Hour)))
	key, score, ok, err := idx.Nearest(ctx, "ns", []float32{1, 0.1, 0}, 0.9)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "a", key)
	require.InDelta(t, 0.995, score, 0.001)

	require.NoError(t, idx.Add(ctx, "ns", []float32{0, 1, 0}, "a", clk.now().Add(time.Minute)))
	_, _, ok, err = idx.Nearest(ctx, "ns", []float32{1, 0.1, 0}, 0.9)
	require.NoError(t, err)
	require.False(t, ok, "a's vector was replaced")

	clk.add(2 * time.Minute)
	_, _, ok, err = idx.Nearest(ctx, "ns", []float32{0, 1, 0}, 0)
	require.NoError(t, err)
	require.False(t, ok, "expired")
	key, _, ok, err = idx.Nearest(ctx, "ns", []float32{1, 0}, 0.5)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "two", key)
}
