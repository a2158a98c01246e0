package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/store"
)

// sessionsTests: a session is found by its hash until it expires, replaced by
// a second put, deleted once, and purged after its expiry; with a durable
// backend it survives a reopen. Every backend must implement store.Sessions.
func (s *suite) sessionsTests() []test {
	t0 := time.Unix(1_750_000_000, 0).UTC()
	ses := store.Session{Hash: "ab12", AdminID: "adm-1", CreatedAt: t0, ExpiresAt: t0.Add(8 * time.Hour)}
	tests := []test{
		{"PutGetDeletePurge", func(t *testing.T) {
			st := s.fresh(t)
			ss, ok := st.(store.Sessions)
			require.True(t, ok, "%T does not implement store.Sessions", st)
			ctx := timeout(t, 30*time.Second)
			require.NoError(t, ss.PutSession(ctx, ses))
			got, err := ss.GetSession(ctx, "ab12", t0)
			require.NoError(t, err)
			require.Equal(t, ses, got)
			_, err = ss.GetSession(ctx, "cd34", t0) // another token
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = ss.GetSession(ctx, "ab12", ses.ExpiresAt) // expired
			require.ErrorIs(t, err, store.ErrNotFound)

			other := ses
			other.AdminID = "adm-2"
			require.NoError(t, ss.PutSession(ctx, other))
			got, err = ss.GetSession(ctx, "ab12", t0)
			require.NoError(t, err)
			require.Equal(t, "adm-2", got.AdminID)

			later := store.Session{Hash: "ef56", AdminID: "adm-1", CreatedAt: t0, ExpiresAt: t0.Add(9 * time.Hour)}
			require.NoError(t, ss.PutSession(ctx, later))
			n, err := ss.PurgeSessions(ctx, ses.ExpiresAt)
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			_, err = ss.GetSession(ctx, "ab12", t0)
			require.ErrorIs(t, err, store.ErrNotFound)

			require.NoError(t, ss.DeleteSession(ctx, "ef56"))
			require.ErrorIs(t, ss.DeleteSession(ctx, "ef56"), store.ErrNotFound)
			_, err = ss.GetSession(ctx, "ef56", t0)
			require.ErrorIs(t, err, store.ErrNotFound)
		}},
	}
	if s.reopen != nil {
		tests = append(tests, test{"SurviveReopen", func(t *testing.T) {
			st := s.open(t)
			ctx := timeout(t, 30*time.Second)
			require.NoError(t, st.(store.Sessions).PutSession(ctx, ses))
			require.NoError(t, st.Close(ctx))
			st = s.reopen(t, st)
			t.Cleanup(func() { require.NoError(t, st.Close(timeout(t, 30*time.Second))) })
			got, err := st.(store.Sessions).GetSession(ctx, "ab12", t0)
			require.NoError(t, err)
			require.Equal(t, ses, got)
		}})
	}
	return tests
}
