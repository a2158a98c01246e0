package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// do sends a request with key as a bearer.
func (r *running) do(t *testing.T, method, key, path, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// grantKey is r.key with pass-through grants.
func (r *running) grantKey(t *testing.T, id string, lim kernel.Limits, grants ...string) string {
	t.Helper()
	s := r.key(t, id, lim)
	k, _, err := store.Get[store.Key](context.Background(), r.st, id)
	require.NoError(t, err)
	k.Passthrough = grants
	put(t, r.st, id, &k)
	return s
}

// TestPassthroughRoutes is #34's pass-through end to end on the built-in
// data plane: a granted path reaches the provider unchanged with the
// provider's credential (the mock bills the upstream key, never the
// client's), the reply's usage (JSON and SSE) is settled at the model's
// price, a call without a model is charged the provider's price per call, a
// key without a grant gets 403 in OpenAI's shape, and a strict budget
// refuses calls that are over budget or cannot be priced before the
// provider is called.
func TestPassthroughRoutes(t *testing.T) {
	for _, grpc := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "grpc"}[grpc], func(t *testing.T) { testPassthroughRoutes(t, grpc) })
	}
}

func testPassthroughRoutes(t *testing.T, overGRPC bool) {
	r := start(t, overGRPC)
	ctx := context.Background()
	prov, _, err := store.Get[store.Provider](ctx, r.st, "mock")
	require.NoError(t, err)
	prov.PricePerCall = 7_000 // $0.000007 a call
	put(t, r.st, "mock", &prov)
	put(t, r.st, "mock-gpt", &store.ModelPrice{ID: "mock-gpt", Price: kernel.Price{Input: 3 * kernel.Dollar, Output: 5 * kernel.Dollar}})

	granted := r.grantKey(t, "k-pass", kernel.Limits{}, "mock:/v1/chat/*", "mock:/v1/models")
	none := r.key(t, "k-none", kernel.Limits{})
	r.warm(t, granted, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	eventually(t, func() bool {
		resp, _ := r.do(t, http.MethodGet, granted, "/passthrough/mock/v1/models", "")
		return resp.StatusCode == http.StatusOK
	})
	require.NoError(t, r.st.Flush(ctx))
	base := len(completed(t, r.st))
	r.mock.ResetStats()

	// JSON: the reply as the provider sent it, settled at mock-gpt's price.
	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"hello there"}],"max_tokens":7}`
	resp, b := r.do(t, http.MethodPost, granted, "/passthrough/mock/v1/chat/completions", chat)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var reply struct {
		Model string
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(b, &reply))
	require.Equal(t, "mock-gpt", reply.Model, "the body went unchanged: the provider saw the client's model")
	require.Positive(t, reply.Usage.PromptTokens)

	// SSE: the usage event is read as it passes.
	stream := `{"model":"mock-gpt","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"stream me"}],"max_tokens":9}`
	resp, b = r.do(t, http.MethodPost, granted, "/passthrough/mock/v1/chat/completions", stream)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Contains(t, string(b), "data: [DONE]")

	// No model: the provider's price per call.
	resp, b = r.do(t, http.MethodGet, granted, "/passthrough/mock/v1/models?limit=5", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"mock-gpt"`, "the provider's own model list, not the gateway's")

	st := r.mock.Stats()
	require.Equal(t, int64(2), st.Keys["sk-upstream"].Requests, "the provider's credential (the mock counts chat calls), not the client's: %+v", st.Keys)
	require.Len(t, st.Keys, 1)

	// Denied: no grant, or a path outside the grants.
	for _, c := range []struct{ key, path string }{
		{none, "/passthrough/mock/v1/chat/completions"},
		{granted, "/passthrough/mock/v1/embeddings"},
	} {
		resp, b = r.do(t, http.MethodPost, c.key, c.path, chat)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, string(b))
		var e struct {
			Error struct{ Type, Code, Message string }
		}
		require.NoError(t, json.Unmarshal(b, &e), string(b))
		require.Equal(t, "passthrough_not_allowed", e.Error.Code)
		require.Equal(t, "invalid_request_error", e.Error.Type)
	}
	resp, b = r.do(t, http.MethodGet, granted, "/passthrough/nobody/v1/models", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(b))
	resp, _ = r.do(t, http.MethodGet, "tg-wrong", "/passthrough/mock/v1/models", "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// Strict budgets: over budget, and a call that cannot be priced, are
	// refused before the provider is called.
	tiny := kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: 1000, Period: kernel.Period{Kind: kernel.PeriodTotal}}}}
	poor := r.grantKey(t, "k-poor", tiny, "mock:*")
	prov.PricePerCall = 0
	put(t, r.st, "mock", &prov)
	eventually(t, func() bool {
		resp, _ := r.do(t, http.MethodGet, poor, "/passthrough/mock/v1/models", "")
		return resp.StatusCode == http.StatusBadRequest
	})
	resp, b = r.do(t, http.MethodGet, poor, "/passthrough/mock/v1/models", "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), "passthrough_price_missing")
	resp, b = r.do(t, http.MethodPost, poor, "/passthrough/mock/v1/chat/completions", chat)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"code":"budget_exceeded"`)
	require.Equal(t, int64(2), r.mock.Stats().Keys["sk-upstream"].Requests, "refused before the provider")

	// The ledger: one row per call, at the model's price or the call's.
	require.NoError(t, r.st.Flush(ctx))
	rows := completed(t, r.st)[base:]
	require.Len(t, rows, 3, "%+v", rows)
	byDep := map[string][]store.LedgerEntry{}
	for _, e := range rows {
		require.Equal(t, "k-pass", e.KeyID)
		require.Equal(t, "passthrough.mock", e.Deployment)
		byDep[e.Model] = append(byDep[e.Model], e)
	}
	require.Len(t, byDep["mock-gpt"], 2)
	mock := r.mock.Stats().Keys["sk-upstream"]
	var in, out int64
	var cost kernel.Money
	for _, e := range byDep["mock-gpt"] {
		in += e.Usage.Input + e.Usage.CachedInput
		out += e.Usage.Output + e.Usage.Reasoning
		cost += e.Cost
		require.False(t, e.Unpriced)
	}
	require.Equal(t, mock.InputTokens, in, "ledger input == the mock's bill")
	require.Equal(t, mock.OutputTokens, out, "ledger output == the mock's bill")
	price := kernel.Price{Input: 3 * kernel.Dollar, Output: 5 * kernel.Dollar}
	var want kernel.Money
	for _, e := range byDep["mock-gpt"] {
		want += kernel.Cost(price, e.Usage)
	}
	require.Equal(t, want, cost)
	require.Positive(t, cost)
	require.Len(t, byDep["passthrough.mock"], 1)
	require.Equal(t, kernel.Money(7_000), byDep["passthrough.mock"][0].Cost)
}

// TestPassthroughAnthropicAndGemini: Anthropic's x-api-key and its JSON and
// SSE usage (message_start, message_delta), Gemini's x-goog-api-key (the
// virtual key came as ?key=, which is not forwarded) and its usageMetadata
// in JSON and SSE: each ledger equals the mock's bill of that provider's
// credential.
func TestPassthroughAnthropicAndGemini(t *testing.T) {
	r := start(t, false)
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, r.st, "ant", &store.Provider{ID: "ant", Type: store.ProviderAnthropic, BaseURL: r.mockURL, Credential: sealer.Seal([]byte("sk-ant-up"))})
	put(t, r.st, "gem", &store.Provider{ID: "gem", Type: store.ProviderGemini, BaseURL: r.mockURL + "/v1beta", Credential: sealer.Seal([]byte("sk-gem-up"))})
	price := kernel.Price{Input: 2 * kernel.Dollar, CachedInput: kernel.Dollar, CacheWrite: 3 * kernel.Dollar, Output: 4 * kernel.Dollar, Reasoning: 4 * kernel.Dollar}
	put(t, r.st, "claude-test", &store.ModelPrice{ID: "claude-test", Price: price})
	put(t, r.st, "gemini-test", &store.ModelPrice{ID: "gemini-test", Price: price})
	key := r.grantKey(t, "k-multi", kernel.Limits{}, "ant:/v1/messages", "gem:/v1beta/models/*")
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	eventually(t, func() bool {
		resp, _ := r.do(t, http.MethodPost, key, "/passthrough/ant/v1/messages", `{"model":"claude-test","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`)
		return resp.StatusCode == http.StatusOK
	})
	require.NoError(t, r.st.Flush(context.Background()))
	base := len(completed(t, r.st))
	r.mock.ResetStats()

	msg := `{"model":"claude-test","max_tokens":12,"messages":[{"role":"user","content":"tell me about pass-through"}]}`
	resp, b := r.do(t, http.MethodPost, key, "/passthrough/ant/v1/messages", msg)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	resp, b = r.do(t, http.MethodPost, key, "/passthrough/ant/v1/messages", strings.Replace(msg, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Contains(t, string(b), "message_delta")

	gen := `{"contents":[{"role":"user","parts":[{"text":"hello gemini"}]}]}`
	req, err := http.NewRequest(http.MethodPost, r.url+"/passthrough/gem/v1beta/models/gemini-test:generateContent?key="+key, strings.NewReader(gen))
	require.NoError(t, err)
	gresp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	gb, _ := io.ReadAll(gresp.Body)
	gresp.Body.Close()
	require.Equal(t, http.StatusOK, gresp.StatusCode, string(gb))
	resp, b = r.do(t, http.MethodPost, key, "/passthrough/gem/v1beta/models/gemini-test:streamGenerateContent?alt=sse", gen)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))

	st := r.mock.Stats()
	require.Equal(t, int64(2), st.Keys["sk-ant-up"].Requests, "%+v", st.Keys)
	require.Equal(t, int64(2), st.Keys["sk-gem-up"].Requests, "%+v", st.Keys)
	_, leaked := st.Keys[key]
	require.False(t, leaked, "the virtual key never reaches the provider")

	require.NoError(t, r.st.Flush(context.Background()))
	rows := completed(t, r.st)[base:]
	require.Len(t, rows, 4)
	type bill struct{ in, out int64 }
	got := map[string]bill{}
	for _, e := range rows {
		require.Equal(t, kernel.Cost(price, e.Usage), e.Cost)
		require.Positive(t, e.Cost)
		b := got[e.Deployment]
		b.in += e.Usage.Input + e.Usage.CachedInput + e.Usage.CacheWrite
		b.out += e.Usage.Output + e.Usage.Reasoning
		got[e.Deployment] = b
	}
	for dep, k := range map[string]string{"passthrough.ant": "sk-ant-up", "passthrough.gem": "sk-gem-up"} {
		m := st.Keys[k]
		require.Equal(t, bill{m.InputTokens + m.CachedTokens + m.CacheCreationTokens, m.OutputTokens}, got[dep], dep)
	}
}

// TestPassthroughBedrockSigned: a Bedrock provider's pass-through request is
// signed with SigV4 over the final path and body (the mock verifies every
// signature and bills the access key), and its Converse usage is settled at
// the price of the model named in the path.
func TestPassthroughBedrockSigned(t *testing.T) {
	r := start(t, false)
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	const access = "AKIAMOCKLLMEXAMPLE01"
	cred := `{"access_key_id":"` + access + `","secret_access_key":"` + mockllm.BedrockAccessKeys[access] + `"}`
	put(t, r.st, "br", &store.Provider{ID: "br", Type: store.ProviderBedrock, BaseURL: r.mockURL, APIVersion: "us-east-1", Credential: sealer.Seal([]byte(cred))})
	const model = "anthropic.claude-3-haiku-20240307-v1:0"
	price := kernel.Price{Input: 2 * kernel.Dollar, CachedInput: kernel.Dollar, CacheWrite: 3 * kernel.Dollar, Output: 4 * kernel.Dollar}
	put(t, r.st, model, &store.ModelPrice{ID: model, Price: price})
	key := r.grantKey(t, "k-br", kernel.Limits{}, "br:/model/**")
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	body := `{"messages":[{"role":"user","content":[{"text":"signed and passed through"}]}],"inferenceConfig":{"maxTokens":9}}`
	path := "/passthrough/br/model/" + url.PathEscape(model) + "/converse"
	eventually(t, func() bool {
		resp, _ := r.do(t, http.MethodPost, key, path, body)
		return resp.StatusCode == http.StatusOK
	})
	require.NoError(t, r.st.Flush(context.Background()))
	base := len(completed(t, r.st))
	r.mock.ResetStats()
	resp, b := r.do(t, http.MethodPost, key, path, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	m := r.mock.Stats().Keys[access]
	require.Equal(t, int64(1), m.Requests)
	require.NoError(t, r.st.Flush(context.Background()))
	rows := completed(t, r.st)[base:]
	require.Len(t, rows, 1)
	require.Equal(t, model, rows[0].Model)
	require.Equal(t, m.InputTokens, rows[0].Usage.Input)
	require.Equal(t, m.OutputTokens, rows[0].Usage.Output)
	require.Equal(t, kernel.Cost(price, rows[0].Usage), rows[0].Cost)
	require.Positive(t, rows[0].Cost)
}

// TestPassthroughRateLimited: a pass-through call counts against the key's
// rpm like any request: the second within the minute is a 429 with
// retry-after, before the provider is called.
func TestPassthroughRateLimited(t *testing.T) {
	r := start(t, false)
	prov, _, err := store.Get[store.Provider](context.Background(), r.st, "mock")
	require.NoError(t, err)
	prov.PricePerCall = 1_000
	put(t, r.st, "mock", &prov)
	warm := r.grantKey(t, "k-warm", kernel.Limits{}, "mock:*")
	key := r.grantKey(t, "k-rpm", kernel.Limits{RPM: 1}, "mock:*")
	eventually(t, func() bool {
		resp, _ := r.do(t, http.MethodGet, warm, "/passthrough/mock/v1/models", "")
		return resp.StatusCode == http.StatusOK
	})
	resp, b := r.do(t, http.MethodGet, key, "/passthrough/mock/v1/models", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	resp, b = r.do(t, http.MethodGet, key, "/passthrough/mock/v1/models", "")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(b))
	require.NotEmpty(t, resp.Header.Get("retry-after"))
}
