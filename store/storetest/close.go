package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

func (s *suite) closeTests() []test {
	tests := []test{
		{"RefusesAfterClose", func(t *testing.T) {
			st := s.open(t)
			require.NoError(t, st.Close(timeout(t, 30*time.Second)))
			ctx := t.Context()
			_, err := st.Get(ctx, store.KindKey, "k")
			require.ErrorIs(t, err, store.ErrClosed)
			_, err = st.List(ctx, store.KindKey, "", 0)
			require.ErrorIs(t, err, store.ErrClosed)
			_, err = st.Put(ctx, obj(store.KindKey, "k", `{}`), -1)
			require.ErrorIs(t, err, store.ErrClosed)
			require.ErrorIs(t, st.Delete(ctx, store.KindKey, "k"), store.ErrClosed)
			_, err = st.Revision(ctx)
			require.ErrorIs(t, err, store.ErrClosed)
			require.ErrorIs(t, st.Append(ctx, Gen(1, 1, "late")...), store.ErrClosed)
			_, err = st.ScopeSpend(ctx, kernel.ScopeRef{}, time.Time{}, time.Time{})
			require.ErrorIs(t, err, store.ErrClosed)
			_, err = st.Series(ctx, kernel.ScopeRef{}, base, base.Add(time.Hour), time.Hour)
			require.ErrorIs(t, err, store.ErrClosed)
			_, err = st.Entries(ctx, store.LedgerFilter{})
			require.ErrorIs(t, err, store.ErrClosed)
			require.ErrorIs(t, st.AppendAudit(ctx, store.AuditEntry{Actor: "a"}), store.ErrClosed)
			_, err = st.ListAudit(ctx, 0, 0)
			require.ErrorIs(t, err, store.ErrClosed)
		}},
		{"ClosesWatches", func(t *testing.T) {
			st := s.open(t)
			ch := st.Watch(t.Context())
			require.NoError(t, st.Close(timeout(t, 30*time.Second)))
			requireWatchEnds(t, ch, "watch channel not closed by Close")
		}},
	}
	if s.reopen == nil {
		return tests
	}
	return append(tests,
		test{"FlushesLedger", func(t *testing.T) {
			st := s.open(t)
			entries := Gen(3000, 11, "cl")
			for _, e := range entries {
				require.NoError(t, st.Append(t.Context(), e))
			}
			// No Flush: Close must write everything queued.
			require.NoError(t, st.Close(timeout(t, 60*time.Second)))
			st = s.reopen(t, st)
			t.Cleanup(func() { require.NoError(t, st.Close(timeout(t, 30*time.Second))) })
			got := all(t, st, store.LedgerFilter{}, 1000)
			require.Len(t, got, len(entries))
			for _, scope := range allScopes(entries) {
				want, _, _ := charged(entries, scope, time.Time{}, time.Time{})
				spent, err := st.ScopeSpend(t.Context(), scope, time.Time{}, time.Time{})
				require.NoError(t, err)
				require.Equal(t, want, spent, "scope %+v", scope)
			}
		}},
		test{"KeepsConfigAndRevision", func(t *testing.T) {
			st := s.open(t)
			v, err := st.Put(t.Context(), obj(store.KindKey, "k", `{"a":1}`), 0)
			require.NoError(t, err)
			_, err = st.Put(t.Context(), obj(store.KindKey, "gone", `{}`), 0)
			require.NoError(t, err)
			require.NoError(t, st.Delete(t.Context(), store.KindKey, "gone"))
			rev, err := st.Revision(t.Context())
			require.NoError(t, err)
			require.NoError(t, st.AppendAudit(t.Context(), store.AuditEntry{Actor: "a", Action: "key.create", Kind: store.KindKey, Target: "k"}))
			require.NoError(t, st.Close(timeout(t, 30*time.Second)))

			st = s.reopen(t, st)
			t.Cleanup(func() { require.NoError(t, st.Close(timeout(t, 30*time.Second))) })
			got, err := st.Get(t.Context(), store.KindKey, "k")
			require.NoError(t, err)
			require.Equal(t, v, got.Version)
			require.JSONEq(t, `{"a":1}`, string(got.Doc))
			rev2, err := st.Revision(t.Context())
			require.NoError(t, err)
			require.Equal(t, rev, rev2, "the revision survives a restart")
			v2, err := st.Put(t.Context(), obj(store.KindKey, "k", `{"a":2}`), v)
			require.NoError(t, err)
			require.Greater(t, v2, rev, "versions keep growing after a restart")
			audit, err := st.ListAudit(t.Context(), 0, 0)
			require.NoError(t, err)
			require.Len(t, audit, 1)
		}},
	)
}
