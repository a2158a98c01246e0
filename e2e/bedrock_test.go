package e2e

import (
	"net/http"
	"strings"
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
	t.Run("OpenAI SDK chat, stream and tool stream", func(t *testing.T) {
		var out struct {
			Content, Finish string
			Usage           struct {
				CompletionTokens int64 `json:"completion_tokens"`
			}
		}
		s.node("openai.mjs", "chat", key, &out, env...)
		require.NotEmpty(t, out.Content)
		require.Equal(t, "length", out.Finish)
		require.Equal(t, int64(8), out.Usage.CompletionTokens)
		var st struct {
			Text  string
			Usage struct {
				CompletionTokens int64 `json:"completion_tokens"`
			}
		}
		s.node("openai.mjs", "stream", key, &st, env...)
		require.Len(t, strings.Fields(st.Text), 8)
		require.Equal(t, int64(8), st.Usage.CompletionTokens)
		var tc struct {
			Name, Finish string
			Args         struct{ City string }
		}
		s.node("openai.mjs", "toolstream", key, &tc, env...)
		require.Equal(t, "get_weather", tc.Name)
		require.Equal(t, "Paris", tc.Args.City)
		require.Equal(t, "tool_calls", tc.Finish)
	})
	t.Run("Anthropic SDK messages and stream", func(t *testing.T) {
		var out struct {
			Type, Text, Stop string
			Usage            anthropicUsage
		}
		s.node("anthropic.mjs", "messages", key, &out, env...)
		require.Equal(t, "message", out.Type)
		require.NotEmpty(t, out.Text)
		require.Equal(t, "max_tokens", out.Stop)
		require.Equal(t, int64(8), out.Usage.Output)
		var st struct {
			Text, Stop string
			Delta      anthropicUsage
			Events     []string
		}
		s.node("anthropic.mjs", "stream", key, &st, env...)
		require.NotEmpty(t, st.Text)
		require.Equal(t, "message_stop", st.Events[len(st.Events)-1])
		require.Equal(t, int64(8), st.Delta.Output)
		require.Positive(t, st.Delta.Input)
	})
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
