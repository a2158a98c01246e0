package admin_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/postgres"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// replica serves one more admin server (gRPC over bufconn and its HTTP side
// on 127.0.0.1) over st, as another process sharing the database would, and
// returns the HTTP side's URL.
func replica(t *testing.T, st store.Store, sealer *secret.Sealer, now func() time.Time) string {
	t.Helper()
	srv := admin.New(st, sealer, admin.WithClock(now), admin.WithLogger(slog.New(slog.DiscardHandler)))
	conn := serveGRPC(t, srv)
	h, err := srv.HTTPHandler(context.Background(), conn)
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// carry gives browser b, pointed at base, the session cookie that from
// holds for its own base: the same browser reaching another replica behind
// one load balancer.
func carry(t *testing.T, from *browser, base string) *browser {
	t.Helper()
	u, err := url.Parse(from.base)
	require.NoError(t, err)
	b := newBrowser(t, base)
	to, err := url.Parse(base)
	require.NoError(t, err)
	b.c.Jar.SetCookies(to, from.c.Jar.Cookies(u))
	b.csrf = from.csrf
	return b
}

// TestConsoleSessionsAcrossReplicasAndRestart signs in on one admin replica
// and uses the session on another sharing the database, then after the first
// store is closed and opened again (a restart); the store keeps only the
// token's hash; sign-out on one replica ends the session on all; deleting the
// admin credential ends its sessions.
func TestConsoleSessionsAcrossReplicasAndRestart(t *testing.T) {
	opens := map[string]func(t *testing.T) (open func() store.Store){
		"sqlite": func(t *testing.T) func() store.Store {
			path := filepath.Join(t.TempDir(), "tollgate.db")
			return func() store.Store {
				st, err := sqlite.Open(t.Context(), path)
				require.NoError(t, err)
				return st
			}
		},
		"postgres": func(t *testing.T) func() store.Store {
			dsn := testenv.FreshPostgres(t)
			return func() store.Store {
				st, err := postgres.Open(t.Context(), dsn)
				require.NoError(t, err)
				return st
			}
		},
	}
	for name, mk := range opens {
		t.Run(name, func(t *testing.T) {
			open := mk(t)
			first := open()
			e := newEnv(t, first)
			e.rest(t)
			a := newBrowser(t, e.restBase)
			code, _, resp := a.signIn(e.adminKey)
			require.Equal(t, http.StatusOK, code)
			var token string
			for _, c := range resp.Cookies() {
				if c.Name == "tollgate_session" {
					token = c.Value
				}
			}
			require.NotEmpty(t, token)
			ses, err := first.(store.Sessions).GetSession(t.Context(), secret.Hash(token), e.clock.Now())
			require.NoError(t, err, "the store keeps the session under the token's hash")
			require.NotEqual(t, token, ses.Hash)

			// Another replica over its own connection to the same database.
			second := open()
			t.Cleanup(func() { _ = second.Close(context.Background()) })
			b := carry(t, a, replica(t, second, e.sealer, e.clock.Now))
			code, m := b.call("TeamService/CreateTeam", `{"team": {"id": "red"}}`)
			require.Equal(t, http.StatusOK, code, "%v", m)
			code, _, _ = b.do(http.MethodGet, "/ui/api/session", "")
			require.Equal(t, http.StatusOK, code)
			code, _, _ = b.do(http.MethodPost, "/tollgate.admin.v1.TeamService/ListTeams", `{}`) // no CSRF token
			require.Equal(t, http.StatusForbidden, code)

			// A restart: the first store is closed and opened again.
			require.NoError(t, first.Close(context.Background()))
			restarted := open()
			t.Cleanup(func() { _ = restarted.Close(context.Background()) })
			c := carry(t, a, replica(t, restarted, e.sealer, e.clock.Now))
			code, m = c.call("TeamService/ListTeams", `{}`)
			require.Equal(t, http.StatusOK, code)
			require.Len(t, m["teams"], 1)

			// Sign-out on one replica ends the session on every one.
			code, _, _ = b.do(http.MethodDelete, "/ui/api/session", "", "X-CSRF-Token", b.csrf)
			require.Equal(t, http.StatusNoContent, code)
			code, _ = c.call("TeamService/ListTeams", `{}`)
			require.Equal(t, http.StatusUnauthorized, code)

			// Deleting the admin credential ends its sessions.
			v := newBrowser(t, c.base)
			code, m, _ = v.signIn(e.adminKey)
			require.Equal(t, http.StatusOK, code, "%v", m)
			cred := m["credential"].(map[string]any)
			code, _ = v.call("TeamService/ListTeams", `{}`)
			require.Equal(t, http.StatusOK, code)
			require.NoError(t, restarted.Delete(t.Context(), store.KindAdmin, cred["id"].(string)))
			code, _ = v.call("TeamService/ListTeams", `{}`)
			require.Equal(t, http.StatusUnauthorized, code)
		})
	}
}
