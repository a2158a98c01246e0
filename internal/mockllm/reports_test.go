package mockllm

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// report GETs an admin report with headers (name, value…) and decodes it.
func (h *harness) report(path string, out any, headers ...string) int {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.url+path, nil)
	require.NoError(h.t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	if resp.StatusCode == http.StatusOK && out != nil {
		require.NoError(h.t, json.Unmarshal(b, out), string(b))
	}
	return resp.StatusCode
}

func TestReportsServeTheBillPerDayModelAndKey(t *testing.T) {
	h := start(t, testConfig())
	today := time.Now().UTC().Truncate(24 * time.Hour)
	// Two keys on mock-gpt (8 prompt bytes = 2 tokens, 3 output tokens each), one streamed.
	chat := func(key string, stream bool) {
		body := map[string]any{"model": "mock-gpt", "max_tokens": 3, "stream": stream, "messages": []map[string]string{{"role": "user", "content": "abcdefgh"}}}
		resp := h.post("/v1/chat/completions", body, "Authorization", "Bearer "+key)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	chat("sk-a", false)
	chat("sk-a", true)
	chat("sk-b", false)
	resp := h.post("/v1/messages", map[string]any{"model": "mock-claude", "max_tokens": 4, "messages": []map[string]string{{"role": "user", "content": "abcd"}}}, "x-api-key", "sk-ant")
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp = h.post("/v1/embeddings", map[string]any{"model": "mock-embedding", "input": "abcdefghijkl"}, "Authorization", "Bearer sk-a")
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	start := strconv.FormatInt(today.Add(-24*time.Hour).Unix(), 10)
	admin := []string{"Authorization", "Bearer sk-admin-mock"}

	t.Run("openai usage", func(t *testing.T) {
		require.Equal(t, http.StatusUnauthorized, h.report("/v1/organization/usage/completions?start_time="+start, nil, "Authorization", "Bearer sk-a"))
		require.Equal(t, http.StatusBadRequest, h.report("/v1/organization/usage/completions", nil, admin...))
		var page openAIPage
		require.Equal(t, http.StatusOK, h.report("/v1/organization/usage/completions?bucket_width=1d&group_by=model&group_by=api_key_id&start_time="+start, &page, admin...))
		require.Len(t, page.Data, 2, "yesterday and today")
		require.Empty(t, page.Data[0].Results)
		require.Equal(t, today.Unix(), page.Data[1].StartTime)
		require.False(t, page.HasMore)
		require.Nil(t, page.NextPage)
		byKey := map[string]map[string]any{}
		for _, r := range page.Data[1].Results {
			m := r.(map[string]any)
			require.Equal(t, "organization.usage.completions.result", m["object"])
			require.Equal(t, "mock-gpt", m["model"])
			byKey[m["api_key_id"].(string)] = m
		}
		require.Len(t, byKey, 2)
		a := byKey["key_"+APIKeyID("sk-a")]
		require.InDelta(t, 2, a["num_model_requests"], 0)
		require.InDelta(t, 4, a["input_tokens"], 0)
		require.InDelta(t, 6, a["output_tokens"], 0)

		var emb openAIPage
		require.Equal(t, http.StatusOK, h.report("/v1/organization/usage/embeddings?group_by[]=model&start_time="+strconv.FormatInt(today.Unix(), 10), &emb, admin...))
		require.Len(t, emb.Data, 1)
		m := emb.Data[0].Results[0].(map[string]any)
		require.Equal(t, "organization.usage.embeddings.result", m["object"])
		require.InDelta(t, 3, m["input_tokens"], 0)
		require.Nil(t, m["api_key_id"], "not grouped by key")
	})

	t.Run("openai pagination", func(t *testing.T) {
		from := strconv.FormatInt(today.Add(-3*24*time.Hour).Unix(), 10)
		var p1, p2 openAIPage
		require.Equal(t, http.StatusOK, h.report("/v1/organization/usage/completions?limit=2&start_time="+from, &p1, admin...))
		require.Len(t, p1.Data, 2)
		require.True(t, p1.HasMore)
		require.NotNil(t, p1.NextPage)
		require.Equal(t, http.StatusOK, h.report("/v1/organization/usage/completions?limit=2&start_time="+from+"&page="+*p1.NextPage, &p2, admin...))
		require.Len(t, p2.Data, 2)
		require.False(t, p2.HasMore)
		require.Equal(t, today.Unix(), p2.Data[1].StartTime)
		m := p2.Data[1].Results[0].(map[string]any)
		require.InDelta(t, 3, m["num_model_requests"], 0, "ungrouped: one result for everything")
	})

	t.Run("openai costs", func(t *testing.T) {
		var page openAIPage
		require.Equal(t, http.StatusOK, h.report("/v1/organization/costs?group_by=line_item&start_time="+strconv.FormatInt(today.Unix(), 10), &page, admin...))
		items := map[string]float64{}
		for _, r := range page.Data[0].Results {
			m := r.(map[string]any)
			require.Equal(t, "organization.costs.result", m["object"])
			amount := m["amount"].(map[string]any)
			require.Equal(t, "usd", amount["currency"])
			items[m["line_item"].(string)] = amount["value"].(float64)
		}
		// mock-gpt: 6 input tokens at $1/M, 9 output at $2/M; embeddings 3 at $0.1/M.
		require.InDelta(t, 6e-6, items["mock-gpt, input"], 1e-12)
		require.InDelta(t, 18e-6, items["mock-gpt, output"], 1e-12)
		require.InDelta(t, 0.3e-6, items["mock-embedding, input"], 1e-12)
	})

	t.Run("anthropic", func(t *testing.T) {
		from := today.Format(time.RFC3339)
		require.Equal(t, http.StatusUnauthorized, h.report("/v1/organizations/usage_report/messages?starting_at="+from, nil, "x-api-key", "nope", "anthropic-version", "2023-06-01"))
		require.Equal(t, http.StatusBadRequest, h.report("/v1/organizations/usage_report/messages?starting_at="+from, nil, "x-api-key", "sk-admin-mock"))
		ant := []string{"x-api-key", "sk-admin-mock", "anthropic-version", "2023-06-01"}
		var usage anthropicPage
		require.Equal(t, http.StatusOK, h.report("/v1/organizations/usage_report/messages?group_by[]=model&starting_at="+from, &usage, ant...))
		require.Len(t, usage.Data, 1)
		require.Equal(t, from, usage.Data[0].StartingAt)
		m := usage.Data[0].Results[0].(map[string]any)
		require.Equal(t, "mock-claude", m["model"])
		require.InDelta(t, 1, m["uncached_input_tokens"], 0)
		require.InDelta(t, 4, m["output_tokens"], 0)

		var costs anthropicPage
		require.Equal(t, http.StatusOK, h.report("/v1/organizations/cost_report?group_by[]=description&starting_at="+from, &costs, ant...))
		amounts := map[string]string{}
		for _, r := range costs.Data[0].Results {
			m := r.(map[string]any)
			require.Equal(t, "USD", m["currency"])
			amounts[m["token_type"].(string)] = m["amount"].(string)
		}
		// 1 input token at $3/M = 3000 nano-USD = 0.0003 cents; 4 output at $15/M = 0.006 cents.
		require.Equal(t, map[string]string{"uncached_input_tokens": "0.0003", "output_tokens": "0.006"}, amounts)
	})
}

func TestCents(t *testing.T) {
	for nano, want := range map[int64]string{0: "0", 10_000_000: "1", 12_345_678_900: "1234.56789", 3000: "0.0003"} {
		require.Equal(t, want, cents(nano))
	}
}
