package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type anthropicUsage struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
}

// anthropicBill is one key's bill in mockllm's /stats, cache writes included.
type anthropicBill struct {
	Requests            int64 `json:"requests"`
	Errors              int64 `json:"errors"`
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CachedTokens        int64 `json:"cached_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
}

func (s *system) anthropicBill(key string) anthropicBill {
	s.t.Helper()
	resp, err := http.Get(s.mockURL + "/stats")
	require.NoError(s.t, err)
	defer resp.Body.Close()
	var st struct {
		Keys map[string]anthropicBill `json:"keys"`
	}
	require.NoError(s.t, json.NewDecoder(resp.Body).Decode(&st))
	return st.Keys[key]
}

// TestAnthropicNodeSDK drives Tollgate with the official Anthropic SDK: an
// Anthropic model group served natively by mockllm's Messages API (messages,
// streaming, tool use, count_tokens, errors), the demo OpenAI model group
// through the Messages → chat completions translation, and the ledger's
// input, cache and output tokens reconciled with mockllm's bill.
func TestAnthropicNodeSDK(t *testing.T) {
	s := startSystem(t)
	const model, providerKey = "claude-sonnet-4-5", "sk-ant-e2e-provider"
	s.cli(nil, []string{"CRED=" + providerKey}, "provider", "create", "p-anthropic", "--type", "anthropic",
		"--base-url", s.mockURL+"/v1", "--credential-env", "CRED")
	s.cli(nil, nil, "deployment", "create", "d-anthropic", "--provider", "p-anthropic", "--model", "claude-mock")
	s.cli(nil, nil, "model", "create", model, "--deployments", "d-anthropic")
	s.cli(nil, nil, "price", "set", model, "--input", "3", "--output", "15")
	keyID, key := s.createKey("--alias", "claude-code", "--models", model)
	s.waitKey(key)
	env := []string{"TOLLGATE_MODEL=" + model}

	t.Run("models.list in Anthropic's shape", func(t *testing.T) {
		var out struct {
			IDs, Types []string
			HasMore    bool
			One        struct{ Type, ID string }
		}
		s.node("anthropic.mjs", "models", key, &out, env...)
		require.Equal(t, []string{model}, out.IDs)
		require.Equal(t, []string{"model"}, out.Types)
		require.False(t, out.HasMore)
		require.Equal(t, model, out.One.ID)
		require.Equal(t, "model", out.One.Type)
	})
	t.Run("messages write then read the prompt cache", func(t *testing.T) {
		var first, second struct {
			Type, Text, Stop string
			Usage            anthropicUsage
		}
		s.node("anthropic.mjs", "messages", key, &first, env...)
		require.Equal(t, "message", first.Type)
		require.NotEmpty(t, first.Text)
		require.Equal(t, "max_tokens", first.Stop)
		require.Equal(t, int64(8), first.Usage.Output)
		require.Positive(t, first.Usage.CacheWrite)
		require.Zero(t, first.Usage.CacheRead)
		s.node("anthropic.mjs", "messages", key, &second, append(env, "TOLLGATE_AUTH=bearer")...)
		require.Equal(t, first.Usage.CacheWrite, second.Usage.CacheRead, "the same prefix is read from the cache")
		require.Zero(t, second.Usage.CacheWrite)
	})
	t.Run("stream", func(t *testing.T) {
		var out struct {
			Text, Stop   string
			Start, Delta anthropicUsage
			Events       []string
		}
		s.node("anthropic.mjs", "stream", key, &out, env...)
		require.NotEmpty(t, out.Text)
		require.Equal(t, "message_start", out.Events[0])
		require.Equal(t, "message_stop", out.Events[len(out.Events)-1])
		require.Equal(t, int64(8), out.Delta.Output)
		require.Positive(t, out.Start.Input+out.Start.CacheRead+out.Start.CacheWrite)
	})
	t.Run("tool use", func(t *testing.T) {
		var out struct {
			Type   string
			Blocks []string
			Usage  anthropicUsage
		}
		s.node("anthropic.mjs", "tools", key, &out, env...)
		require.Equal(t, "message", out.Type)
		require.NotEmpty(t, out.Blocks)
		require.Positive(t, out.Usage.Input)
	})
	t.Run("count_tokens", func(t *testing.T) {
		var out struct{ InputTokens int64 }
		s.node("anthropic.mjs", "count", key, &out, env...)
		require.Positive(t, out.InputTokens)
	})
	t.Run("bad key is an AuthenticationError", func(t *testing.T) {
		var out struct {
			Error  *errInfo
			IsAuth bool
		}
		s.node("anthropic.mjs", "badkey", key, &out, env...)
		require.NotNil(t, out.Error)
		require.True(t, out.IsAuth, "%+v", out.Error)
		require.Equal(t, 401, out.Error.Status)
		require.Equal(t, "authentication_error", out.Error.Type)
	})
	t.Run("provider 429 is a RateLimitError", func(t *testing.T) {
		var out struct {
			Error       *errInfo
			IsRateLimit bool
		}
		s.node("anthropic.mjs", "ratelimit", key, &out, env...)
		require.NotNil(t, out.Error)
		require.True(t, out.IsRateLimit, "%+v", out.Error)
		require.Equal(t, "rate_limit_error", out.Error.Type)
		require.NotNil(t, out.Error.RetryAfter)
		require.Equal(t, "1", *out.Error.RetryAfter)
	})
	t.Run("messages on an OpenAI model group", func(t *testing.T) {
		var out struct {
			Type, Text, Stop string
			Usage            anthropicUsage
		}
		s.node("anthropic.mjs", "messages", s.demoKey, &out)
		require.Equal(t, "message", out.Type)
		require.NotEmpty(t, out.Text)
		require.Equal(t, "max_tokens", out.Stop)
		require.Equal(t, int64(8), out.Usage.Output)
		var st struct {
			Text, Stop string
			Delta      anthropicUsage
			Events     []string
		}
		s.node("anthropic.mjs", "stream", s.demoKey, &st)
		require.NotEmpty(t, st.Text)
		require.Equal(t, "max_tokens", st.Stop)
		require.Equal(t, int64(8), st.Delta.Output)
		require.Equal(t, "message_stop", st.Events[len(st.Events)-1])
		var count struct{ InputTokens int64 }
		s.node("anthropic.mjs", "count", s.demoKey, &count)
		require.Positive(t, count.InputTokens, "estimated by the gateway")
	})

	t.Run("ledger reconciles with the provider's bill", func(t *testing.T) {
		bill := s.anthropicBill(providerKey)
		require.Equal(t, int64(4), bill.Requests, "messages ×2, stream, tools")
		require.Equal(t, int64(1), bill.Errors)
		var rows []ledgerRow
		require.Eventually(t, func() bool {
			rows = s.ledger(keyID)
			return len(rows) == 6 // + count_tokens and the 429
		}, 10*time.Second, 100*time.Millisecond)
		var in, cached, write, out int64
		statuses := map[string]int{}
		for _, r := range rows {
			in += r.Usage.Input
			cached += r.Usage.CachedInput
			write += r.Usage.CacheWrite
			out += r.Usage.Output
			statuses[r.Status]++
		}
		require.Equal(t, bill.InputTokens, in, "input")
		require.Equal(t, bill.CachedTokens, cached, "cache reads")
		require.Equal(t, bill.CacheCreationTokens, write, "cache writes")
		require.Equal(t, bill.OutputTokens, out, "output")
		require.Positive(t, cached)
		require.Positive(t, write)
		require.Equal(t, 1, statuses["REQUEST_STATUS_FAILED"], "the 429, charged nothing: %v", statuses)
	})
}
