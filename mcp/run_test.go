package mcp_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
)

// runTransport names the run of every request.
type runTransport struct {
	run  string
	next http.RoundTripper
}

func (r runTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(mcp.HeaderRunID, r.run)
	return r.next.RoundTrip(req)
}

// Tool calls of one agent run are admitted against the run's own level (as
// model requests of that run are: kernel.WithRun) and carry its id to the
// ledger, so spend groups by run and a run budget stops a loop: the run is
// named by x-tollgate-run-id, or else is the 2025-11-25 session.
func TestToolCallsOfARun(t *testing.T) {
	f := newFixture(t, true)
	runner := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "runner"}
	f.cat.keys["tg-runner"] = &mcp.Caller{
		KeyID: "runner",
		// Each run may spend 25¢; github/echo is 10¢ a call.
		Scopes: []kernel.Scope{{Ref: runner, Limits: &kernel.Limits{Run: &kernel.RunPolicy{Budget: 25 * kernel.Cent}}}},
		Grants: []mcp.Grant{{Level: "key runner", Patterns: []string{"*/*"}}},
	}
	withRun := func(run string) *sdk.ClientSession {
		c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
		cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
			Endpoint: f.gateways[0].URL + "/mcp", DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: runTransport{run, &keyTransport{key: "tg-runner"}}},
		}, &sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	echo := func(cs *sdk.ClientSession) error {
		_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__echo", Arguments: map[string]any{"text": "x"}})
		return err
	}

	loop := withRun("loop-1")
	require.NoError(t, echo(loop))
	require.NoError(t, echo(loop))
	err := echo(loop)
	require.Equal(t, int64(mcp.CodeBudgetExceeded), rpcCode(t, err), "the run's 25¢ cannot cover a third 10¢ call")
	require.ErrorContains(t, err, "the budget of run key:runner/loop-1")
	require.NoError(t, echo(withRun("loop-2")), "another run has its own budget")

	require.Len(t, f.acct.ledger, 3)
	for i, want := range []string{"loop-1", "loop-1", "loop-2"} {
		require.Equal(t, kernel.RunScopeID(runner, want), f.acct.ledger[i].RunID)
	}
	spent, _ := f.acct.st.Usage(kernel.ScopeRef{Kind: kernel.ScopeRun, ID: kernel.RunScopeID(runner, "loop-1")}, kernel.Period{}, time.Now())
	require.Equal(t, 20*kernel.Cent, spent)

	// A 2025-11-25 session without the header is a run of its own, the
	// same for all its calls whichever replica serves them.
	cs, _ := connect(t, f, "tg-runner", "/mcp", "2025-11-25", true)
	for range 2 {
		_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "x"}})
		require.NoError(t, err)
	}
	a, b := f.acct.ledger[3].RunID, f.acct.ledger[4].RunID
	require.True(t, strings.HasPrefix(a, "key:runner/mcp-"), a)
	require.Equal(t, a, b)

	// A bad run id is refused before anything is admitted.
	req, _ := http.NewRequest(http.MethodPost, f.gateways[0].URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer tg-runner")
	req.Header.Set(mcp.HeaderRunID, "two words")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
}
