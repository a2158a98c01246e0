package extproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

const chatResponse = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":3}}}`

var chatUsage = kernel.Usage{Input: 16, CachedInput: 4, Output: 6, Reasoning: 3}

func TestChatNonStream(t *testing.T) {
	e := newTestEnv(t)
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody,
		extprocfilter.Header{Key: RouteHeader, Value: "attacker-chosen"},
		extprocfilter.Header{Key: "x-api-key", Value: clientKey}), up.upstream)

	fwd := up.last(t)
	require.True(t, fwd.ClearRouteCache)
	require.Equal(t, []string{"openai-gpt4o"}, fwd.Headers.Values(RouteHeader), "route header always overwritten")
	require.Equal(t, "Bearer "+openAIKey, fwd.Headers.Value("authorization"))
	require.False(t, fwd.Headers.Has("x-api-key"), "client key removed")
	require.Equal(t, "/v1/chat/completions", fwd.Headers.Value(":path"))
	require.Equal(t, strconv.Itoa(len(fwd.Body)), fwd.Headers.Value("content-length"))
	var sent map[string]any
	require.NoError(t, json.Unmarshal(fwd.Body, &sent))
	require.Equal(t, "gpt-4o-2024-08-06", sent["model"])
	require.NotContains(t, sent, "stream_options")

	require.Equal(t, 200, resp.Status)
	require.Equal(t, strings.Replace(chatResponse, `"model":"gpt-4o-2024-08-06"`, `"model":"gpt-4o"`, 1), string(resp.Body),
		"OpenAI responses pass unchanged but for the model, the client's name")
	id := resp.Headers.Value(hdrRequestID)
	require.NotEmpty(t, id)
	cost := kernel.Cost(testPrice, chatUsage)
	require.Positive(t, cost)
	require.Equal(t, translate.FormatUSD(cost), resp.Headers.Value(hdrCost))

	recs := e.acct.Records()
	require.Len(t, recs, 1)
	r := recs[0]
	require.Equal(t, id, r.RequestID)
	require.Equal(t, chatUsage, r.Usage)
	require.Equal(t, kernel.StatusCompleted, r.Status)
	require.Equal(t, 200, r.HTTPStatus)
	require.Equal(t, "gpt-4o", r.Model)
	require.Equal(t, "openai-gpt4o", r.Deployment)
	require.False(t, r.Stream)
	require.False(t, r.EndedAt.Before(r.StartedAt))

	admits := e.acct.Admits()
	require.Len(t, admits, 1)
	require.Equal(t, int64(len(testPromptBody)), admits[0].PromptBytes)
	require.Equal(t, int64(4096), admits[0].DefaultMaxTokens)
	require.Equal(t, "gpt-4o", admits[0].Model)
	require.Len(t, admits[0].Scopes, 3)

	logs := e.logs.String()
	require.Contains(t, logs, `"authorization: [redacted]"`, "debug logs show headers, secrets redacted")
	require.Contains(t, logs, `"x-api-key: [redacted]"`)
	require.Contains(t, logs, `"msg":"settled"`)
}

func streamBody(withUsage bool) string {
	var b strings.Builder
	b.WriteString(": keep-alive\r\n\r\n")
	for _, word := range []string{"", "Hello", " there", ", friend"} {
		b.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":` + strconv.Quote(word) + `},"finish_reason":null}],"usage":null}` + "\n\n")
	}
	if withUsage {
		b.WriteString("data: " + translatetest.StreamUsageEvent + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func TestChatStream(t *testing.T) {
	body := streamBody(true)
	usageEvent := "data: " + translatetest.StreamUsageEvent + "\n\n"
	for _, asked := range []bool{false, true} {
		for _, size := range []int{3, 17, 64, 4096} {
			t.Run(fmt.Sprintf("include_usage=%v/chunks of %d", asked, size), func(t *testing.T) {
				e := newTestEnv(t)
				up := &recorder{resp: sseResponse(body, size)}
				req := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`
				if asked {
					req = `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`
				}
				resp := e.do(t, post("/v1/chat/completions", clientKey, req), up.upstream)

				var sent map[string]any
				require.NoError(t, json.Unmarshal(up.last(t).Body, &sent))
				require.Equal(t, map[string]any{"include_usage": true}, sent["stream_options"])

				require.Equal(t, 200, resp.Status)
				if asked {
					require.Equal(t, body, string(resp.Body), "SSE passes unchanged")
				} else {
					require.Equal(t, strings.Replace(body, usageEvent, "", 1), string(resp.Body),
						"the usage event the client did not ask for is removed, nothing else")
				}
				require.False(t, resp.Headers.Has("content-length"), "content-length removed on STREAMED")
				require.NotEmpty(t, resp.Headers.Value(hdrRequestID))
				require.False(t, resp.Headers.Has(hdrCost), "headers are gone before the cost is known")
				if size < len(body) {
					require.Greater(t, len(resp.Chunks), 1, "mode_override switched the response to STREAMED")
				}
				recs := e.acct.Records()
				require.Len(t, recs, 1)
				require.Equal(t, kernel.Usage{Input: 10, CachedInput: 2, Output: 4, Reasoning: 1}, recs[0].Usage)
				require.Equal(t, kernel.StatusCompleted, recs[0].Status)
				require.True(t, recs[0].Stream)
			})
		}
	}
}

func TestChatStreamEndedByTrailers(t *testing.T) {
	e := newTestEnv(t)
	r := sseResponse(streamBody(true), 50)
	r.Trailers = extprocfilter.Headers{{Key: "x-upstream-done", Value: "1"}}
	resp := e.do(t, post("/v1/chat/completions", clientKey, `{"model":"gpt-4o","stream":true}`), (&recorder{resp: r}).upstream)
	require.Equal(t, 200, resp.Status)
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, kernel.StatusCompleted, recs[0].Status)
	require.Equal(t, int64(10), recs[0].Usage.Input)
}

func TestChatStreamWithoutUsage(t *testing.T) {
	// A provider that ignores include_usage: settled from estimates.
	e := newTestEnv(t)
	req := `{"model":"gpt-4o","stream":true}`
	resp := e.do(t, post("/v1/chat/completions", clientKey, req), (&recorder{resp: sseResponse(streamBody(false), 40)}).upstream)
	require.Equal(t, 200, resp.Status)
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, kernel.StatusCompleted, recs[0].Status)
	require.Equal(t, translate.EstimateTokens(int64(len(req))), recs[0].Usage.Input)
	require.Equal(t, translate.EstimateTokens(int64(len("Hello there, friend"))), recs[0].Usage.Output)
}

func TestStreamAbortedByUpstreamReset(t *testing.T) {
	e := newTestEnv(t)
	r, _, req := resetStream()
	resp := e.do(t, post("/v1/chat/completions", clientKey, req), (&recorder{resp: r}).upstream)
	require.True(t, resp.Reset)
	recs := e.acct.waitRecords(t, 1)
	require.Equal(t, kernel.StatusAborted, recs[0].Status)
	require.Equal(t, translate.EstimateTokens(int64(len("tell me a story"))), recs[0].Usage.Input, "input charged at minimum, from the prompt's text")
	require.Equal(t, translate.EstimateTokens(int64(len("Hello there, friend"))), recs[0].Usage.Output, "output estimated from the text")
	require.Positive(t, kernel.Cost(testPrice, recs[0].Usage), "never $0")
}

func TestStreamAbortedByClientAfterUsage(t *testing.T) {
	// The usage event arrived, then the client went away before end of stream:
	// the reported usage is charged, as aborted.
	e := newTestEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := e.client.Start(ctx)
	req := post("/v1/chat/completions", clientKey, `{"model":"gpt-4o","stream":true}`)
	r, err := s.RequestHeaders(req.Headers, false)
	require.NoError(t, err)
	require.Nil(t, r.LocalReply)
	r, err = s.RequestBody(req.Body[0], true)
	require.NoError(t, err)
	require.Nil(t, r.LocalReply)
	r, err = s.ResponseHeaders(extprocfilter.Headers{{Key: ":status", Value: "200"}, {Key: "content-type", Value: "text/event-stream"}}, false)
	require.NoError(t, err)
	require.Nil(t, r.LocalReply)
	r, err = s.ResponseBody([]byte("data: "+translatetest.StreamUsageEvent+"\n\n"), false)
	require.NoError(t, err)
	require.Nil(t, r.LocalReply)
	s.Close()
	recs := e.acct.waitRecords(t, 1)
	require.Equal(t, kernel.StatusAborted, recs[0].Status)
	require.Equal(t, kernel.Usage{Input: 10, CachedInput: 2, Output: 4, Reasoning: 1}, recs[0].Usage)
}

func TestAbortBeforeResponse(t *testing.T) {
	e := newTestEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := e.client.Start(ctx)
	req := post("/v1/chat/completions", clientKey, testPromptBody)
	_, err := s.RequestHeaders(req.Headers, false)
	require.NoError(t, err)
	r, err := s.RequestBody(req.Body[0], true)
	require.NoError(t, err)
	require.True(t, r.Continue)
	s.Close()
	recs := e.acct.waitRecords(t, 1)
	require.Equal(t, kernel.StatusAborted, recs[0].Status)
	require.Equal(t, translate.EstimateTokens(int64(len("Say hello"))), recs[0].Usage.Input, "from the prompt's text, not the body")
	require.Zero(t, recs[0].Usage.Output)
}

func TestProviderFlavours(t *testing.T) {
	embedResp := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.0023,-0.0093]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`
	complResp := `{"id":"cmpl-1","object":"text_completion","created":1,"model":"gpt-3.5-turbo-instruct","choices":[{"text":"This is a test.","index":0,"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`
	tests := []struct {
		name     string
		path     string
		body     string
		upstream string
		wantPath string
		wantAuth [2]string
		model    string
		usage    kernel.Usage
	}{
		{
			name: "azure chat", path: "/v1/chat/completions", body: `{"model":"azure-gpt","messages":[]}`, upstream: chatResponse,
			wantPath: "/openai/deployments/gpt4o-east/chat/completions?api-version=2024-10-21",
			wantAuth: [2]string{"api-key", azureKey}, model: "gpt4o-east", usage: chatUsage,
		},
		{
			name: "openai completions", path: "/v1/completions", body: `{"model":"instruct","prompt":"Say this is a test","max_tokens":7}`, upstream: complResp,
			wantPath: "/v1/completions", wantAuth: [2]string{"authorization", "Bearer " + openAIKey},
			model: "gpt-3.5-turbo-instruct", usage: kernel.Usage{Input: 5, Output: 7},
		},
		{
			name: "openai embeddings", path: "/v1/embeddings", body: `{"model":"embed","input":"The food was delicious"}`, upstream: embedResp,
			wantPath: "/v1/embeddings", wantAuth: [2]string{"authorization", "Bearer " + openAIKey},
			model: "text-embedding-3-small", usage: kernel.Usage{Input: 8},
		},
		{
			name: "azure embeddings", path: "/v1/embeddings", body: `{"model":"azure-embed","input":["a","b"]}`, upstream: embedResp,
			wantPath: "/openai/deployments/embed-east/embeddings?api-version=2024-10-21", wantAuth: [2]string{"api-key", azureKey},
			model: "embed-east", usage: kernel.Usage{Input: 8},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			up := &recorder{resp: jsonResponse(200, tt.upstream)}
			resp := e.do(t, post(tt.path, clientKey, tt.body), up.upstream)
			require.Equal(t, 200, resp.Status)
			fwd := up.last(t)
			require.Equal(t, tt.wantPath, fwd.Headers.Value(":path"))
			require.Equal(t, tt.wantAuth[1], fwd.Headers.Value(tt.wantAuth[0]))
			for _, h := range []string{"authorization", "api-key", "x-api-key"} {
				if h != tt.wantAuth[0] {
					require.False(t, fwd.Headers.Has(h), h)
				}
			}
			var sent map[string]any
			require.NoError(t, json.Unmarshal(fwd.Body, &sent))
			require.Equal(t, tt.model, sent["model"])
			recs := e.acct.Records()
			require.Len(t, recs, 1)
			require.Equal(t, tt.usage, recs[0].Usage)
			require.Equal(t, translate.FormatUSD(kernel.Cost(e.cat.targets[recs[0].Model].Price, tt.usage)), resp.Headers.Value(hdrCost))
		})
	}
}

func TestAzureStream(t *testing.T) {
	e := newTestEnv(t)
	up := &recorder{resp: sseResponse(streamBody(true), 21)}
	resp := e.do(t, post("/v1/chat/completions", clientKey, `{"model":"azure-gpt","stream":true,"stream_options":{"include_usage":false}}`), up.upstream)
	require.Equal(t, 200, resp.Status)
	require.Equal(t, "/openai/deployments/gpt4o-east/chat/completions?api-version=2024-10-21", up.last(t).Headers.Value(":path"))
	require.Contains(t, string(up.last(t).Body), `"include_usage":true`)
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, int64(10), recs[0].Usage.Input)
}

type wantError struct {
	status int
	typ    string
	code   string
	param  string
	msg    string // substring
}

func requireOpenAIError(t *testing.T, resp *extprocfiltertest.Response, w wantError) {
	t.Helper()
	require.NotNil(t, resp.LocalReply, "expected an immediate response")
	require.Equal(t, w.status, resp.Status)
	require.Equal(t, "application/json", resp.Headers.Value("content-type"))
	require.NotEmpty(t, resp.Headers.Value(hdrRequestID))
	var body struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &body), string(resp.Body))
	require.Equal(t, w.typ, body.Error.Type)
	if w.code == "" {
		require.Nil(t, body.Error.Code)
	} else {
		require.NotNil(t, body.Error.Code)
		require.Equal(t, w.code, *body.Error.Code)
	}
	if w.param == "" {
		require.Nil(t, body.Error.Param)
	} else {
		require.NotNil(t, body.Error.Param)
		require.Equal(t, w.param, *body.Error.Param)
	}
	require.Contains(t, body.Error.Message, w.msg)
	for _, secret := range []string{clientKey, otherKey, openAIKey, azureKey} {
		require.NotContains(t, string(resp.Body), secret)
	}
}

func TestRejections(t *testing.T) {
	big := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`
	noCL := post("/v1/chat/completions", clientKey, big)
	noCL.Headers = without(noCL.Headers, "content-length")
	noKey := post("/v1/chat/completions", "", testPromptBody)
	xKey := post("/v1/chat/completions", "", `{"model":"nope"}`, extprocfilter.Header{Key: "x-api-key", Value: clientKey})
	noBody := post("/v1/chat/completions", clientKey, "")
	noBody.Body = nil
	tests := []struct {
		name  string
		req   *extprocfiltertest.Request
		setup func(e *testEnv)
		want  wantError
	}{
		{name: "missing key", req: noKey, want: wantError{401, "invalid_request_error", "invalid_api_key", "", "didn't provide an API key"}},
		{name: "bad key", req: post("/v1/chat/completions", "tg-wrong", testPromptBody), want: wantError{401, "invalid_request_error", "invalid_api_key", "", "Invalid API key"}},
		{name: "x-api-key accepted", req: xKey, want: wantError{404, "invalid_request_error", "model_not_found", "model", "`nope` does not exist"}},
		{name: "unknown path", req: post("/v1/assistants", clientKey, `{}`), want: wantError{404, "invalid_request_error", "unknown_url", "", "Invalid URL (POST /v1/assistants)"}},
		{name: "wrong method", req: get("/v1/chat/completions?x=1", clientKey), want: wantError{404, "invalid_request_error", "unknown_url", "", "GET /v1/chat/completions)"}},
		{name: "malformed JSON", req: post("/v1/chat/completions", clientKey, "{\"model\":\"gpt-4o\",\n\"messages\": [}"), want: wantError{400, "invalid_request_error", "invalid_json", "", "line 2, column 14"}},
		{name: "not an object", req: post("/v1/chat/completions", clientKey, `["gpt-4o"]`), want: wantError{400, "invalid_request_error", "invalid_json", "", "expected an object"}},
		{name: "missing model", req: post("/v1/chat/completions", clientKey, `{"messages":[]}`), want: wantError{400, "invalid_request_error", "", "model", "must provide a model"}},
		{name: "model not a string", req: post("/v1/chat/completions", clientKey, `{"model":4}`), want: wantError{400, "invalid_request_error", "", "model", "must be a string"}},
		{name: "duplicate model", req: post("/v1/chat/completions", clientKey, `{"model":"gpt-4o","model":"azure-gpt"}`), want: wantError{400, "invalid_request_error", "", "model", "more than once"}},
		{name: "no body", req: noBody, want: wantError{400, "invalid_request_error", "", "", "no body"}},
		{name: "unknown model", req: post("/v1/chat/completions", clientKey, `{"model":"gpt-9"}`), want: wantError{404, "invalid_request_error", "model_not_found", "model", "`gpt-9` does not exist"}},
		{name: "model not allowed", req: post("/v1/chat/completions", otherKey, `{"model":"azure-gpt"}`), want: wantError{403, "invalid_request_error", "model_not_allowed", "model", "not allowed to use the model `azure-gpt`"}},
		{name: "endpoint unsupported by provider", req: post("/v1/embeddings", clientKey, `{"model":"claude","input":"x"}`), want: wantError{400, "invalid_request_error", "unsupported_endpoint", "model", "does not support /v1/embeddings"}},
		{name: "too large by content-length", req: post("/v1/chat/completions", clientKey, big), setup: nil, want: wantError{413, "invalid_request_error", "request_too_large", "", "limit of 1024 bytes"}},
		{name: "too large by body", req: noCL, want: wantError{413, "invalid_request_error", "request_too_large", "", "limit of 1024 bytes"}},
		{
			name: "catalog down", req: post("/v1/chat/completions", clientKey, testPromptBody),
			setup: func(e *testEnv) { e.cat.authErr = errors.New("snapshot unavailable") },
			want:  wantError{503, "server_error", "service_unavailable", "", "retry shortly"},
		},
		{
			name: "accountant down", req: post("/v1/chat/completions", clientKey, testPromptBody),
			setup: func(e *testEnv) { e.acct.admitErr = errors.New("redis: connection refused") },
			want:  wantError{503, "server_error", "service_unavailable", "", "retry shortly"},
		},
		{
			name: "key expired", req: post("/v1/chat/completions", clientKey, testPromptBody),
			setup: func(e *testEnv) {
				e.acct.decide = func(*kernel.AdmitRequest) *kernel.Decision {
					return &kernel.Decision{Reason: kernel.ReasonKeyExpired, Scope: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}}
				}
			},
			want: wantError{401, "invalid_request_error", "invalid_api_key", "", "expired"},
		},
		{
			name: "kernel model not allowed", req: post("/v1/chat/completions", clientKey, testPromptBody),
			setup: func(e *testEnv) {
				e.acct.decide = func(*kernel.AdmitRequest) *kernel.Decision {
					return &kernel.Decision{Reason: kernel.ReasonModelNotAllowed, Scope: kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "t"}}
				}
			},
			want: wantError{403, "invalid_request_error", "model_not_allowed", "model", "team is not allowed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, WithMaxBodyBytes(1024))
			if tt.setup != nil {
				tt.setup(e)
			}
			up := &recorder{resp: jsonResponse(200, chatResponse)}
			resp := e.do(t, tt.req, up.upstream)
			requireOpenAIError(t, resp, tt.want)
			require.Empty(t, up.got, "rejected requests never go upstream")
			require.Empty(t, e.acct.Records(), "nothing admitted, nothing settled")
		})
	}
}
