package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// vertexServiceAccount writes a service-account key whose token_uri is
// mockllm's token endpoint and returns its path.
func (s *system) vertexServiceAccount(email string) string {
	s.t.Helper()
	path := filepath.Join(s.dir, "vertex-sa.json")
	s.writeServiceAccount(path, email)
	return path
}

// writeServiceAccount writes a service-account key for email, whose
// token_uri is mockllm's token endpoint, to path.
func (s *system) writeServiceAccount(path, email string) {
	s.t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(s.t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(s.t, err)
	sa, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "acme", "private_key_id": "e2e-key-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "client_id": "1", "token_uri": s.mockURL + "/token",
	})
	require.NoError(s.t, err)
	require.NoError(s.t, os.WriteFile(path, sa, 0o600))
}

// TestVertexSDKs: a vertex provider authenticated with a service-account key
// (tokens from mockllm's token endpoint, checked by mockllm on every
// request) serving a Gemini model and a Claude model (rawPredict /
// streamRawPredict); the OpenAI, Anthropic and Gen AI SDKs against them, and
// the ledger equal to mockllm's bill.
func TestVertexSDKs(t *testing.T) {
	s := startSystem(t)
	testenv.NodePackage(t, "@google/genai")
	const sa = "tollgate@acme.iam.gserviceaccount.com"
	s.cli(nil, nil, "provider", "create", "p-vertex", "--type", "vertex",
		"--base-url", s.mockURL+"/v1/projects/acme/locations/us-central1", "--credential-file", s.vertexServiceAccount(sa))
	s.cli(nil, nil, "deployment", "create", "d-vgem", "--provider", "p-vertex", "--model", "gemini-2.5-flash")
	s.cli(nil, nil, "deployment", "create", "d-vclaude", "--provider", "p-vertex", "--model", "claude-sonnet-4-5@20250929")
	s.cli(nil, nil, "model", "create", "vgem", "--deployments", "d-vgem")
	s.cli(nil, nil, "model", "create", "vclaude", "--deployments", "d-vclaude")
	s.cli(nil, nil, "price", "set", "vgem", "--input", "0.30", "--output", "2.50")
	s.cli(nil, nil, "price", "set", "vclaude", "--input", "3", "--output", "15")
	id, key := s.createKey("--alias", "vertex", "--models", "vgem,vclaude")
	s.waitKey(key)

	for _, model := range []string{"vgem", "vclaude"} {
		env := []string{"TOLLGATE_MODEL=" + model}
		t.Run(model+" OpenAI SDK", func(t *testing.T) { s.openAIChecks(t, key, false, env...) })
		t.Run(model+" Anthropic SDK", func(t *testing.T) { s.anthropicChecks(t, key, false, env...) })
		t.Run(model+" Gen AI SDK", func(t *testing.T) {
			var out struct {
				Text  string
				Usage geminiUsage
			}
			s.node("gemini.mjs", "stream", key, &out, env...)
			require.Len(t, strings.Fields(out.Text), 8)
			require.Equal(t, int64(8), out.Usage.Candidates)
		})
	}

	bill := s.anthropicBill(sa) // cache writes included (the Anthropic SDK's prompt is cached)
	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = s.ledger(id)
		return len(rows) == 10
	}, 10*time.Second, 100*time.Millisecond, "every request is in the ledger")
	var in, out int64
	for _, r := range rows {
		require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status, "%+v", r)
		in += r.Usage.Input + r.Usage.CachedInput + r.Usage.CacheWrite
		out += r.Usage.Output + r.Usage.Reasoning
	}
	require.Equal(t, int64(10), bill.Requests)
	require.Equal(t, bill.InputTokens+bill.CachedTokens+bill.CacheCreationTokens, in)
	require.Equal(t, bill.OutputTokens, out)
}

// TestVertexADC: a vertex provider created with no credential takes
// application default credentials — GOOGLE_APPLICATION_CREDENTIALS naming a
// service-account key whose token_uri is mockllm's token endpoint, which
// checks the bearer of every request. Through it: Responses (JSON and
// stream) and legacy completions with the OpenAI SDK on a Gemini and a
// Claude model, embeddings through :predict, Claude count_tokens (and
// @google/genai's countTokens) through count-tokens:rawPredict, and
// @google/genai's models.get; the ledger equals the mock's bill.
func TestVertexADC(t *testing.T) {
	adc := filepath.Join(t.TempDir(), "adc.json")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adc) // read when the provider is created, after the mock has an address
	s := startSystem(t)
	testenv.NodePackage(t, "@google/genai")
	const sa = "adc@acme.iam.gserviceaccount.com"
	s.writeServiceAccount(adc, sa)
	s.cli(nil, nil, "provider", "create", "p-adc", "--type", "vertex", "--base-url", s.mockURL+"/v1/projects/acme/locations/us-central1")
	for _, g := range []struct{ name, model string }{
		{"vgem", "gemini-2.5-flash"}, {"vclaude", "claude-sonnet-4-5@20250929"}, {"vemb", "text-embedding-005"},
	} {
		s.cli(nil, nil, "deployment", "create", "d-"+g.name, "--provider", "p-adc", "--model", g.model)
		s.cli(nil, nil, "model", "create", g.name, "--deployments", "d-"+g.name)
		s.cli(nil, nil, "price", "set", g.name, "--input", "1", "--output", "2")
	}
	id, key := s.createKey("--alias", "vertex-adc", "--models", "vgem,vclaude,vemb")
	s.waitKey(key)

	for _, model := range []string{"vgem", "vclaude"} {
		t.Run(model+" Responses", func(t *testing.T) { s.responsesChecks(t, key, model) })
		t.Run(model+" completions", func(t *testing.T) { s.completionsChecks(t, key, model) })
	}
	t.Run("embeddings through :predict", func(t *testing.T) {
		var out struct {
			Dims  int
			Usage struct {
				Prompt int64 `json:"prompt_tokens"`
			}
		}
		s.node("openai.mjs", "embeddings", key, &out, "TOLLGATE_MODEL=vemb")
		require.Positive(t, out.Dims, "%+v", out)
		require.Equal(t, int64(2), out.Usage.Prompt, "the prediction's token_count of \"embed me\"")
	})
	t.Run("Claude count_tokens through count-tokens:rawPredict", func(t *testing.T) {
		s.countTokensChecks(t, key, "vclaude")
	})
	t.Run("Gen AI SDK countTokens of Claude through count-tokens:rawPredict", func(t *testing.T) {
		var out struct{ Total int64 }
		s.node("gemini.mjs", "count", key, &out, "TOLLGATE_MODEL=vclaude")
		require.Equal(t, int64(7), out.Total, "the mock's count of \"Count these tokens please\"")
	})
	t.Run("Gen AI SDK models.get", func(t *testing.T) {
		var out struct {
			Name    string
			Methods []string
			Missing *errInfo
		}
		s.node("gemini.mjs", "get", key, &out, "TOLLGATE_MODEL=vgem")
		require.Equal(t, "models/vgem", out.Name, "%+v", out)
		require.Contains(t, out.Methods, "generateContent")
		require.NotNil(t, out.Missing)
		require.Equal(t, 404, out.Missing.Status)
	})

	bill := s.anthropicBill(sa)
	require.Equal(t, int64(10), bill.Requests, "Responses ×2 and completions ×2 per model, an embedding, a message")
	require.Equal(t, int64(1), bill.Errors, "the injected 429 of count_tokens")
	rows := s.settledRows(t, id, 15)
	in, out := ledgerTokens(rows)
	require.Equal(t, bill.InputTokens+bill.CachedTokens+bill.CacheCreationTokens, in)
	require.Equal(t, bill.OutputTokens, out)
}
