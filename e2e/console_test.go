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
	SecretPrefix     string   `json:"secret_prefix"`
	Created          string   `json:"created"`
	ChatStatus       int      `json:"chat_status"`
	RequestRows      int      `json:"request_rows"`
	RequestDetail    string   `json:"request_detail"`
	SpendSeries      []string `json:"spend_series"`
	SpendByTeam      []string `json:"spend_by_team_hourly"`
	SpendTiming      string   `json:"spend_timing"`
	SpendCold        []int64  `json:"spend_cold_ms"`
	TeamRow          string   `json:"team_row"`
	TopSpenders      string   `json:"top_spenders"`
	Budgets          string   `json:"budgets"`
	RotatedDiffers   bool     `json:"rotated_differs"`
	RotatedStatus    int      `json:"rotated_status"`
	OldInGrace       int      `json:"old_in_grace_status"`
	RevokedStatus    int      `json:"revoked_status"`
	AuditHasRevoke   bool     `json:"audit_has_revoke"`
	GuardrailRow     string   `json:"guardrail_row"`
	GuardrailsAfter  int      `json:"guardrail_rows_after_delete"`
	MCPRow           string   `json:"mcp_row"`
	MCPPage          string   `json:"mcp_page"`
	MCPCredShown     bool     `json:"mcp_credential_shown"`
	MCPAfterDelete   int      `json:"mcp_rows_after_delete"`
	MCPCallStatus    int      `json:"mcp_call_status"`
	MCPSpendServers  string   `json:"mcp_spend_servers"`
	MCPSpendTools    string   `json:"mcp_spend_tools"`
	CachePage        string   `json:"cache_page"`
	RunStatus        int      `json:"run_status"`
	AlertSinkRow     string   `json:"alert_sink_row"`
	AlertsPage       string   `json:"alerts_page"`
	AlertSecretShown bool     `json:"alert_secret_shown"`
	RunsPage         string   `json:"runs_page"`
	TagsPage         string   `json:"tags_page"`
	PhoneOverflow    bool     `json:"phone_overflow"`
	FirstTab         string   `json:"first_tab"`
	OpenedByKeys     bool     `json:"opened_by_keyboard"`
	KeyboardNav      string   `json:"keyboard_nav"`
	NoCSRFStatus     int      `json:"no_csrf_status"`
	ViewerSeesKey    bool     `json:"viewer_sees_key"`
	UserRow          string   `json:"user_row"`
	MemberRemoved    bool     `json:"member_removed"`
	DeleteConfirm    string   `json:"delete_confirm"`
	KeptAfterDismiss int      `json:"kept_after_dismiss"`
	UserDeleted      bool     `json:"user_deleted"`
	HealthBefore     string   `json:"health_before"`
	HealthAfter      string   `json:"health_after"`
	CoolingCell      string   `json:"cooling_cell"`
	BrokenStatus     int      `json:"broken_status"`
	CredentialShown  bool     `json:"credential_shown"`
	ProviderRow      string   `json:"provider_row"`
	ConsoleModel     int      `json:"console_model_status"`
	UnpricedWarning  string   `json:"unpriced_warning"`
	UnpricedListed   int      `json:"unpriced_listed"`
	MissingSection   string   `json:"missing_section"`
	ModelDeleted     bool     `json:"model_deleted"`
	ViewerCreate     int      `json:"viewer_create_forms"`
	ViewerWriteResp  struct {
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
		"ADMIN_KEY="+adminKey, "DEMO_KEY="+s.demoKey, "VIEWER_KEY="+viewer.Secret, "CHROMIUM="+chromium, "SHOTS="+shots,
		"MOCK_URL="+s.mockURL, "DEAD_URL=http://"+testenv.FreeAddr(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node console.mjs: %s", stderr.String())
	var got consoleRun
	require.NoError(t, json.Unmarshal([]byte(lastLine(stdout.String())), &got), "console.mjs printed %q", stdout.String())

	t.Logf("page load times (ms, page load until rendered): %v", got.LoadMS)
	t.Logf("spend page chart draw (ms: the breakdown call, the charts' render): %s", got.SpendTiming)
	t.Logf("spend page cold loads (ms, reload until rendered): %v", got.SpendCold)
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
	require.Equal(t, "console-pii pii redact pre, post Delete", got.GuardrailRow)
	require.Zero(t, got.GuardrailsAfter)
	// The MCP page (issue 31): a server added in the console, its prices and
	// rpm shown, its credential never; the spend tables by server and tool.
	require.Contains(t, got.MCPRow, "console-mcp")
	require.Contains(t, got.MCPRow, "/mcp $0.002000 create_issue=$0.010000 600 set")
	require.False(t, got.MCPCredShown, "an MCP server's credential is never shown back")
	require.Contains(t, got.MCPPage, "Tool spend by server")
	require.Contains(t, got.MCPPage, "Tool spend by tool")
	require.Zero(t, got.MCPAfterDelete)
	require.Equal(t, 200, got.MCPCallStatus, "the demo key's call of the demo MCP server's echo")
	require.Contains(t, got.MCPSpendServers, "demo $0.001000 1", "the call's spend by server")
	require.Contains(t, got.MCPSpendTools, "demo/echo $0.001000 1", "and by tool")
	// The cache page renders its summary and tables (no group is cached here).
	require.Contains(t, got.CachePage, "No cached model group answered a request")
	require.Contains(t, got.CachePage, "By key")
	// Alerts, runs and tags (issue 36).
	require.Equal(t, 200, got.RunStatus, "the run's tagged call")
	require.Contains(t, got.AlertSinkRow, "console-hook webhook")
	require.Contains(t, got.AlertSinkRow, "/hook yes", "the sink is signed")
	require.False(t, got.AlertSecretShown, "a sink's secret is never shown back")
	require.Contains(t, got.AlertsPage, "Thresholds: 50, 80, 100 % (default)")
	require.Contains(t, got.AlertsPage, "Fired")
	require.Contains(t, got.RunsPage, "key:"+got.Created+"/console-run")
	require.Contains(t, got.TagsPage, "feature=console")
	require.Contains(t, got.TagsPage, "Tag budgets")
	require.False(t, got.PhoneOverflow, "no horizontal scrolling of the page at phone width")
	require.Equal(t, "Create a key", got.FirstTab, "Tab from the page reaches its first control")
	require.True(t, got.OpenedByKeys, "Enter opens the create form")
	require.Equal(t, "#/teams", got.KeyboardNav, "Enter on a navigation link follows it")
	require.Equal(t, 403, got.NoCSRFStatus, "a cookie without the CSRF token is refused")
	// Edit and delete of principals, with confirmation.
	require.Contains(t, got.UserRow, "alice@example.com", "the user's email was edited")
	require.Contains(t, got.UserRow, "$7.00/monthly", "the user's budget was edited")
	require.True(t, got.MemberRemoved, "the member was removed from the team")
	require.Contains(t, got.DeleteConfirm, "Delete user alice?")
	require.Equal(t, 1, got.KeptAfterDismiss, "a dismissed confirmation deletes nothing")
	require.True(t, got.UserDeleted)
	// Models, deployments and providers made in the console, and their health.
	require.Contains(t, got.HealthBefore, "demo-mock=healthy")
	require.False(t, got.CredentialShown, "a provider credential is never shown back")
	require.Contains(t, got.ProviderRow, "set", "the provider has a credential")
	require.Equal(t, 200, got.ConsoleModel, "the model created in the console serves")
	require.Contains(t, got.UnpricedWarning, `Warning: deployment "unpriced-d": no price for model "mock-gpt"`)
	require.Equal(t, 1, got.UnpricedListed, "the deployment without a price is marked in the table")
	require.Contains(t, got.MissingSection, "unpriced-d")
	require.NotContains(t, got.MissingSection, "console-d", "a free deployment has a price that says $0")
	require.GreaterOrEqual(t, got.BrokenStatus, 500, "the model whose provider is down fails")
	require.Contains(t, got.HealthAfter, "dead-d=cooling_down")
	require.Contains(t, got.HealthAfter, "console-d=healthy")
	require.Contains(t, got.CoolingCell, "cooling down until")
	require.True(t, got.ModelDeleted)
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
