package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// Two stores on one file stand for two processes: each has its own
// connections and learns of the other's writes only from the file.
func TestWatchSeesOtherProcessWithinOneSecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := openAt(t, path)
	b := openAt(t, path, sqlite.WithPollInterval(250*time.Millisecond))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, a.Close(ctx))
		require.NoError(t, b.Close(ctx))
	}()
	ch := b.Watch(t.Context())
	for i, id := range []string{"k1", "k2", "k3"} {
		v, err := a.Put(t.Context(), store.Object{Kind: store.KindKey, ID: id, Doc: []byte(`{}`)}, 0)
		require.NoError(t, err)
		select {
		case rev := <-ch:
			require.Equal(t, v, rev, "change %d", i)
		case <-time.After(time.Second):
			t.Fatalf("change %d by the other process not seen within 1s", i)
		}
		got, err := b.Get(t.Context(), store.KindKey, id)
		require.NoError(t, err)
		require.Equal(t, v, got.Version)
	}
	// Writes from both sides share one revision sequence.
	vb, err := b.Put(t.Context(), store.Object{Kind: store.KindKey, ID: "k1", Doc: []byte(`{"b":1}`)}, -1)
	require.NoError(t, err)
	ra, err := a.Revision(t.Context())
	require.NoError(t, err)
	require.Equal(t, vb, ra)
	_, err = a.Put(t.Context(), store.Object{Kind: store.KindKey, ID: "k1", Doc: []byte(`{"a":1}`)}, vb-1)
	require.ErrorIs(t, err, store.ErrConflict)
}

func TestOpenRejectsNonFilePaths(t *testing.T) {
	for _, p := range []string{"", ":memory:", "x.db?mode=memory"} {
		_, err := sqlite.Open(t.Context(), p)
		require.Error(t, err, "path %q", p)
	}
}
