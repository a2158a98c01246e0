package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The mock's AWS access key (mockllm.BedrockAccessKeys): mockllm verifies
// every SigV4 signature against its secret.
const (
	bedrockAccessKey = "AKIAMOCKLLMEXAMPLE01"
	bedrockSecret    = "mockllm/bedrock/secret/access/key/0001"
)

// bedrockGroup makes a bedrock provider on mockllm signed with the given
// secret, a deployment of modelID and a priced model group.
func (s *system) bedrockGroup(name, modelID, secret string) {
	s.t.Helper()
	cred := `{"access_key_id":"` + bedrockAccessKey + `","secret_access_key":"` + secret + `","session_token":"e2e-session"}`
	s.cli(nil, []string{"CRED=" + cred}, "provider", "create", "p-"+name, "--type", "bedrock",
		"--base-url", s.mockURL, "--region", "us-east-1", "--credential-env", "CRED")
	s.cli(nil, nil, "deployment", "create", "d-"+name, "--provider", "p-"+name, "--model", modelID)
	s.cli(nil, nil, "model", "create", name, "--deployments", "d-"+name)
	s.cli(nil, nil, "price", "set", name, "--input", "3", "--output", "15")
}

// TestBedrockSDKs: the OpenAI and Anthropic SDKs against a bedrock model
// group (Converse and ConverseStream, signed with SigV4 and verified by
// mockllm), embeddings through InvokeModel, a wrong secret refused by the
// provider and reported as the gateway's credential problem, and the ledger
// equal to mockllm's bill.
func TestBedrockSDKs(t *testing.T) {
	s := startSystem(t)
	const model = "claude-bedrock"
	s.bedrockGroup(model, "anthropic.claude-sonnet-4-5-20250929-v1:0", bedrockSecret)
	s.bedrockGroup("titan", "amazon.titan-embed-text-v2:0", bedrockSecret)
	s.bedrockGroup("bad-secret", "anthropic.claude-v2:1", "wrong-secret")
	id, key := s.createKey("--alias", "bedrock", "--models", model+",titan,bad-secret")
	s.waitKey(key)
	env := []string{"TOLLGATE_MODEL=" + model}
	t.Run("OpenAI SDK", func(t *testing.T) { s.openAIChecks(t, key, true, env...) })
	t.Run("Anthropic SDK", func(t *testing.T) { s.anthropicChecks(t, key, false, env...) })
	t.Run("embeddings through InvokeModel", func(t *testing.T) {
		code, _, b := s.post(key, "/v1/embeddings", `{"model":"titan","input":"hello bedrock"}`)
		require.Equal(t, http.StatusOK, code, string(b))
		require.Contains(t, string(b), `"prompt_tokens":4`)
	})
	t.Run("a wrong signature is refused by the provider", func(t *testing.T) {
		code, _, b := s.post(key, "/v1/chat/completions", chatBody("bad-secret", false, false, 3))
		require.Equal(t, http.StatusForbidden, code, string(b))
		require.Contains(t, string(b), "rejected the gateway's credentials")
		require.NotContains(t, string(b), bedrockSecret)
	})

	bill := s.mockStats()[bedrockAccessKey]
	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = s.ledger(id)
		return len(rows) == 7
	}, 10*time.Second, 100*time.Millisecond, "every request is in the ledger")
	var in, out int64
	for _, r := range rows {
		in += r.Usage.Input + r.Usage.CachedInput + r.Usage.CacheWrite
		out += r.Usage.Output + r.Usage.Reasoning
		if r.HTTPStatus == http.StatusOK {
			require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status, "%+v", r)
		}
	}
	require.Equal(t, bill.InputTokens+bill.CachedTokens, in)
	require.Equal(t, bill.OutputTokens, out)
	require.Equal(t, int64(6), bill.Requests)
	require.Equal(t, int64(1), bill.Errors, "the wrong signature")
}
