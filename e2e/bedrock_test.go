package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
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
		require.Equal(t, http.StatusBadGateway, code, "the provider's 403 is not the client's fault: %s", b)
		require.Contains(t, string(b), "rejected the gateway's credentials")
		require.Contains(t, string(b), `"code":"upstream_auth_error"`)
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

// A second principal of the mock (mockllm.BedrockAccessKeys), given only
// through a shared-config profile in TestBedrockDefaultCredentialChain.
const (
	bedrockProfileKey    = "AKIAMOCKLLMEXAMPLE02"
	bedrockProfileSecret = "mockllm/bedrock/secret/access/key/0002"
)

// TestBedrockDefaultCredentialChain: bedrock providers created with no
// credential sign with the AWS SDK's default chain — the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) for one, a
// shared credentials file's profile (--aws-profile) for the other, which
// wins over the environment — and mockllm verifies each signature and bills
// each access key apart. Through them: the OpenAI SDK's chat, Responses
// (JSON and stream) and legacy completions, and Claude count_tokens answered
// by Bedrock's CountTokens; the ledger equals the mock's bill.
func TestBedrockDefaultCredentialChain(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	require.NoError(t, os.WriteFile(creds, []byte("[e2e]\naws_access_key_id = "+bedrockProfileKey+"\naws_secret_access_key = "+bedrockProfileSecret+"\n"), 0o600))
	conf := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(conf, []byte("[profile e2e]\nregion = us-east-1\n"), 0o600))
	t.Setenv("AWS_ACCESS_KEY_ID", bedrockAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", bedrockSecret)
	t.Setenv("AWS_SESSION_TOKEN", "e2e-env-session")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", conf)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s := startSystem(t) // the gateway inherits the environment

	const claude = "anthropic.claude-sonnet-4-5-20250929-v1:0"
	s.cli(nil, nil, "provider", "create", "p-env", "--type", "bedrock", "--base-url", s.mockURL, "--region", "us-east-1")
	s.cli(nil, nil, "provider", "create", "p-profile", "--type", "bedrock", "--base-url", s.mockURL, "--region", "us-east-1", "--aws-profile", "e2e")
	for _, g := range []struct{ name, provider string }{{"bd-env", "p-env"}, {"bd-profile", "p-profile"}} {
		s.cli(nil, nil, "deployment", "create", "d-"+g.name, "--provider", g.provider, "--model", claude)
		s.cli(nil, nil, "model", "create", g.name, "--deployments", "d-"+g.name)
		s.cli(nil, nil, "price", "set", g.name, "--input", "3", "--output", "15")
	}
	id, key := s.createKey("--alias", "bedrock-chain", "--models", "bd-env,bd-profile")
	s.waitKey(key)

	t.Run("environment: OpenAI SDK chat", func(t *testing.T) { s.openAIChecks(t, key, false, "TOLLGATE_MODEL=bd-env") })
	t.Run("environment: Responses", func(t *testing.T) { s.responsesChecks(t, key, "bd-env") })
	t.Run("profile: completions", func(t *testing.T) { s.completionsChecks(t, key, "bd-profile") })
	t.Run("profile: count_tokens is Bedrock's CountTokens", func(t *testing.T) {
		s.countTokensChecks(t, key, "bd-profile")
	})

	stats := s.mockStats()
	env, profile := stats[bedrockAccessKey], stats[bedrockProfileKey]
	require.Equal(t, int64(4), env.Requests, "chat, stream and two Responses signed with the environment's key")
	require.Equal(t, int64(3), profile.Requests, "two completions and a message signed with the profile's key")
	require.Equal(t, int64(1), profile.Errors, "the injected 429 of count_tokens")
	rows := s.settledRows(t, id, 10)
	in, out := ledgerTokens(rows)
	require.Equal(t, env.InputTokens+env.CachedTokens+profile.InputTokens+profile.CachedTokens, in)
	require.Equal(t, env.OutputTokens+profile.OutputTokens, out)
}

// countTokensChecks: count_tokens of a Claude group is the provider's count
// (not the gateway's estimate, which counts the tools' schema too): it
// equals the input the same message is then billed, an error injected at
// the provider comes back, and counting is free.
func (s *system) countTokensChecks(t *testing.T, key, model string) {
	t.Helper()
	const msgs = `"system":"You are terse.","messages":[{"role":"user","content":"How many tokens is this prompt?"}],` +
		`"tools":[{"name":"get_weather","description":"Current weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	code, _, b := s.post(key, "/v1/messages/count_tokens", `{"model":"`+model+`",`+msgs+`}`, "anthropic-version", "2023-06-01")
	require.Equal(t, http.StatusOK, code, string(b))
	var count struct {
		InputTokens int64 `json:"input_tokens"`
	}
	require.NoError(t, json.Unmarshal(b, &count))
	code, _, b = s.post(key, "/v1/messages", `{"model":"`+model+`","max_tokens":3,`+msgs+`}`, "anthropic-version", "2023-06-01")
	require.Equal(t, http.StatusOK, code, string(b))
	var msg struct {
		Usage struct {
			InputTokens int64 `json:"input_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(b, &msg))
	require.Positive(t, count.InputTokens)
	require.Equal(t, msg.Usage.InputTokens, count.InputTokens, "the provider counts what it bills")

	code, _, b = s.post(key, "/v1/messages/count_tokens", `{"model":"`+model+`",`+msgs+`}`, "anthropic-version", "2023-06-01", "x-mock-status", "429")
	require.Equal(t, http.StatusTooManyRequests, code, "the count went to the provider: %s", b)
	require.Contains(t, string(b), `"type":"error"`)
}
