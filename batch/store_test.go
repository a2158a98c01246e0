package batch_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/batch"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// The pending batches and the poller's lease behave the same on every
// embedded backend.
func TestStoreOnEveryBackend(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) store.Store{
		"memstore": func(*testing.T) store.Store { return memstore.New() },
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close(context.Background()) })
			return st
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			bs := batch.NewStore(open(t))
			p := &batch.Pending{ID: "batch_1", API: batch.APIOpenAI, Provider: "p", KeyID: "k", Lines: 2, CreatedAt: time.Unix(100, 0).UTC()}
			require.NoError(t, bs.Add(ctx, p))
			require.ErrorIs(t, bs.Add(ctx, p), store.ErrConflict)
			got, err := bs.Get(ctx, "batch_1")
			require.NoError(t, err)
			require.Equal(t, *p, got)

			t0 := time.Unix(1000, 0)
			ok, err := bs.Acquire(ctx, "a", t0, time.Minute)
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = bs.Acquire(ctx, "b", t0.Add(30*time.Second), time.Minute)
			require.NoError(t, err)
			require.False(t, ok, "a holds it")
			ok, err = bs.Acquire(ctx, "a", t0.Add(50*time.Second), time.Minute)
			require.NoError(t, err)
			require.True(t, ok, "a renews")
			ok, err = bs.Acquire(ctx, "b", t0.Add(2*time.Minute), time.Minute)
			require.NoError(t, err)
			require.True(t, ok, "a's lease ran out")

			list, err := bs.List(ctx)
			require.NoError(t, err)
			require.Len(t, list, 1, "the lease is not a pending batch")
			require.NoError(t, bs.Done(ctx, "batch_1"))
			require.NoError(t, bs.Done(ctx, "batch_1"), "done twice is fine")
			_, err = bs.Get(ctx, "batch_1")
			require.ErrorIs(t, err, store.ErrNotFound)
		})
	}
}
