package gateway_test

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
	"github.com/tollgate-ai/tollgate/store"
)

// The guardrails attached to a key's team apply to its tool calls: an
// e-mail in the arguments reaches the upstream as its placeholder (the echo
// shows it), a blocked word refuses the call.
func TestMCPToolCallsUnderTeamGuardrails(t *testing.T) {
	r := start(t, false)
	up := mcpUpstream(t, true)
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, r.st, "db", &store.MCPServer{ID: "db", URL: up.URL, Credential: sealer.Seal([]byte("up-secret")), PricePerCall: kernel.Cent})
	put(t, r.st, "eng", &store.Team{ID: "eng"})
	put(t, r.st, "pii", &store.Guardrail{ID: "pii", Kind: "pii", Action: "redact", On: []string{"pre", "post"}, Mandatory: true})
	put(t, r.st, "no-drop", &store.Guardrail{ID: "no-drop", Kind: "words", Action: "block", On: []string{"pre"}, Words: []string{"drop table"}})
	attach(t, r.st, store.AttachTeam, "eng", "pii", "no-drop")
	s := secret.New("tg-")
	put(t, r.st, "k1", &store.Key{ID: "k1", Prefix: secret.Display(s), Hashes: []store.KeyHash{{Hash: secret.Hash(s)}}, TeamID: "eng", MCPTools: []string{"db/*"}})

	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	var cs *sdk.ClientSession
	eventually(t, func() bool { // the configuration reaches the replica
		if cs == nil {
			if cs, err = c.Connect(t.Context(), &sdk.StreamableClientTransport{
				Endpoint: r.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{s}}, DisableStandaloneSSE: true,
			}, &sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"}); err != nil {
				cs = nil
				return false
			}
		}
		out, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "db__echo", Arguments: map[string]any{"text": "mail jane@example.com"}})
		return err == nil && out.Content[0].(*sdk.TextContent).Text == "mail [EMAIL]"
	})
	t.Cleanup(func() { _ = cs.Close() })

	_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "db__echo", Arguments: map[string]any{"text": "please DROP TABLE users"}})
	var w *jsonrpc.Error
	require.ErrorAs(t, err, &w)
	require.Equal(t, int64(mcp.CodeGuardrailBlocked), w.Code)
	require.Contains(t, w.Message, `Blocked by guardrail "no-drop"`)

	// The refused call is a $0 row marked with the guardrail, as a model
	// request refused by one is; the redacted call that ran is charged.
	require.NoError(t, r.st.Flush(t.Context()))
	all, err := r.st.Entries(t.Context(), store.LedgerFilter{})
	require.NoError(t, err)
	var refused, ran []store.LedgerEntry
	for _, e := range all {
		if e.KeyID != "k1" {
			continue
		}
		if e.Status == kernel.StatusRefused {
			refused = append(refused, e)
		} else {
			ran = append(ran, e)
		}
	}
	require.Len(t, refused, 1, "%+v", all)
	require.Equal(t, "guardrail:no-drop", refused[0].Deployment)
	require.Equal(t, mcp.ModelName("db", "echo"), refused[0].Model)
	require.Equal(t, kernel.Money(0), refused[0].Cost)
	require.Equal(t, "eng", refused[0].TeamID)
	require.NotEmpty(t, ran)
	require.Equal(t, kernel.Cent, ran[len(ran)-1].Cost)
}
