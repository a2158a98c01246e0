package extproc

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

const anthropicKey = "sk-ant-provider-EEEEEEEEEEEEEEEEEEEEEE"

var anthropicPrice = kernel.Price{
	Input: 3 * kernel.Dollar, Output: 15 * kernel.Dollar,
	CachedInput: 300 * kernel.MicroUSD * 1000, CacheWrite: 3_750 * kernel.MicroUSD * 1000,
}

// anthropicEnv is a test env with an Anthropic deployment "claude-sonnet" and
// the OpenAI deployment "gpt-4o".
func anthropicEnv(t *testing.T) *testEnv {
	e := newTestEnv(t)
	e.cat.targets["claude-sonnet"] = &translate.Target{
		Model: "claude-sonnet", Deployment: "anthropic-sonnet", Provider: translate.ProviderAnthropic, BasePath: "/v1",
		Host: "api.anthropic.com", APIKey: anthropicKey, ProviderModel: "claude-sonnet-4-5-20250929",
		Price: anthropicPrice, DefaultMaxTokens: 2048,
	}
	t.Cleanup(func() { require.NotContains(t, e.logs.String(), anthropicKey) })
	return e
}

// TestAnthropicNativeSettlesCacheTokens: Messages → Anthropic, JSON and
// streamed at several chunk sizes; the client's key never goes upstream, the
// stream passes unchanged but for the model, and the ledger gets input, cache reads, cache writes
// and output apart, priced apart.
func TestAnthropicNativeSettlesCacheTokens(t *testing.T) {
	body := `{"model":"claude-sonnet","max_tokens":256,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"Hi"}]}`
	t.Run("json", func(t *testing.T) {
		e := anthropicEnv(t)
		resp := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":21,"cache_creation_input_tokens":0,"cache_read_input_tokens":1000,"output_tokens":9}}`
		up := &recorder{resp: jsonResponse(200, resp)}
		got := e.do(t, post("/v1/messages", "", body,
			extprocfilter.Header{Key: "x-api-key", Value: clientKey},
			extprocfilter.Header{Key: "anthropic-version", Value: "2023-01-01"},
			extprocfilter.Header{Key: "anthropic-beta", Value: "prompt-caching-2024-07-31"}), up.upstream)
		require.Equal(t, 200, got.Status)
		require.Equal(t, translatetest.NamedModel(resp, "claude-sonnet-4-5-20250929", "claude-sonnet"), string(got.Body), "native responses pass unchanged but for the model")
		fwd := up.last(t)
		require.Equal(t, "/v1/messages", fwd.Headers.Value(":path"))
		require.Equal(t, anthropicKey, fwd.Headers.Value("x-api-key"), "the client's key never goes upstream")
		require.Equal(t, []string{"2023-01-01"}, fwd.Headers.Values("anthropic-version"), "the client's version passes through")
		require.Equal(t, "prompt-caching-2024-07-31", fwd.Headers.Value("anthropic-beta"), "anthropic-beta passes through")
		require.False(t, fwd.Headers.Has("authorization"))
		var sent map[string]any
		require.NoError(t, json.Unmarshal(fwd.Body, &sent))
		require.Equal(t, "claude-sonnet-4-5-20250929", sent["model"])
		require.InDelta(t, 256, sent["max_tokens"], 0)

		want := kernel.Usage{Input: 21, CachedInput: 1000, Output: 9}
		recs := e.acct.Records()
		require.Len(t, recs, 1)
		require.Equal(t, want, recs[0].Usage)
		require.Equal(t, kernel.StatusCompleted, recs[0].Status)
		require.Equal(t, translate.FormatUSD(kernel.Cost(anthropicPrice, want)), got.Headers.Value(hdrCost))
	})
	for _, size := range []int{1, 7, 64, len(translatetest.NativeStream)} {
		t.Run("stream", func(t *testing.T) {
			e := anthropicEnv(t)
			up := &recorder{resp: sseResponse(translatetest.NativeStream, size)}
			sbody := strings.Replace(body, `"max_tokens":256`, `"max_tokens":256,"stream":true`, 1)
			got := e.do(t, post("/v1/messages", clientKey, sbody), up.upstream)
			require.Equal(t, 200, got.Status)
			require.Equal(t, translatetest.NamedModel(translatetest.NativeStream, "claude-sonnet-4-5-20250929", "claude-sonnet"), string(got.Body), "chunk size %d", size)
			recs := e.acct.waitRecords(t, 1)
			require.Equal(t, kernel.Usage{Input: 21, CacheWrite: 1000, Output: 9}, recs[0].Usage, "chunk size %d", size)
			require.True(t, recs[0].Stream)
		})
	}
}

// TestAnthropicCountTokensIsFree: count_tokens passes to Anthropic and
// settles at zero cost.
func TestAnthropicCountTokensIsFree(t *testing.T) {
	e := anthropicEnv(t)
	up := &recorder{resp: jsonResponse(200, `{"input_tokens":14}`)}
	got := e.do(t, post("/v1/messages/count_tokens", clientKey, `{"model":"claude-sonnet","messages":[{"role":"user","content":"Hello, world"}]}`), up.upstream)
	require.Equal(t, 200, got.Status)
	require.JSONEq(t, `{"input_tokens":14}`, string(got.Body))
	require.Equal(t, "/v1/messages/count_tokens", up.last(t).Headers.Value(":path"))
	var sent map[string]any
	require.NoError(t, json.Unmarshal(up.last(t).Body, &sent))
	require.NotContains(t, sent, "max_tokens", "count_tokens takes no max_tokens")
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, kernel.Usage{}, recs[0].Usage)
	require.Equal(t, "0.000000000", got.Headers.Value(hdrCost))
}

// TestCountTokensEstimateOnOpenAI: count_tokens on an OpenAI model group is
// answered by the gateway with an estimate, never goes upstream and is free.
func TestCountTokensEstimateOnOpenAI(t *testing.T) {
	e := anthropicEnv(t)
	body := `{"model":"gpt-4o","system":"0123456789abcdef","messages":[{"role":"user","content":"0123456789abcdef"}],"tools":[{"name":"t","input_schema":{}}]}`
	up := &recorder{resp: jsonResponse(200, `{}`)}
	got := e.do(t, post("/v1/messages/count_tokens", clientKey, body), up.upstream)
	require.Equal(t, 200, got.Status)
	tools := `[{"name":"t","input_schema":{}}]`
	require.JSONEq(t, `{"input_tokens":`+strconv.Itoa((16+16+len(tools)+3)/4)+`}`, string(got.Body))
	require.Empty(t, up.got, "answered by the gateway")
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, kernel.Usage{}, recs[0].Usage)
	require.Equal(t, kernel.StatusCompleted, recs[0].Status)
}

// TestChatToAnthropicStreamSettles: chat completions → Anthropic streamed;
// the client gets OpenAI chunks and [DONE] and the cache tokens settle.
func TestChatToAnthropicStreamSettles(t *testing.T) {
	e := anthropicEnv(t)
	up := &recorder{resp: sseResponse(translatetest.NativeStream, 5)}
	got := e.do(t, post("/v1/chat/completions", clientKey,
		`{"model":"claude-sonnet","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"sys"},{"role":"user","content":"Hi"}]}`), up.upstream)
	require.Equal(t, 200, got.Status)
	fwd := up.last(t)
	require.Equal(t, "/v1/messages", fwd.Headers.Value(":path"))
	require.Equal(t, anthropicKey, fwd.Headers.Value("x-api-key"))
	require.False(t, fwd.Headers.Has("authorization"), "the client's bearer key never goes upstream")
	var sent map[string]any
	require.NoError(t, json.Unmarshal(fwd.Body, &sent))
	require.InDelta(t, 2048, sent["max_tokens"], 0, "the deployment's default max tokens")
	require.Equal(t, []any{map[string]any{"type": "text", "text": "sys"}}, sent["system"])
	s := string(got.Body)
	require.Contains(t, s, `"delta":{"content":"Hello"}`)
	require.Contains(t, s, `"finish_reason":"stop"`)
	require.Contains(t, s, `"usage":{"prompt_tokens":1021,"completion_tokens":9,"total_tokens":1030,"prompt_tokens_details":{"cached_tokens":0}}`)
	require.True(t, strings.HasSuffix(s, "data: [DONE]\n\n"))
	recs := e.acct.waitRecords(t, 1)
	require.Equal(t, kernel.Usage{Input: 21, CacheWrite: 1000, Output: 9}, recs[0].Usage)
}

// TestMessagesToOpenAI: an Anthropic client on an OpenAI model group.
func TestMessagesToOpenAI(t *testing.T) {
	e := anthropicEnv(t)
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	got := e.do(t, post("/v1/messages", clientKey, `{"model":"gpt-4o","max_tokens":50,"messages":[{"role":"user","content":"Say hello"}]}`,
		extprocfilter.Header{Key: "anthropic-version", Value: "2023-06-01"}), up.upstream)
	require.Equal(t, 200, got.Status)
	fwd := up.last(t)
	require.Equal(t, "/v1/chat/completions", fwd.Headers.Value(":path"))
	require.Equal(t, "Bearer "+openAIKey, fwd.Headers.Value("authorization"))
	require.False(t, fwd.Headers.Has("anthropic-version"))
	var m map[string]any
	require.NoError(t, json.Unmarshal(got.Body, &m))
	require.Equal(t, "message", m["type"])
	require.Equal(t, map[string]any{"input_tokens": 16.0, "cache_creation_input_tokens": 0.0, "cache_read_input_tokens": 4.0, "output_tokens": 9.0}, m["usage"])
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, chatUsage, recs[0].Usage)
	require.Equal(t, strconv.Itoa(len(got.Body)), got.Headers.Value("content-length"))
}

// TestAnthropicErrorShapes: every refusal on /v1/messages is in Anthropic's
// shape, with the type its status implies.
func TestAnthropicErrorShapes(t *testing.T) {
	body := `{"model":"claude-sonnet","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`
	tests := []struct {
		name    string
		req     *extprocfiltertest.Request
		setup   func(e *testEnv)
		status  int
		typ     string
		message string
		header  [2]string
	}{
		{name: "no key", req: post("/v1/messages", "", body), status: 401, typ: "authentication_error", message: "didn't provide an API key"},
		{name: "bad key", req: post("/v1/messages", "", body, extprocfilter.Header{Key: "x-api-key", Value: "tg-wrong"}), status: 401, typ: "authentication_error", message: "Invalid API key"},
		{name: "unknown model", req: post("/v1/messages", clientKey, `{"model":"nope","max_tokens":1,"messages":[]}`), status: 404, typ: "not_found_error", message: "does not exist"},
		{name: "not allowed", req: post("/v1/messages", otherKey, body), status: 403, typ: "permission_error", message: "not allowed"},
		{name: "bad json", req: post("/v1/messages", clientKey, `{"model":`), status: 400, typ: "invalid_request_error", message: "parse"},
		{name: "count tokens on an unsupported provider", req: post("/v1/messages/count_tokens", clientKey, `{"model":"claude","messages":[]}`), status: 400, typ: "invalid_request_error", message: "does not support"},
		{
			name: "budget", req: post("/v1/messages", clientKey, body), status: 400, typ: "invalid_request_error", message: "Budget exceeded for the team",
			setup: func(e *testEnv) {
				e.acct.decide = func(*kernel.AdmitRequest) *kernel.Decision {
					return &kernel.Decision{Reason: kernel.ReasonBudgetExceeded, Scope: kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "t"}}
				}
			},
		},
		{
			name: "rate limit", req: post("/v1/messages", clientKey, body), status: 429, typ: "rate_limit_error", message: "Rate limit reached",
			header: [2]string{"retry-after", "2"},
			setup: func(e *testEnv) {
				e.acct.decide = func(*kernel.AdmitRequest) *kernel.Decision {
					return &kernel.Decision{Reason: kernel.ReasonRequestLimit, Scope: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, RetryAfter: 1500 * time.Millisecond}
				}
			},
		},
		{
			name: "accountant down", req: post("/v1/messages", clientKey, body), status: 503, typ: "overloaded_error", message: "retry shortly",
			setup: func(e *testEnv) { e.acct.admitErr = errTestDown },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := anthropicEnv(t)
			if tt.setup != nil {
				tt.setup(e)
			}
			up := &recorder{resp: jsonResponse(200, `{}`)}
			got := e.do(t, tt.req, up.upstream)
			require.Equal(t, tt.status, got.Status)
			var env translate.AnthropicErrorEnvelope
			require.NoError(t, json.Unmarshal(got.Body, &env), "%s", got.Body)
			require.Equal(t, "error", env.Type)
			require.Equal(t, tt.typ, env.Error.Type)
			require.Contains(t, env.Error.Message, tt.message)
			if tt.header[0] != "" {
				require.Equal(t, tt.header[1], got.Headers.Value(tt.header[0]))
			}
			require.Empty(t, up.got, "refused requests never go upstream")
		})
	}
}

var errTestDown = http.ErrServerClosed

// TestAnthropicUpstreamError: an upstream Anthropic error reaches a Messages
// client in Anthropic's shape and a chat client in OpenAI's; both settle failed.
func TestAnthropicUpstreamError(t *testing.T) {
	upstream := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/messages", `{"model":"claude-sonnet","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`, upstream},
		{"/v1/chat/completions", `{"model":"claude-sonnet","messages":[{"role":"user","content":"Hi"}]}`, `{"error":{"message":"Overloaded","type":"overloaded_error","param":null,"code":null}}`},
	} {
		e := anthropicEnv(t)
		up := &recorder{resp: jsonResponse(529, upstream)}
		got := e.do(t, post(tc.path, clientKey, tc.body), up.upstream)
		require.Equal(t, 529, got.Status)
		require.JSONEq(t, tc.want, string(got.Body))
		recs := e.acct.Records()
		require.Len(t, recs, 1)
		require.Equal(t, kernel.StatusFailed, recs[0].Status)
	}
}

// TestAnthropicStreamAbortedByUpstreamReset: the provider resets a native
// stream before message_delta: input and cache tokens from message_start are
// charged as reported, the output is estimated from the streamed text.
func TestAnthropicStreamAbortedByUpstreamReset(t *testing.T) {
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		t.Run(path, func(t *testing.T) {
			e := anthropicEnv(t)
			cut := strings.Index(translatetest.NativeStream, "event: content_block_stop")
			r := sseResponse(translatetest.NativeStream[:cut], 11)
			r.Reset = true
			req := `{"model":"claude-sonnet","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`
			resp := e.do(t, post(path, clientKey, req), (&recorder{resp: r}).upstream)
			require.True(t, resp.Reset)
			recs := e.acct.waitRecords(t, 1)
			require.Equal(t, kernel.StatusAborted, recs[0].Status)
			require.Equal(t, kernel.Usage{Input: 21, CacheWrite: 1000, Output: 2}, recs[0].Usage,
				"message_start's input and cache writes; output: max(1 reported, ceil(5 bytes / 4))")
		})
	}
}
