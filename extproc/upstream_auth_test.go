package extproc

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
)

// TestUpstreamAuthIsA502InTheClientsFormat: a provider refusing the
// gateway's credential (401, 403) reaches an Anthropic client as a 502 in
// Anthropic's error shape naming the deployment, not as a 401 that blames
// the client's key; the provider's key is never echoed; a 403 that is a
// content-policy refusal stays the provider's answer. The ledger row is
// failed, $0, with the provider's status.
func TestUpstreamAuthIsA502InTheClientsFormat(t *testing.T) {
	body := `{"model":"claude-sonnet","max_tokens":16,"messages":[{"role":"user","content":"Hi"}]}`
	for _, tc := range []struct {
		status     int
		upstream   string
		wantStatus int
		wantType   string
	}{
		{401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + anthropicKey + `"}}`, 502, "api_error"},
		{403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission"}}`, 502, "api_error"},
		{403, `{"type":"error","error":{"type":"permission_error","message":"blocked by our content filtering policy"}}`, 403, "permission_error"},
	} {
		e := anthropicEnv(t)
		got := e.do(t, post("/v1/messages", "", body,
			extprocfilter.Header{Key: "x-api-key", Value: clientKey},
			extprocfilter.Header{Key: "anthropic-version", Value: "2023-06-01"}),
			(&recorder{resp: jsonResponse(tc.status, tc.upstream)}).upstream)
		require.Equal(t, tc.wantStatus, got.Status, string(got.Body))
		require.NotContains(t, string(got.Body), anthropicKey)
		var env struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(got.Body, &env), string(got.Body))
		require.Equal(t, "error", env.Type)
		require.Equal(t, tc.wantType, env.Error.Type)
		if tc.wantStatus == 502 {
			require.Contains(t, env.Error.Message, "The provider of deployment `anthropic-sonnet` rejected the gateway's credentials")
			require.Contains(t, env.Error.Message, "Your API key is fine")
		}
		recs := e.acct.Records()
		require.Len(t, recs, 1)
		require.Equal(t, kernel.StatusFailed, recs[0].Status)
		require.Equal(t, tc.status, recs[0].HTTPStatus, "the ledger keeps the provider's answer")
		require.Equal(t, kernel.Usage{}, recs[0].Usage)
	}
}

// TestUpstreamAuthIsRetriedElsewhere: a deployment whose credential the
// provider refuses is a failed attempt: the request goes to another
// deployment of the group, and the refusing one cools down after its allowed
// fails.
func TestUpstreamAuthIsRetriedElsewhere(t *testing.T) {
	bad, ok := openAIDep("gpt", "bad-key"), openAIDep("gpt", "ok")
	bad.Weight, bad.AllowedFails = preferred, 2
	e, _ := routedEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{bad, ok}})
	up := newByDeployment()
	up.answer["bad-key"] = failing(401)
	for range 20 {
		got, _ := e.doRetrying(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
		require.Equal(t, 200, got.Status, string(got.Body))
		require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
	}
	require.Equal(t, 2, up.count("bad-key"), "cooled down after allowed_fails")
}
