package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// TestStreamCutEndsWithAnErrorEvent: the provider resets a stream after a
// few events (the mock's x-mock-disconnect-after). On the built-in data plane
// the client's stream ends cleanly with an error event in its own API's
// shape — OpenAI chat and completions, the Responses API, Anthropic Messages
// and the Gemini API — after the events that went through, not with a
// truncated body; the request is settled as aborted with the usage seen.
func TestStreamCutEndsWithAnErrorEvent(t *testing.T) {
	cases := []struct {
		name, path, body, want string
	}{
		{
			"chat", "/v1/chat/completions",
			`{"model":"demo","stream":true,"max_tokens":40,"messages":[{"role":"user","content":"tell me a long story"}]}`,
			"data: {\"error\":{\"message\":\"the provider's stream was cut before its end; the reply is incomplete\",\"type\":\"server_error\",\"param\":null,\"code\":\"upstream_reset\"}}\n\n",
		},
		{
			"completions", "/v1/completions",
			`{"model":"demo","stream":true,"max_tokens":40,"prompt":"tell me a long story"}`,
			"data: {\"error\":{\"message\":\"the provider's stream was cut before its end; the reply is incomplete\",\"type\":\"server_error\",\"param\":null,\"code\":\"upstream_reset\"}}\n\n",
		},
		{
			"responses", "/v1/responses",
			`{"model":"demo","stream":true,"max_output_tokens":40,"input":"tell me a long story"}`,
			"event: error\ndata: {\"type\":\"error\",\"code\":\"upstream_reset\",\"message\":\"the provider's stream was cut before its end; the reply is incomplete\",\"param\":null",
		},
		{
			"messages", "/v1/messages",
			`{"model":"demo","stream":true,"max_tokens":40,"messages":[{"role":"user","content":"tell me a long story"}]}`,
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"the provider's stream was cut before its end; the reply is incomplete\"}}\n\n",
		},
		{
			"gemini", "/v1beta/models/demo:streamGenerateContent?alt=sse",
			`{"contents":[{"role":"user","parts":[{"text":"tell me a long story"}]}],"generationConfig":{"maxOutputTokens":40}}`,
			"data: {\"error\":{\"code\":502,\"message\":\"the provider's stream was cut before its end; the reply is incomplete\",\"status\":",
		},
	}
	for _, overGRPC := range []bool{false, true} {
		name := map[bool]string{false: "in-process", true: "grpc"}[overGRPC]
		t.Run(name, func(t *testing.T) {
			r := start(t, overGRPC)
			key := r.key(t, "k-cut", kernel.Limits{})
			r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					req, err := http.NewRequest(http.MethodPost, r.url+tc.path, strings.NewReader(tc.body))
					require.NoError(t, err)
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("x-mock-disconnect-after", "3")
					resp, err := http.DefaultClient.Do(req)
					require.NoError(t, err)
					defer resp.Body.Close()
					b, err := io.ReadAll(resp.Body)
					require.NoError(t, err, "the stream ends cleanly, not cut: %s", b)
					require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
					body := string(b)
					i := strings.Index(body, tc.want)
					require.Positive(t, i, "the first events, then the error event: %s", body)
					t.Logf("%s: %d bytes, ending …%q", tc.name, len(body), body[max(0, i-80):])
					require.True(t, strings.HasSuffix(body, "\n\n"), "the error event is the last: %q", body[i:])
					require.NotContains(t, body, "[DONE]")
					require.NotContains(t, body, "message_stop")
				})
			}
			require.NoError(t, r.st.Flush(context.Background()))
			rows, err := r.st.Entries(context.Background(), store.LedgerFilter{Scope: &kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-cut"}})
			require.NoError(t, err)
			aborted := 0
			for _, e := range rows {
				if e.Status == kernel.StatusAborted {
					aborted++
					require.True(t, e.Stream)
					require.Positive(t, e.Usage.Output, "charged the output seen")
				}
			}
			require.Equal(t, len(cases), aborted, "each cut stream settled once, as aborted")
		})
	}
}
