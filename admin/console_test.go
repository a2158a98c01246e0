package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/admin"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// browser is an HTTP client with a cookie jar, like the console's page.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

func (b *browser) do(method, path, body string, headers ...string) (int, map[string]any, *http.Response) {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, strings.NewReader(body))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, resp
}

func (b *browser) signIn(key string) (int, map[string]any, *http.Response) {
	b.t.Helper()
	code, m, resp := b.do(http.MethodPost, "/ui/api/session", `{"key": "`+key+`"}`)
	if code == http.StatusOK {
		b.csrf, _ = m["csrf"].(string)
	}
	return code, m, resp
}

func (b *browser) call(method, body string) (int, map[string]any) {
	b.t.Helper()
	code, m, _ := b.do(http.MethodPost, "/tollgate.admin.v1."+method, body, "X-CSRF-Token", b.csrf)
	return code, m
}

// TestConsoleSession checks sign-in, the cookie's attributes, CSRF, roles
// through the session, sign-out and expiry.
func TestConsoleSession(t *testing.T) {
	e := newEnv(t, memstore.New())
	viewerKey := e.credential(t, adminv1.AdminRole_ADMIN_ROLE_VIEWER, "")
	e.rest(t)

	// The pages are served, with a strict content security policy.
	anon := newBrowser(t, e.restBase)
	code, _, resp := anon.do(http.MethodGet, "/ui/", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	code, _, resp = anon.do(http.MethodGet, "/ui/vendor/chart.umd.min.js", "")
	require.Equal(t, http.StatusOK, code)
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)
	code, _, _ = anon.do(http.MethodGet, "/ui/vendor/chart.umd.min.js", "", "If-None-Match", etag)
	require.Equal(t, http.StatusNotModified, code, "an unchanged asset is not sent again")
	code, _, _ = anon.do(http.MethodGet, "/ui/api/session", "")
	require.Equal(t, http.StatusUnauthorized, code)

	code, m, _ := anon.signIn("tga-wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, m["message"], "unknown admin credential")

	adm := newBrowser(t, e.restBase)
	code, m, resp = adm.signIn(e.adminKey)
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, m, "key")
	cred, _ := m["credential"].(map[string]any)
	require.Equal(t, "ADMIN_ROLE_ADMIN", cred["role"])
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "tollgate_session" {
			cookie = c
		}
	}
	require.NotNil(t, cookie)
	require.True(t, cookie.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, cookie.SameSite)
	require.Equal(t, int(admin.SessionTTL.Seconds()), cookie.MaxAge)
	require.NotContains(t, cookie.Value, e.adminKey)

	// The cookie works only with the CSRF token.
	code, _ = adm.call("TeamService/CreateTeam", `{"team": {"id": "red"}}`)
	require.Equal(t, http.StatusOK, code)
	code, _, _ = adm.do(http.MethodPost, "/tollgate.admin.v1.TeamService/ListTeams", `{}`)
	require.Equal(t, http.StatusForbidden, code)
	code, _, _ = adm.do(http.MethodPost, "/tollgate.admin.v1.TeamService/ListTeams", `{}`, "X-CSRF-Token", "forged")
	require.Equal(t, http.StatusForbidden, code)

	// A viewer's session reads and is refused writes (403, PermissionDenied).
	v := newBrowser(t, e.restBase)
	code, _, _ = v.signIn(viewerKey)
	require.Equal(t, http.StatusOK, code)
	code, m = v.call("TeamService/ListTeams", `{}`)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, m["teams"], 1)
	code, m = v.call("TeamService/CreateTeam", `{"team": {"id": "blue"}}`)
	require.Equal(t, http.StatusForbidden, code)
	require.InDelta(t, 7, m["code"], 0)

	// Sign-out ends the session.
	code, _, _ = v.do(http.MethodDelete, "/ui/api/session", "", "X-CSRF-Token", v.csrf)
	require.Equal(t, http.StatusNoContent, code)
	code, _ = v.call("TeamService/ListTeams", `{}`)
	require.Equal(t, http.StatusUnauthorized, code)

	// A session expires after SessionTTL.
	e.clock.Advance(admin.SessionTTL)
	code, _, _ = adm.do(http.MethodGet, "/ui/api/session", "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = adm.call("TeamService/ListTeams", `{}`)
	require.Equal(t, http.StatusUnauthorized, code)
}
