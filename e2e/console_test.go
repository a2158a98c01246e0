package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// consoleRun is what e2e/console.mjs observed.
type consoleRun struct {
	Pages     []string         `json:"pages"`
	LoadMS    map[string]int64 `json:"load_ms"`
	Errors    []string         `json:"console_errors"`
	BadSignIn string           `json:"bad_signin"`
	Cookie    struct {
		HTTPOnly bool    `json:"httpOnly"`
		SameSite string  `json:"sameSite"`
		Expires  float64 `json:"expires"`
	} `json:"cookie"`
	SecretPrefix    string   `json:"secret_prefix"`
	Created         string   `json:"created"`
	ChatStatus      int      `json:"chat_status"`
	RequestRows     int      `json:"request_rows"`
	RequestDetail   string   `json:"request_detail"`
	SpendSeries     []string `json:"spend_series"`
	SpendByTeam     []string `json:"spend_by_team_hourly"`
	TeamRow         string   `json:"team_row"`
	TopSpenders     string   `json:"top_spenders"`
	Budgets         string   `json:"budgets"`
	RotatedDiffers  bool     `json:"rotated_differs"`
	RotatedStatus   int      `json:"rotated_status"`
	OldInGrace      int      `json:"old_in_grace_status"`
	RevokedStatus   int      `json:"revoked_status"`
	AuditHasRevoke  bool     `json:"audit_has_revoke"`
	PhoneOverflow   bool     `json:"phone_overflow"`
	FirstTab        string   `json:"first_tab"`
	OpenedByKeys    bool     `json:"opened_by_keyboard"`
	KeyboardNav     string   `json:"keyboard_nav"`
	NoCSRFStatus    int      `json:"no_csrf_status"`
	ViewerSeesKey   bool     `json:"viewer_sees_key"`
	ViewerCreate    int      `json:"viewer_create_forms"`
	ViewerWriteResp struct {
		Status int `json:"status"`
		Body   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"body"`
	} `json:"viewer_write"`
}

// TestConsoleInChromium signs in to the web console, creates a key and uses
// its secret on the data plane, finds the request in the requests page and the
// spend chart, rotates and revokes the key, and checks that a viewer is
// refused a write. Screenshots of every page go to e2e/screenshots/ (gitignored).
func TestConsoleInChromium(t *testing.T) {
	chromium := testenv.Chromium(t)
	nodeBin := testenv.Node(t)
	testenv.NodePackage(t, "playwright-core")
	s := startSystem(t)

	var viewer struct {
		Secret string `json:"secret"`
	}
	s.cli(&viewer, nil, "admin-key", "create", "--role", "viewer")
	require.NotEmpty(t, viewer.Secret)

	shots, err := filepath.Abs("screenshots")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(shots, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "console.mjs")
	cmd.Env = append(os.Environ(), "CONSOLE_URL=http://"+s.admin+"/ui/", "TOLLGATE_URL="+s.url,
		"ADMIN_KEY="+adminKey, "VIEWER_KEY="+viewer.Secret, "CHROMIUM="+chromium, "SHOTS="+shots)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node console.mjs: %s", stderr.String())
	var got consoleRun
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout.String())), &got), "console.mjs printed %q", stdout.String())

	t.Logf("page load times (ms, page load until rendered): %v", got.LoadMS)
	require.Empty(t, got.Errors, "no script error in the pages")
	require.Contains(t, got.BadSignIn, "unknown admin credential")
	require.True(t, got.Cookie.HTTPOnly, "the session cookie is HttpOnly")
	require.Equal(t, "Strict", got.Cookie.SameSite)
	require.Positive(t, got.Cookie.Expires, "the session cookie expires")
	require.Equal(t, "tg-", got.SecretPrefix)
	require.NotEmpty(t, got.Created)
	require.Equal(t, 200, got.ChatStatus, "the console-made key works on the data plane")
	require.Positive(t, got.RequestRows, "the request is in the requests page")
	require.Contains(t, got.RequestDetail, got.Created)
	require.Contains(t, got.RequestDetail, "completed")
	require.Contains(t, got.SpendSeries, "console-e2e ("+got.Created+")", "the key is a series of the spend chart")
	require.Contains(t, got.TopSpenders, got.Created)
	require.Equal(t, []string{"platform"}, got.SpendByTeam, "stacked by team, per hour")
	require.Contains(t, got.TeamRow, "$20.00/weekly", "the team's budget was changed in the console")
	require.Contains(t, got.Budgets, "team platform")
	require.Contains(t, got.Budgets, "key "+got.Created)
	require.True(t, got.RotatedDiffers)
	require.Equal(t, 200, got.RotatedStatus, "the rotated secret works")
	require.Equal(t, 200, got.OldInGrace, "the old secret works during the grace period")
	require.Equal(t, 401, got.RevokedStatus, "the revoked key is refused")
	require.True(t, got.AuditHasRevoke)
	require.False(t, got.PhoneOverflow, "no horizontal scrolling of the page at phone width")
	require.Equal(t, "Create a key", got.FirstTab, "Tab from the page reaches its first control")
	require.True(t, got.OpenedByKeys, "Enter opens the create form")
	require.Equal(t, "#/teams", got.KeyboardNav, "Enter on a navigation link follows it")
	require.Equal(t, 403, got.NoCSRFStatus, "a cookie without the CSRF token is refused")
	require.True(t, got.ViewerSeesKey)
	require.Zero(t, got.ViewerCreate, "a viewer gets no create form")
	require.Equal(t, 403, got.ViewerWriteResp.Status)
	require.Equal(t, 7, got.ViewerWriteResp.Body.Code, "PermissionDenied")
	for _, p := range got.Pages {
		st, err := os.Stat(p)
		require.NoError(t, err)
		require.Positive(t, st.Size())
	}
	require.GreaterOrEqual(t, len(got.Pages), 12)
}
