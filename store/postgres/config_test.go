package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/postgres"
)

func open(t testing.TB, u string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, u, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

func TestConfigVersions(t *testing.T) {
	ctx := t.Context()
	s := open(t, testenv.FreshPostgres(t))

	rev0, err := s.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(0), rev0)

	doc := json.RawMessage(`{"id":"k1","prefix":"tg-ab"}`)
	v1, err := s.Put(ctx, store.Object{Kind: store.KindKey, ID: "k1", Doc: doc}, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), v1)
	_, err = s.Put(ctx, store.Object{Kind: store.KindKey, ID: "k1", Doc: doc}, 0)
	require.ErrorIs(t, err, store.ErrConflict)

	got, err := s.Get(ctx, store.KindKey, "k1")
	require.NoError(t, err)
	require.Equal(t, v1, got.Version)
	require.JSONEq(t, string(doc), string(got.Doc))

	v2, err := s.Put(ctx, store.Object{Kind: store.KindKey, ID: "k1", Doc: json.RawMessage(`{"id":"k1"}`)}, v1)
	require.NoError(t, err)
	require.Greater(t, v2, v1)
	_, err = s.Put(ctx, store.Object{Kind: store.KindKey, ID: "k1", Doc: doc}, v1)
	require.ErrorIs(t, err, store.ErrConflict, "stale version")
	v3, err := s.Put(ctx, store.Object{Kind: store.KindKey, ID: "k1", Doc: doc}, -1)
	require.NoError(t, err)
	require.Greater(t, v3, v2)

	for _, id := range []string{"k3", "k2", "k4"} {
		_, err := s.Put(ctx, store.Object{Kind: store.KindKey, ID: id, Doc: doc}, -1)
		require.NoError(t, err)
	}
	list, err := s.List(ctx, store.KindKey, "k1", 2)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "k2", list[0].ID)
	require.Equal(t, "k3", list[1].ID)
	all, err := s.List(ctx, store.KindKey, "", 0)
	require.NoError(t, err)
	require.Len(t, all, 4)
	none, err := s.List(ctx, store.KindTeam, "", 0)
	require.NoError(t, err)
	require.Empty(t, none)

	revBefore, err := s.Revision(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, store.KindKey, "k2"))
	require.ErrorIs(t, s.Delete(ctx, store.KindKey, "k2"), store.ErrNotFound)
	_, err = s.Get(ctx, store.KindKey, "k2")
	require.ErrorIs(t, err, store.ErrNotFound)
	revAfter, err := s.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, revBefore+1, revAfter, "a delete bumps the revision, a failed one does not")
}

// TestWatchAcrossReplicas: a change made through one Store reaches a watcher
// on another Store (its own pool and connections) within one second.
func TestWatchAcrossReplicas(t *testing.T) {
	u := testenv.FreshPostgres(t)
	a, b := open(t, u), open(t, u)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch := b.Watch(ctx)
	time.Sleep(200 * time.Millisecond) // let the watcher LISTEN

	for i := range 5 {
		start := time.Now()
		rev, err := a.Put(ctx, store.Object{Kind: store.KindTeam, ID: "t", Doc: json.RawMessage(`{}`)}, -1)
		require.NoError(t, err)
		deadline := time.After(time.Second)
	wait:
		for {
			select {
			case got := <-ch:
				if got >= rev {
					t.Logf("change %d seen by the other replica after %s", i, time.Since(start))
					break wait
				}
			case <-deadline:
				t.Fatalf("revision %d not seen within 1s", rev)
			}
		}
	}
	cancel()
	for range ch { //nolint:revive // drain until the watcher closes the channel
	}
}

// TestWatchPollFallback: with LISTEN impossible (the notification is never
// sent because the change is made behind the store's back), the poll still
// reports the revision.
func TestWatchPollFallback(t *testing.T) {
	u := testenv.FreshPostgres(t)
	s := open(t, u, postgres.WithPollInterval(300*time.Millisecond))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch := s.Watch(ctx)
	time.Sleep(100 * time.Millisecond)
	_, err := s.Pool().Exec(ctx, `UPDATE config_revision SET value = value + 41`)
	require.NoError(t, err)
	select {
	case got := <-ch:
		require.Equal(t, int64(41), got)
	case <-time.After(2 * time.Second):
		t.Fatal("poll fallback did not report the revision")
	}
}
