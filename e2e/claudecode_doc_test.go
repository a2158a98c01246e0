package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClaudeCodeDocSteps runs docs/claude-code.md as written, mockllm standing
// in for api.anthropic.com: step 0 (the demo answers Claude Code's default
// model names), step 1 (provider, deployments, groups, prices), step 2 (the
// user, then the key) and the curl check, which must answer a msg_ id.
func TestClaudeCodeDocSteps(t *testing.T) {
	s := startSystem(t)
	messages := func(key, model, body string) (int, map[string]any) {
		code, _, b := s.post(key, "/v1/messages", `{"model":"`+model+`","max_tokens":32,`+body+`}`, "anthropic-version", "2023-06-01")
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
		return code, m
	}

	// Step 0: Claude Code's default names on the demo, a system message inside
	// messages as Claude Code sends it.
	for _, model := range []string{"claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-opus-4-1-20250805"} {
		code, m := messages(s.demoKey, model, `"messages":[{"role":"user","content":"Hello"},{"role":"system","content":"Be brief."},{"role":"user","content":"again"}]`)
		require.Equal(t, http.StatusOK, code, "%s: %v", model, m)
		require.True(t, strings.HasPrefix(m["id"].(string), "msg_"), "%v", m)
		require.Equal(t, model, m["model"], "the name the client asked for")
	}
	req, err := http.NewRequest(http.MethodGet, s.url+"/v1/models", nil)
	require.NoError(t, err)
	req.Header.Set("x-api-key", s.demoKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var list struct {
		Data []struct {
			Type        string
			ID          string
			DisplayName string `json:"display_name"`
		}
		HasMore bool   `json:"has_more"`
		FirstID string `json:"first_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	require.Equal(t, "demo", list.FirstID)
	require.Equal(t, "model", list.Data[0].Type)
	require.Equal(t, "demo", list.Data[0].DisplayName)
	require.False(t, list.HasMore)

	// Step 1, the provider's base URL being the mock's instead of Anthropic's.
	cred := []string{"ANTHROPIC_PROVIDER_KEY=sk-ant-doc"}
	s.cli(nil, cred, "provider", "create", "anthropic", "--type", "anthropic", "--base-url", s.mockURL+"/v1", "--credential-env", "ANTHROPIC_PROVIDER_KEY")
	s.cli(nil, nil, "deployment", "create", "anthropic-sonnet", "--provider", "anthropic", "--model", "claude-sonnet-4-5-20250929")
	s.cli(nil, nil, "model", "create", "claude-sonnet-4-5", "--deployments", "anthropic-sonnet", "--default-max-tokens", "8192")
	s.cli(nil, nil, "price", "set", "claude-sonnet-4-5", "--input", "3", "--output", "15")
	s.cli(nil, nil, "deployment", "create", "anthropic-haiku", "--provider", "anthropic", "--model", "claude-haiku-4-5-20251001")
	s.cli(nil, nil, "model", "create", "claude-haiku-4-5", "--deployments", "anthropic-haiku", "--default-max-tokens", "8192")
	s.cli(nil, nil, "price", "set", "claude-haiku-4-5", "--input", "1", "--output", "5")

	// Step 2.
	s.cli(nil, nil, "user", "create", "alice", "--email", "alice@example.com")
	_, key := s.createKey("--alias", "alice-laptop", "--user", "alice", "--budget", "50/monthly", "--rpm", "120",
		"--models", "claude-sonnet-4-5,claude-haiku-4-5")
	s.waitKey(key)

	// The curl check (Authorization: Bearer, as ANTHROPIC_AUTH_TOKEN sends it).
	for _, model := range []string{"claude-sonnet-4-5", "claude-haiku-4-5"} {
		code, m := messages(key, model, `"messages":[{"role":"user","content":"Hello"}]`)
		require.Equal(t, http.StatusOK, code, "%v", m)
		require.True(t, strings.HasPrefix(m["id"].(string), "msg_"), "%v", m)
	}
	// The group (claude-sonnet-4-5) is the name the key may use; the demo
	// group is not among its models.
	code, m := messages(key, "demo", `"messages":[{"role":"user","content":"Hello"}]`)
	require.Equal(t, http.StatusForbidden, code, "%v", m)
}
