package batch

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

func TestEstimateOpenAI(t *testing.T) {
	l1 := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}}`
	l2 := `{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt","max_completion_tokens":20,"messages":[]}}`
	l3 := `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt"}}`
	e, err := EstimateOpenAI([]byte(l1+"\n"+l2+"\n\n"+l3+"\n"), "/v1/chat/completions")
	require.NoError(t, err)
	require.Equal(t, "gpt", e.Model)
	require.Equal(t, 3, e.Lines)
	require.Equal(t, int64(30), e.MaxTokens)
	require.Equal(t, 1, e.Unbounded)
	body1 := l1[strings.Index(l1, `{"model"`) : len(l1)-1]
	require.Equal(t, int64(len(body1)+len(`{"model":"gpt","max_completion_tokens":20,"messages":[]}`)+len(`{"model":"gpt"}`)), e.PromptBytes)

	price := kernel.Price{Input: 3 * kernel.Dollar, Output: 15 * kernel.Dollar}
	req := e.AdmitRequest("r1", nil, price, 100, 25*time.Hour)
	require.Equal(t, int64(130), req.MaxTokens, "30 + one line bounded by the default")
	require.Equal(t, kernel.Price{Input: 1_500_000_000, Output: 7_500_000_000}, req.Price)
	require.Equal(t, 25*time.Hour, req.Lease)

	for name, in := range map[string]string{
		"mixed models": l1 + "\n" + strings.Replace(l2, `"gpt"`, `"other"`, 1),
		"duplicate id": l1 + "\n" + l1,
		"wrong url":    strings.Replace(l1, "/v1/chat/completions", "/v1/embeddings", 1),
		"no model":     strings.Replace(l1, `"model":"gpt",`, "", 1),
		"not json":     "{",
		"empty":        "\n",
	} {
		_, err := EstimateOpenAI([]byte(in), "/v1/chat/completions")
		require.ErrorIs(t, err, ErrInput, name)
	}
}

func TestEstimateAnthropic(t *testing.T) {
	e, err := EstimateAnthropic([]byte(`{"requests":[{"custom_id":"a","params":{"model":"claude","max_tokens":5,"messages":[]}},{"custom_id":"b","params":{"model":"claude","max_tokens":7,"messages":[]}}]}`))
	require.NoError(t, err)
	require.Equal(t, Estimate{Model: "claude", Lines: 2, PromptBytes: e.PromptBytes, MaxTokens: 12}, e)
	for name, in := range map[string]string{
		"no requests":  `{"requests":[]}`,
		"duplicate id": `{"requests":[{"custom_id":"a","params":{"model":"c"}},{"custom_id":"a","params":{"model":"c"}}]}`,
		"negative":     `{"requests":[{"custom_id":"a","params":{"model":"c","max_tokens":-1}}]}`,
	} {
		_, err := EstimateAnthropic([]byte(in))
		require.ErrorIs(t, err, ErrInput, name)
	}
}

func TestParseResults(t *testing.T) {
	lines, err := ParseOpenAIOutput(strings.NewReader(
		`{"id":"batch_req_1","custom_id":"a","response":{"status_code":200,"request_id":"r","body":{"usage":{"prompt_tokens":24,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":3}}}},"error":null}` + "\n" +
			`{"id":"batch_req_2","custom_id":"b","response":{"status_code":200,"body":{"usage":{"input_tokens":10,"output_tokens":6}}},"error":null}` + "\n" +
			`{"id":"batch_req_3","custom_id":"c","response":null,"error":{"code":"batch_expired","message":"not run"}}` + "\n"))
	require.NoError(t, err)
	require.Equal(t, []Line{
		{CustomID: "a", Usage: kernel.Usage{Input: 20, CachedInput: 4, Output: 5, Reasoning: 3}, HTTPStatus: 200, Status: kernel.StatusCompleted},
		{CustomID: "b", Usage: kernel.Usage{Input: 10, Output: 6}, HTTPStatus: 200, Status: kernel.StatusCompleted},
		{CustomID: "c", Status: kernel.StatusFailed},
	}, lines)
	_, err = ParseOpenAIOutput(strings.NewReader("{\"custom_id\":\n"))
	require.ErrorIs(t, err, ErrProvider)

	lines, err = ParseAnthropicResults(strings.NewReader(
		`{"custom_id":"a","result":{"type":"succeeded","message":{"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":2,"cache_creation_input_tokens":1}}}}` + "\n" +
			`{"custom_id":"b","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"x"}}}}` + "\n" +
			`{"custom_id":"c","result":{"type":"canceled"}}` + "\n" +
			`{"custom_id":"d","result":{"type":"expired"}}` + "\n"))
	require.NoError(t, err)
	require.Equal(t, []Line{
		{CustomID: "a", Usage: kernel.Usage{Input: 3, CachedInput: 2, CacheWrite: 1, Output: 9}, HTTPStatus: 200, Status: kernel.StatusCompleted},
		{CustomID: "b", HTTPStatus: 400, Status: kernel.StatusFailed},
	}, lines)
}

func FuzzParseOpenAIOutput(f *testing.F) {
	f.Add(`{"custom_id":"a","response":{"status_code":200,"body":{"usage":{"prompt_tokens":1}}}}`)
	f.Fuzz(func(t *testing.T, s string) {
		lines, err := ParseOpenAIOutput(strings.NewReader(s))
		if err == nil {
			for _, l := range lines {
				require.NotEmpty(t, l.CustomID)
			}
		}
	})
}
