package e2e

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// cliFails runs a CLI command expected to fail and returns its stderr.
func (s *system) cliFails(args ...string) string {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(bin, "tollgate"), args...)
	cmd.Env = append(os.Environ(), "TOLLGATE_ADDR="+s.admin, "TOLLGATE_ADMIN_KEY="+adminKey)
	out, err := cmd.CombinedOutput()
	require.Error(s.t, err, "tollgate %v succeeded: %s", args, out)
	return string(out)
}

type guardErr struct {
	Class      string `json:"class"`
	Status     int    `json:"status"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Guardrails string `json:"guardrails"`
}

func TestGuardrailsWithSDKs(t *testing.T) {
	s := startSystem(t)
	testenv.NodePackage(t, "@anthropic-ai/sdk")
	testenv.NodePackage(t, "@google/genai")
	s.cli(nil, nil, "guardrail", "create", "no-cards", "--kind", "pii", "--action", "block", "--types", "CREDIT_CARD,SSN")
	s.cli(nil, nil, "guardrail", "create", "emails", "--kind", "pii", "--action", "redact", "--types", "EMAIL", "--on", "pre")
	s.cli(nil, nil, "guardrail", "create", "phones-out", "--kind", "pii", "--action", "redact", "--types", "PHONE", "--on", "stream")
	s.cli(nil, nil, "guardrail", "create", "mandated", "--kind", "secrets", "--action", "block", "--mandatory")
	s.cli(nil, nil, "team", "create", "sec", "--guardrails", "mandated")
	id, key := s.createKey("--id", "guarded", "--budget", "1", "--guardrails", "no-cards,emails,phones-out")
	s.waitKey(key)
	// The attachment follows the key by one snapshot: wait until it holds.
	require.Eventually(t, func() bool {
		// An unknown model: 404 (nothing admitted, no ledger row) until the
		// guardrail, checked before the model is resolved, refuses it.
		code, _, _ := s.post(key, "/v1/chat/completions", `{"model":"no-such-model","messages":[{"role":"user","content":"SSN 123-45-6789"}],"max_tokens":4}`)
		return code == http.StatusBadRequest
	}, 10*time.Second, 50*time.Millisecond)

	t.Run("openai block is a BadRequestError", func(t *testing.T) {
		var out struct{ Error *guardErr }
		s.node("guardrails.mjs", "openai_block", key, &out)
		require.NotNil(t, out.Error)
		require.Equal(t, "BadRequestError", out.Error.Class)
		require.Equal(t, 400, out.Error.Status)
		require.Equal(t, "guardrail_blocked", out.Error.Code)
		require.Contains(t, out.Error.Message, `guardrail "no-cards"`)
		require.Equal(t, "no-cards,emails,phones-out", out.Error.Guardrails)
	})
	t.Run("anthropic block is a BadRequestError", func(t *testing.T) {
		var out struct{ Error *guardErr }
		s.node("guardrails.mjs", "anthropic_block", key, &out)
		require.NotNil(t, out.Error)
		require.Equal(t, "BadRequestError", out.Error.Class)
		require.Contains(t, out.Error.Message, "SSN")
	})
	t.Run("genai block is an ApiError", func(t *testing.T) {
		var out struct{ Error *guardErr }
		s.node("guardrails.mjs", "genai_block", key, &out)
		require.NotNil(t, out.Error)
		require.Equal(t, "ApiError", out.Error.Class)
		require.Equal(t, 400, out.Error.Status)
		require.Contains(t, out.Error.Message, "CREDIT_CARD")
	})
	t.Run("refusals cost nothing", func(t *testing.T) {
		// Each refusal is a $0 row marked with its guardrail; the key's
		// spend (what its budget is charged from) and the ledger's total
		// are unchanged: $0 before any request was served.
		rows := s.ledger(id)
		require.NotEmpty(t, rows)
		for _, r := range rows {
			require.Equal(t, "REQUEST_STATUS_REFUSED", r.Status, "%+v", r)
			require.Equal(t, "guardrail:no-cards", r.Deployment)
			require.Equal(t, http.StatusBadRequest, r.HTTPStatus)
			require.Zero(t, r.Cost.NanoUSD)
		}
		var total struct {
			Total struct {
				NanoUSD int64 `json:"nano_usd,string"`
			} `json:"total"`
		}
		s.cli(&total, nil, "spend", "total", "--key", id)
		require.Zero(t, total.Total.NanoUSD, "the key's budget and spend are untouched")
		s.cli(&total, nil, "spend", "total")
		require.Zero(t, total.Total.NanoUSD, "the ledger's total is unchanged")
	})
	t.Run("redact: the provider sees the placeholder", func(t *testing.T) {
		var out struct{ Content string }
		s.node("guardrails.mjs", "openai_redact", key, &out)
		require.Contains(t, out.Content, "[EMAIL]", "the mock echoes the prompt it received")
		require.NotContains(t, out.Content, "jane")
		var g struct{ Content string }
		s.node("guardrails.mjs", "genai_redact", key, &g)
		require.Contains(t, g.Content, "[EMAIL]")
	})
	t.Run("stream: a phone number over several chunks is redacted", func(t *testing.T) {
		var out struct {
			Text   string
			Chunks int
		}
		s.node("guardrails.mjs", "openai_stream", key, &out)
		require.Contains(t, out.Text, "[PHONE]")
		require.NotContains(t, out.Text, "2671")
		require.Greater(t, out.Chunks, 2)
	})
	t.Run("a key cannot remove its team's mandatory guardrail", func(t *testing.T) {
		msg := s.cliFails("key", "create", "--id", "member", "--team", "sec", "--guardrails", "-mandated")
		require.Contains(t, msg, "mandatory")
	})
	t.Run("webhook down: fail-closed blocks, fail-open passes", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		down := "http://" + l.Addr().String() + "/check"
		require.NoError(t, l.Close())
		s.cli(nil, nil, "guardrail", "create", "hook-closed", "--kind", "webhook", "--action", "block", "--url", down, "--timeout", "500ms")
		s.cli(nil, nil, "guardrail", "create", "hook-open", "--kind", "webhook", "--action", "block", "--url", down, "--timeout", "500ms", "--fail-open")
		_, closed := s.createKey("--id", "closed", "--guardrails", "hook-closed")
		_, open := s.createKey("--id", "open", "--guardrails", "hook-open")
		s.waitKey(closed)
		s.waitKey(open)
		body := `{"model":"demo","messages":[{"role":"user","content":"hello"}],"max_tokens":4}`
		var code int
		var b []byte
		require.Eventually(t, func() bool {
			code, _, b = s.post(closed, "/v1/chat/completions", body)
			return code == http.StatusBadRequest
		}, 10*time.Second, 50*time.Millisecond)
		require.Contains(t, string(b), `guardrail \"hook-closed\": the check is unavailable`)
		require.Eventually(t, func() bool {
			_, h, _ := s.post(open, "/v1/chat/completions", body)
			return strings.Contains(h.Get("x-tollgate-guardrails"), "hook-open")
		}, 10*time.Second, 50*time.Millisecond)
		code, _, b = s.post(open, "/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, code, string(b))
	})
}
