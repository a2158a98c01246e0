package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// TestClaudeCodeThroughProviders (issue 38): Claude Code (pinned in
// package-lock.json), non-interactive, against model groups served by
// Bedrock (Converse), Vertex AI's Gemini and the Gemini API: each answers,
// and the provider received Claude Code's instructions where its API puts
// them — Bedrock's `system` blocks, Gemini's `systemInstruction` — not
// dropped; the ledger names the group.
func TestClaudeCodeThroughProviders(t *testing.T) {
	testenv.NodePackage(t, "@anthropic-ai/claude-code")
	s := startSystem(t)
	s.bedrockGroup("cc-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", bedrockSecret)
	s.cli(nil, nil, "provider", "create", "p-vertex", "--type", "vertex",
		"--base-url", s.mockURL+"/v1/projects/acme/locations/us-central1", "--credential-file", s.vertexServiceAccount("tollgate@acme.iam.gserviceaccount.com"))
	s.cli(nil, nil, "deployment", "create", "d-cc-vertex", "--provider", "p-vertex", "--model", "gemini-2.5-flash")
	s.cli(nil, nil, "model", "create", "cc-vertex", "--deployments", "d-cc-vertex")
	s.cli(nil, nil, "price", "set", "cc-vertex", "--input", "0.30", "--output", "2.50")
	s.geminiGroup("cc-gemini", "AIza-e2e-claude-code")
	keyID, key := s.createKey("--alias", "claude-code", "--models", "cc-bedrock,cc-vertex,cc-gemini")
	s.waitKey(key)

	for _, tc := range []struct{ group, api string }{
		{"cc-bedrock", "bedrock"},
		{"cc-vertex", "gemini"},
		{"cc-gemini", "gemini"},
	} {
		t.Run(tc.group, func(t *testing.T) {
			before := len(receivedSystem(t, s.mockURL)[tc.api])
			// Its small model (titles, summaries) on the same group.
			s.runClaude(t, key, []string{"--model", tc.group, "Reply with the words claude through tollgate"},
				"ANTHROPIC_SMALL_FAST_MODEL="+tc.group, "ANTHROPIC_DEFAULT_HAIKU_MODEL="+tc.group)

			got := receivedSystem(t, s.mockURL)[tc.api][before:]
			require.NotEmpty(t, got, "the provider was called")
			var withInstructions int
			for _, sys := range got {
				// Its agent prompt, and the context it sends beside it.
				if strings.Contains(sys, "Claude Code") && strings.Contains(sys, "Today's date is") {
					withInstructions++
				}
			}
			require.Positive(t, withInstructions, "Claude Code's system prompt reached the provider's %s system field: %q", tc.api, got)
		})
	}
	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = s.ledger(keyID)
		seen := map[string]bool{}
		for _, r := range rows {
			seen[r.Model] = true
		}
		return seen["cc-bedrock"] && seen["cc-vertex"] && seen["cc-gemini"]
	}, 10*time.Second, 100*time.Millisecond, "every group's requests are in the ledger")
	for _, r := range rows {
		require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status, "%+v", r)
	}
}

// receivedSystem reads the system texts mockllm received, per API shape.
func receivedSystem(t *testing.T, mockURL string) map[string][]string {
	t.Helper()
	resp, err := http.Get(mockURL + "/received/system")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string][]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}
