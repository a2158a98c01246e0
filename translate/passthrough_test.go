package translate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// TestPassthroughUsageShapes: the usage of each known reply shape, JSON and
// SSE split anywhere, in the kernel's disjoint kinds.
func TestPassthroughUsageShapes(t *testing.T) {
	for _, c := range []struct {
		name     string
		provider ProviderType
		body     string
		want     kernel.Usage
	}{
		{
			"openai chat", ProviderOpenAI, `{"usage":{"prompt_tokens":10,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			kernel.Usage{Input: 6, CachedInput: 4, Output: 5, Reasoning: 2},
		},
		{
			"openai responses", ProviderOpenAI, `{"usage":{"input_tokens":9,"output_tokens":3,"input_tokens_details":{"cached_tokens":1},"output_tokens_details":{"reasoning_tokens":1}}}`,
			kernel.Usage{Input: 8, CachedInput: 1, Output: 2, Reasoning: 1},
		},
		{
			"anthropic", ProviderAnthropic, `{"usage":{"input_tokens":9,"output_tokens":3,"cache_read_input_tokens":5,"cache_creation_input_tokens":2}}`,
			kernel.Usage{Input: 9, CachedInput: 5, CacheWrite: 2, Output: 3},
		},
		{
			"gemini", ProviderGemini, `{"usageMetadata":{"promptTokenCount":12,"cachedContentTokenCount":2,"candidatesTokenCount":4,"thoughtsTokenCount":3}}`,
			kernel.Usage{Input: 10, CachedInput: 2, Output: 4, Reasoning: 3},
		},
	} {
		p := &Passthrough{}
		_, err := p.Request(&Inbound{}, &Target{Provider: c.provider})
		require.NoError(t, err)
		out, u, err := p.Response([]byte(c.body))
		require.NoError(t, err, c.name)
		require.Equal(t, c.body, string(out))
		require.Equal(t, c.want, u, c.name)
	}
	p := &Passthrough{}
	_, u, err := p.Response([]byte(`{"data":[]}`))
	require.Error(t, err, "no usage: the processor estimates")
	require.Zero(t, u)
	_, u, err = (&Passthrough{PerCall: true}).Response([]byte(`{"data":[]}`))
	require.NoError(t, err)
	require.Equal(t, kernel.Usage{Input: 1}, u)
}

func TestPassthroughStreamUsage(t *testing.T) {
	stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hi\"}}\n\n" +
		"event: message_delta\r\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\r\n\r\n"
	for split := 1; split < len(stream); split += 7 {
		p := &Passthrough{}
		_, err := p.Request(&Inbound{}, &Target{Provider: ProviderAnthropic, APIKey: "sk-x"})
		require.NoError(t, err)
		var got []byte
		for i := 0; i < len(stream); i += split {
			chunk := []byte(stream[i:min(i+split, len(stream))])
			out, err := p.StreamChunk(chunk, i+split >= len(stream))
			require.NoError(t, err)
			got = append(got, out...)
		}
		require.Equal(t, stream, string(got), "bytes pass unchanged")
		u, ok := p.StreamUsage()
		require.True(t, ok)
		require.Equal(t, kernel.Usage{Input: 25, Output: 15}, u, "split %d", split)
	}
}

func TestPassthroughRequest(t *testing.T) {
	for _, c := range []struct {
		provider   ProviderType
		base, rest string
		path, hdr  string
	}{
		{ProviderOpenAI, "/v1", "/v1/images/generations?x=1", "/v1/images/generations?x=1", HdrAuthorization},
		{ProviderOpenAI, "/v1", "/images/generations", "/v1/images/generations", HdrAuthorization},
		{ProviderAnthropic, "", "/v1/messages/count_tokens", "/v1/messages/count_tokens", HdrXAPIKey},
		{ProviderAzure, "", "/openai/deployments/d/images/generations?api-version=2024-10-21", "/openai/deployments/d/images/generations?api-version=2024-10-21", HdrAPIKey},
		{ProviderGemini, "", "/v1beta/models/gemini-2.0-flash:countTokens", "/v1beta/models/gemini-2.0-flash:countTokens", HdrGoogAPIKey},
	} {
		p := &Passthrough{Rest: c.rest}
		out, err := p.Request(&Inbound{}, &Target{Provider: c.provider, BasePath: c.base, APIKey: "sk-up"})
		require.NoError(t, err)
		require.Equal(t, c.path, out.Path)
		require.Len(t, out.Headers, 1)
		require.Equal(t, c.hdr, out.Headers[0][0])
		require.Contains(t, out.Headers[0][1], "sk-up")
		require.Nil(t, out.Body, "the body goes unchanged")
	}
	require.Equal(t, "gemini-2.0-flash", PassthroughModel("/v1beta/models/gemini-2.0-flash:generateContent?alt=sse", nil))
	require.Equal(t, "gpt-4o", PassthroughModel("/v1/chat/completions", []byte(`{"model":"gpt-4o"}`)))
	require.Equal(t, "anthropic.claude-3-haiku-20240307-v1:0", PassthroughModel("/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse", nil))
	require.Empty(t, PassthroughModel("/v1/models", nil))
}

// TestPassthroughReplyModel: the model each shape's reply or stream names,
// read whether or not the call is charged per call.
func TestPassthroughReplyModel(t *testing.T) {
	for _, c := range []struct {
		name     string
		provider ProviderType
		body     string
		stream   bool
		model    string
		usage    kernel.Usage
	}{
		{"openai", ProviderOpenAI, `{"model":"gpt-4o-2024-08-06","usage":{"prompt_tokens":3,"completion_tokens":2}}`, false, "gpt-4o-2024-08-06", kernel.Usage{Input: 3, Output: 2}},
		{"gemini", ProviderGemini, `{"modelVersion":"gemini-2.0-flash-001","usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":1}}`, false, "gemini-2.0-flash-001", kernel.Usage{Input: 4, Output: 1}},
		{"no usage", ProviderOpenAI, `{"model":"m","data":[]}`, false, "m", kernel.Usage{}},
		{
			"anthropic sse", ProviderAnthropic,
			"data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x-1\",\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":5}}\n\n",
			true, "claude-x-1",
			kernel.Usage{Input: 9, Output: 5},
		},
		{
			"responses sse", ProviderOpenAI,
			"data: {\"type\":\"response.created\",\"response\":{\"model\":\"o-2\",\"usage\":null}}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"o-2\",\"usage\":{\"input_tokens\":6,\"output_tokens\":2}}}\n\n",
			true, "o-2",
			kernel.Usage{Input: 6, Output: 2},
		},
	} {
		for _, perCall := range []bool{false, true} {
			p := &Passthrough{PerCall: perCall}
			_, err := p.Request(&Inbound{}, &Target{Provider: c.provider})
			require.NoError(t, err)
			if c.stream {
				_, err = p.StreamChunk([]byte(c.body), true)
				require.NoError(t, err)
			} else {
				_, _, _ = p.Response([]byte(c.body))
			}
			model, u, ok := p.Reply()
			require.Equal(t, c.model, model, c.name)
			require.Equal(t, c.usage, u, c.name)
			require.Equal(t, c.usage != kernel.Usage{}, ok, c.name)
		}
	}
}
