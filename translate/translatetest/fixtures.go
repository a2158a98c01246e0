// Package translatetest holds the provider streams and bodies that the
// translators' tests and the processor's tests both replay. It is imported
// only from _test.go files.
package translatetest

import (
	"encoding/json"
	"strings"
)

// OpenAIStream is a streamed chat completion with include_usage, as OpenAI sends it.
const OpenAIStream = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\n\n" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello there, friend\"},\"finish_reason\":null}],\"usage\":null}\n\n" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":5,\"total_tokens\":17,\"prompt_tokens_details\":{\"cached_tokens\":2},\"completion_tokens_details\":{\"reasoning_tokens\":1}}}\n\n" +
	"data: [DONE]\n\n"

// StreamUsageEvent is the data of the usage event that ends an OpenAI chat
// stream with include_usage.
const StreamUsageEvent = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}`

// AnthropicSSE frames Anthropic stream events as SSE, each named by its type.
func AnthropicSSE(events ...string) string {
	var b strings.Builder
	for _, ev := range events {
		var m struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(ev), &m) != nil {
			panic(ev)
		}
		b.WriteString("event: " + m.Type + "\ndata: " + ev + "\n\n")
	}
	return b.String()
}

// NativeStream is a streamed Anthropic message as Anthropic sends it.
var NativeStream = AnthropicSSE(
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":21,"cache_creation_input_tokens":1000,"cache_read_input_tokens":0,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"ping"}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`,
	`{"type":"message_stop"}`,
)

// NamedModel is a native reply as the client gets it: its first model
// member, upstream's id, names the model the client asked for instead.
func NamedModel(reply, upstream, client string) string {
	return strings.Replace(reply, `"model":"`+upstream+`"`, `"model":"`+client+`"`, 1)
}
