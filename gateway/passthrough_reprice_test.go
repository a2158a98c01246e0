package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// doAs is r.do with extra request headers (the mock's x-mock-*).
func (r *running) doAs(t *testing.T, key, path, body string, hdr map[string]string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return b
}

// TestPassthroughRepricedByReplyModel: a pass-through reply that names its
// model and reports usage is charged at that model's price, not the
// request's (the mock's x-mock-reply-model names a dated model, as a
// provider resolving an alias does), in OpenAI's, Anthropic's and Gemini's
// shapes, JSON and SSE; a request whose model has no price (admitted per
// call) is charged its tokens when the reply names a priced model; a reply
// naming a model without a price is charged the provider's price per call,
// never $0. Each ledger row's tokens are the mock's bill.
func TestPassthroughRepricedByReplyModel(t *testing.T) {
	r := start(t, false)
	ctx := context.Background()
	prov, _, err := store.Get[store.Provider](ctx, r.st, "mock")
	require.NoError(t, err)
	prov.PricePerCall = 7_000
	put(t, r.st, "mock", &prov)
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, r.st, "ant", &store.Provider{ID: "ant", Type: store.ProviderAnthropic, BaseURL: r.mockURL, Credential: sealer.Seal([]byte("sk-ant-up"))})
	put(t, r.st, "gem", &store.Provider{ID: "gem", Type: store.ProviderGemini, BaseURL: r.mockURL + "/v1beta", Credential: sealer.Seal([]byte("sk-gem-up"))})
	asked := kernel.Price{Input: 3 * kernel.Dollar, Output: 5 * kernel.Dollar}
	served := kernel.Price{Input: 7 * kernel.Dollar, CachedInput: 2 * kernel.Dollar, CacheWrite: 9 * kernel.Dollar, Output: 11 * kernel.Dollar}
	for _, id := range []string{"mock-gpt", "claude-test", "gemini-test"} {
		put(t, r.st, id, &store.ModelPrice{ID: id, Price: asked})
	}
	for _, id := range []string{"mock-gpt-2026-01-01", "claude-test-20260101", "gemini-test-001"} {
		put(t, r.st, id, &store.ModelPrice{ID: id, Price: served})
	}
	key := r.grantKey(t, "k-reprice", kernel.Limits{}, "mock:/v1/chat/*", "ant:/v1/messages", "gem:/v1beta/models/*")
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	eventually(t, func() bool {
		resp, _ := r.do(t, http.MethodPost, key, "/passthrough/gem/v1beta/models/gemini-test:generateContent", `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`)
		return resp.StatusCode == http.StatusOK
	})
	require.NoError(t, r.st.Flush(ctx))
	base := len(completed(t, r.st))
	r.mock.ResetStats()

	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"which model are you"}],"max_tokens":7}`
	stream := `{"model":"mock-gpt","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"stream which model"}],"max_tokens":9}`
	unpricedAlias := strings.Replace(chat, `"mock-gpt"`, `"mock-alias"`, 1)
	msg := `{"model":"claude-test","max_tokens":12,"messages":[{"role":"user","content":"which model"}]}`
	gen := `{"contents":[{"role":"user","parts":[{"text":"which gemini"}]}]}`
	dated := func(m string) map[string]string { return map[string]string{"x-mock-reply-model": m} }

	b := r.doAs(t, key, "/passthrough/mock/v1/chat/completions", chat, dated("mock-gpt-2026-01-01"))
	require.Contains(t, string(b), `"model":"mock-gpt-2026-01-01"`, "the reply passes unchanged")
	r.doAs(t, key, "/passthrough/mock/v1/chat/completions", stream, dated("mock-gpt-2026-01-01"))
	r.doAs(t, key, "/passthrough/mock/v1/chat/completions", unpricedAlias, dated("mock-gpt-2026-01-01"))
	r.doAs(t, key, "/passthrough/ant/v1/messages", msg, dated("claude-test-20260101"))
	r.doAs(t, key, "/passthrough/ant/v1/messages", strings.Replace(msg, `"max_tokens"`, `"stream":true,"max_tokens"`, 1), dated("claude-test-20260101"))
	r.doAs(t, key, "/passthrough/gem/v1beta/models/gemini-test:generateContent", gen, dated("gemini-test-001"))
	r.doAs(t, key, "/passthrough/gem/v1beta/models/gemini-test:streamGenerateContent?alt=sse", gen, dated("gemini-test-001"))
	st := r.mock.Stats()
	require.NoError(t, r.st.Flush(ctx))
	rows := completed(t, r.st)[base:]
	require.Len(t, rows, 7)
	type bill struct{ in, out int64 }
	got := map[string]bill{}
	for _, e := range rows {
		require.Contains(t, []string{"mock-gpt-2026-01-01", "claude-test-20260101", "gemini-test-001"}, e.Model, "the ledger names the model that served")
		require.Equal(t, kernel.Cost(served, e.Usage), e.Cost, "%s: at the served model's price", e.Model)
		require.Positive(t, e.Cost)
		require.False(t, e.Unpriced)
		require.Empty(t, e.Unit, "tokens, not a call")
		g := got[e.Deployment]
		g.in += e.Usage.Input + e.Usage.CachedInput + e.Usage.CacheWrite
		g.out += e.Usage.Output + e.Usage.Reasoning
		got[e.Deployment] = g
	}
	for dep, k := range map[string]string{"passthrough.mock": "sk-upstream", "passthrough.ant": "sk-ant-up", "passthrough.gem": "sk-gem-up"} {
		m := st.Keys[k]
		require.Equal(t, bill{m.InputTokens + m.CachedTokens + m.CacheCreationTokens, m.OutputTokens}, got[dep], "%s: ledger == the mock's bill", dep)
	}

	// A reply naming a model without a price: the provider's price per
	// call, not $0 and not the request's model's tokens.
	base += len(rows)
	r.doAs(t, key, "/passthrough/mock/v1/chat/completions", chat, dated("mock-unknown-9"))
	r.doAs(t, key, "/passthrough/mock/v1/chat/completions", stream, dated("mock-unknown-9"))
	require.NoError(t, r.st.Flush(ctx))
	rows = completed(t, r.st)[base:]
	require.Len(t, rows, 2)
	for _, e := range rows {
		require.Equal(t, "mock-unknown-9", e.Model)
		require.Equal(t, kernel.Money(7_000), e.Cost)
		require.Equal(t, kernel.UnitCalls, e.Unit)
		require.Equal(t, int64(1), e.Quantity)
		require.False(t, e.Unpriced)
	}
}
