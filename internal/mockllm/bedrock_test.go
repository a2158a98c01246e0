package mockllm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/require"
)

const mockAccessKey = "AKIAMOCKLLMEXAMPLE01"

// bedrockPost signs body with SigV4 (secret, token) and posts it.
func (h *harness) bedrockPost(path string, body any, secret, token string, headers ...string) *http.Response {
	h.t.Helper()
	b, err := json.Marshal(body)
	require.NoError(h.t, err)
	req, err := http.NewRequest(http.MethodPost, h.url+path, bytes.NewReader(b))
	require.NoError(h.t, err)
	req.Header.Set("content-type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	sum := sha256.Sum256(b)
	creds := aws.Credentials{AccessKeyID: mockAccessKey, SecretAccessKey: secret, SessionToken: token}
	require.NoError(h.t, v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()))
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func converseBody(text string, maxTokens int) map[string]any {
	b := map[string]any{
		"system":   []any{map[string]any{"text": "sys!"}},
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"text": text}}}},
	}
	if maxTokens > 0 {
		b["inferenceConfig"] = map[string]any{"maxTokens": maxTokens}
	}
	return b
}

var mockSecret = BedrockAccessKeys[mockAccessKey]

func TestBedrockSigV4IsVerified(t *testing.T) {
	h := start(t, testConfig())
	path := "/model/anthropic.claude-v2%3A1/converse"
	m := decodeJSON(t, h.bedrockPost(path, converseBody("hi", 3), mockSecret, "session-token"), http.StatusOK)
	require.Equal(t, "max_tokens", m["stopReason"])

	resp := h.bedrockPost(path, converseBody("hi", 3), "not-the-secret", "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, "InvalidSignatureException", resp.Header.Get("x-amzn-ErrorType"))

	resp = h.post(path, converseBody("hi", 3), "Authorization", "Bearer x")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, Usage{Requests: 1, Errors: 1, InputTokens: 2, OutputTokens: 3}, h.srv.Stats().Keys[mockAccessKey])
}

func TestBedrockConverseJSONAndErrors(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.bedrockPost("/model/m/converse", converseBody("what is up", 0), mockSecret, "", "x-mock-cached-tokens", "1"), http.StatusOK)
	require.Equal(t, "end_turn", m["stopReason"])
	msg := m["output"].(map[string]any)["message"].(map[string]any)
	require.Equal(t, words("what is up", 16), msg["content"].([]any)[0].(map[string]any)["text"])
	// "sys!what is up" = 14 bytes → 4 tokens, 1 of them a cache read.
	require.Equal(t, map[string]any{"inputTokens": 3.0, "outputTokens": 16.0, "totalTokens": 20.0, "cacheReadInputTokens": 1.0}, m["usage"])

	resp := h.bedrockPost("/model/m/converse", converseBody("x", 1), mockSecret, "", "x-mock-status", "429")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "ThrottlingException", resp.Header.Get("x-amzn-ErrorType"))
	require.Equal(t, map[string]any{"message": "injected by x-mock-status"}, decodeJSON(t, resp, http.StatusTooManyRequests))
}

func TestBedrockConverseStreamFrames(t *testing.T) {
	cfg := testConfig()
	cfg.Chunks = 2
	h := start(t, cfg)
	resp := h.bedrockPost("/model/m/converse-stream", converseBody("one two three", 5), mockSecret, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/vnd.amazon.eventstream", resp.Header.Get("content-type"))
	dec := eventstream.NewDecoder()
	var types []string
	var text string
	var usage map[string]any
	for {
		m, err := dec.Decode(resp.Body, nil)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		typ := m.Headers.Get(":event-type").String()
		types = append(types, typ)
		var ev map[string]any
		require.NoError(t, json.Unmarshal(m.Payload, &ev))
		if d, ok := ev["delta"].(map[string]any); ok {
			text += d["text"].(string)
		}
		if u, ok := ev["usage"].(map[string]any); ok {
			usage = u
		}
	}
	require.Equal(t, []string{"messageStart", "contentBlockDelta", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}, types)
	require.Equal(t, "one two three one two", text)
	require.InDelta(t, 5, usage["outputTokens"], 0)
	require.Equal(t, Usage{Requests: 1, InputTokens: 5, OutputTokens: 5}, h.srv.Stats().Keys[mockAccessKey])
}

func TestBedrockInvokeEmbeddings(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.bedrockPost("/model/amazon.titan-embed-text-v2%3A0/invoke", map[string]any{"inputText": "hello", "dimensions": 4}, mockSecret, ""), http.StatusOK)
	require.Len(t, m["embedding"], 4)
	require.InDelta(t, 2, m["inputTextTokenCount"], 0)
	m = decodeJSON(t, h.bedrockPost("/model/cohere.embed-english-v3/invoke", map[string]any{"texts": []string{"a", "bcdef"}, "input_type": "search_document"}, mockSecret, ""), http.StatusOK)
	require.Len(t, m["embeddings"], 2)
	require.Equal(t, Usage{Requests: 2, InputTokens: 2 + 1 + 2}, h.srv.Stats().Keys[mockAccessKey])
}
