package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// geminiGroup makes a gemini provider on mockllm's Gemini API with its own
// credential, a deployment of "gemini-mock" and a priced model group.
func (s *system) geminiGroup(name, providerKey string) {
	s.t.Helper()
	s.cli(nil, []string{"CRED=" + providerKey}, "provider", "create", "p-"+name, "--type", "gemini",
		"--base-url", s.mockURL+"/v1beta", "--credential-env", "CRED")
	s.cli(nil, nil, "deployment", "create", "d-"+name, "--provider", "p-"+name, "--model", "gemini-mock")
	s.cli(nil, nil, "model", "create", name, "--deployments", "d-"+name)
	s.cli(nil, nil, "price", "set", name, "--input", "0.30", "--output", "2.50")
}

type geminiUsage struct {
	Prompt     int64 `json:"promptTokenCount"`
	Candidates int64 `json:"candidatesTokenCount"`
	Cached     int64 `json:"cachedContentTokenCount"`
	Total      int64 `json:"totalTokenCount"`
}

// TestGeminiGenAISDK drives Tollgate's Gemini API with Google's @google/genai
// (generateContent, generateContentStream, function calls, countTokens, a
// bad key) against a gemini model group served natively by mockllm's Gemini
// API and against the demo OpenAI model group through translation; and the
// OpenAI and Anthropic SDKs against the gemini group.
func TestGeminiGenAISDK(t *testing.T) {
	s := startSystem(t)
	testenv.NodePackage(t, "@google/genai")
	const model = "gemini-flash"
	s.geminiGroup(model, "AIza-e2e-gemini-provider")
	_, key := s.createKey("--alias", "genai", "--models", model+",demo")
	s.waitKey(key)
	for _, tc := range []struct{ name, model, version string }{
		{"gemini v1", model, ""},
		{"gemini v1beta", model, "v1beta"},
		{"openai through translation", "demo", ""},
	} {
		env := []string{"TOLLGATE_MODEL=" + tc.model, "TOLLGATE_API_VERSION=" + tc.version}
		t.Run(tc.name+" generateContent", func(t *testing.T) {
			var out struct {
				Text, Finish string
				Usage        geminiUsage
			}
			s.node("gemini.mjs", "generate", key, &out, env...)
			require.NotEmpty(t, out.Text)
			require.Equal(t, "MAX_TOKENS", out.Finish)
			require.Equal(t, int64(8), out.Usage.Candidates)
			require.Positive(t, out.Usage.Prompt)
		})
		t.Run(tc.name+" generateContentStream", func(t *testing.T) {
			var out struct {
				Text, Finish string
				Usage        geminiUsage
				Chunks       int
			}
			s.node("gemini.mjs", "stream", key, &out, env...)
			require.Len(t, strings.Fields(out.Text), 8, out.Text)
			require.Greater(t, out.Chunks, 1)
			require.Equal(t, int64(8), out.Usage.Candidates)
			require.Positive(t, out.Usage.Prompt)
		})
		t.Run(tc.name+" function call", func(t *testing.T) {
			var out struct {
				Name string
				Args struct{ City string }
			}
			s.node("gemini.mjs", "toolcall", key, &out, env...)
			require.Equal(t, "get_weather", out.Name)
			require.Equal(t, "Paris", out.Args.City)
		})
		t.Run(tc.name+" countTokens", func(t *testing.T) {
			var out struct{ Total int64 }
			s.node("gemini.mjs", "count", key, &out, env...)
			require.Positive(t, out.Total)
		})
	}
	t.Run("bad key", func(t *testing.T) {
		var out struct{ Error *errInfo }
		s.node("gemini.mjs", "badkey", key, &out, "TOLLGATE_MODEL="+model)
		require.NotNil(t, out.Error)
		require.Equal(t, 401, out.Error.Status)
		require.Contains(t, out.Error.Message, "UNAUTHENTICATED")
	})

	env := []string{"TOLLGATE_MODEL=" + model}
	t.Run("OpenAI SDK on the gemini group", func(t *testing.T) { s.openAIChecks(t, key, true, env...) })
	t.Run("Anthropic SDK on the gemini group", func(t *testing.T) { s.anthropicChecks(t, key, true, env...) })
}

// TestLedgerReconcilesGemini: for a gemini provider, through the Gemini API
// natively (JSON, SSE and JSON-array streams) and through the OpenAI chat
// translation (JSON and streams), the ledger's tokens equal what mockllm
// served, exactly.
func TestLedgerReconcilesGemini(t *testing.T) {
	s := startSystem(t)
	const model, providerKey = "gem-rec", "AIza-e2e-reconcile"
	s.geminiGroup(model, providerKey)
	id, key := s.createKey("--alias", "gem-rec", "--models", model)
	s.waitKey(key)
	n := 0
	for i := range 4 {
		words := 3 + i
		gen := fmt.Sprintf(`{"contents":[{"role":"user","parts":[{"text":"reconcile these words please"}]}],"generationConfig":{"maxOutputTokens":%d}}`, words)
		for _, path := range []string{
			"/v1beta/models/" + model + ":generateContent",
			"/v1beta/models/" + model + ":streamGenerateContent?alt=sse",
			"/v1/models/" + model + ":streamGenerateContent",
		} {
			code, _, b := s.post(key, path, gen, "x-mock-cached-tokens", "2")
			require.Equal(t, http.StatusOK, code, string(b))
			n++
		}
		for _, stream := range []bool{false, true} {
			code, _, b := s.post(key, "/v1/chat/completions", chatBody(model, stream, i%2 == 0, words))
			require.Equal(t, http.StatusOK, code, string(b))
			n++
		}
	}
	bill := s.mockStats()[providerKey]
	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = s.ledger(id)
		return len(rows) == n
	}, 10*time.Second, 100*time.Millisecond, "every request is in the ledger")
	var in, cached, out int64
	for _, r := range rows {
		require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status, "%+v", r)
		require.Positive(t, r.Cost.NanoUSD)
		in += r.Usage.Input
		cached += r.Usage.CachedInput
		out += r.Usage.Output + r.Usage.Reasoning
	}
	require.Equal(t, int64(n), bill.Requests)
	require.Equal(t, bill.InputTokens, in)
	require.Equal(t, bill.CachedTokens, cached)
	require.Positive(t, cached)
	require.Equal(t, bill.OutputTokens, out)
}

// TestGeminiProviderResponsesAndCompletions: on a gemini provider, the
// OpenAI SDK's Responses (JSON and stream) and legacy completions through the
// chat translation, and @google/genai's models.get under /v1beta and /v1;
// the ledger equals mockllm's bill.
func TestGeminiProviderResponsesAndCompletions(t *testing.T) {
	s := startSystem(t)
	testenv.NodePackage(t, "@google/genai")
	const model, providerKey = "gem-more", "AIza-e2e-gemini-more"
	s.geminiGroup(model, providerKey)
	id, key := s.createKey("--alias", "gem-more", "--models", model)
	s.waitKey(key)
	t.Run("Responses", func(t *testing.T) { s.responsesChecks(t, key, model) })
	t.Run("completions", func(t *testing.T) { s.completionsChecks(t, key, model) })
	for _, version := range []string{"v1beta", "v1"} {
		t.Run("models.get "+version, func(t *testing.T) {
			var out struct {
				Name    string
				Missing *errInfo
			}
			s.node("gemini.mjs", "get", key, &out, "TOLLGATE_MODEL="+model, "TOLLGATE_API_VERSION="+version)
			require.Equal(t, "models/"+model, out.Name, "%+v", out)
			require.NotNil(t, out.Missing)
			require.Equal(t, http.StatusNotFound, out.Missing.Status)
		})
	}
	bill := s.mockStats()[providerKey]
	require.Equal(t, int64(4), bill.Requests, "Responses ×2, completions ×2")
	rows := s.settledRows(t, id, 5) // and the echo refused after admission
	in, out := ledgerTokens(rows)
	require.Equal(t, bill.InputTokens+bill.CachedTokens, in)
	require.Equal(t, bill.OutputTokens, out)
}
