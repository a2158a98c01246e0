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
	path := filepath.Join(s.dir, "vertex-sa.json")
	require.NoError(s.t, os.WriteFile(path, sa, 0o600))
	return path
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
