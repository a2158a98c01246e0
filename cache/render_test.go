package cache

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// renderCases: a stored reply (testdata/replies) rendered as a stream for a
// request of the API, against testdata/golden/<name>.golden.
var renderCases = []struct {
	name, reply string
	api         API
	incl, array bool
}{
	{name: "chat_text", reply: "chat_text", api: APIChat},
	{name: "chat_text_usage", reply: "chat_text", api: APIChat, incl: true},
	{name: "chat_tools", reply: "chat_tools", api: APIChat, incl: true},
	{name: "completions_usage", reply: "completions", api: APICompletions, incl: true},
	{name: "responses", reply: "responses", api: APIResponses},
	{name: "messages", reply: "messages", api: APIMessages},
	{name: "gemini_sse", reply: "gemini", api: APIGeminiGenerate},
	{name: "gemini_array", reply: "gemini", api: APIGeminiGenerate, array: true},
}

func readReply(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "replies", name+".json"))
	require.NoError(t, err)
	return b
}

func TestRenderGolden(t *testing.T) {
	for _, c := range renderCases {
		t.Run(c.name, func(t *testing.T) {
			e := &Entry{API: c.api, Body: readReply(t, c.reply), Usage: kernel.Usage{Input: 14, Output: 7}}
			p := &Plan{api: c.api, stream: true, incl: c.incl, jsonArray: c.array}
			got, ct, err := render(e, p)
			require.NoError(t, err)
			if c.array {
				require.Equal(t, contentJSON, ct)
			} else {
				require.Equal(t, contentSSE, ct)
			}
			golden := filepath.Join("testdata", "golden", c.name+".golden")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
}

// A stream rendered from a reply folds back into the same reply: what a
// streamed miss stores is what a plain miss would have.
func TestRenderCollectRoundTrip(t *testing.T) {
	for _, c := range renderCases {
		t.Run(c.name, func(t *testing.T) {
			body := readReply(t, c.reply)
			e := &Entry{API: c.api, Body: body}
			p := &Plan{api: c.api, stream: true, incl: c.incl, jsonArray: c.array, Store: true}
			stream, _, err := render(e, p)
			require.NoError(t, err)
			// Fed in small pieces, split anywhere (CRLF pairs included).
			col := NewCollector(p)
			for i := 0; i < len(stream); i += 7 {
				col.Write(stream[i:min(i+7, len(stream))])
			}
			got, err := col.Body(kernel.Usage{Input: 14, Output: 7}) // chat_text's, its stream has none
			require.NoError(t, err)
			want := body
			if c.api == APIChat {
				want = withoutKeys(t, body, "annotations") // not streamed
			}
			require.JSONEq(t, string(want), string(got))
		})
	}
}

// withoutKeys removes members named k anywhere in a JSON document.
func withoutKeys(t *testing.T, b []byte, k string) []byte {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, k)
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(v)
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out
}

// A stream without its usage chunk (the client did not ask for it) is stored
// with the usage the gateway settled; a cut stream is not stored.
func TestCollectChat(t *testing.T) {
	p := &Plan{api: APIChat, stream: true, Store: true}
	stream := []byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\r\n\r\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":null}]}\n\n")
	end := []byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")

	col := NewCollector(p)
	col.Write(stream)
	_, err := col.Body(kernel.Usage{Input: 3, CachedInput: 1, Output: 2})
	require.Error(t, err, "no finish reason: cut")

	col = NewCollector(p)
	col.Write(stream)
	col.Write(end)
	got, err := col.Body(kernel.Usage{Input: 3, CachedInput: 1, Output: 2})
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,
		"message":{"role":"assistant","content":"Hello","refusal":null},"logprobs":null,"finish_reason":"stop"}],
		"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":0}}}`, string(got))

	col = NewCollector(p)
	col.Write([]byte("data: {\"error\":{\"message\":\"boom\"}}\n\n"))
	_, err = col.Body(kernel.Usage{})
	require.Error(t, err, "an error event")

	require.Nil(t, NewCollector(&Plan{api: APIChat, stream: true}), "a plan that does not store")
	require.Nil(t, NewCollector(&Plan{api: APIChat, Store: true}), "not a stream")
}

func TestCollectResponsesFailed(t *testing.T) {
	col := NewCollector(&Plan{api: APIResponses, stream: true, Store: true})
	col.Write([]byte("event: response.created\ndata: {\"type\":\"response.created\",\"response\":{}}\n\nevent: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\"}}\n\n"))
	_, err := col.Body(kernel.Usage{})
	require.Error(t, err)
}

// Gemini chunks merge: text parts joined, the last finishReason and usage.
func TestCollectGeminiChunks(t *testing.T) {
	for _, array := range []bool{false, true} {
		col := NewCollector(&Plan{api: APIGeminiGenerate, stream: true, Store: true, jsonArray: array})
		chunks := []string{
			`{"candidates":[{"content":{"parts":[{"text":"Par"}],"role":"model"},"index":0}],"modelVersion":"g"}`,
			`{"candidates":[{"content":{"parts":[{"text":"is."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2,"totalTokenCount":3},"modelVersion":"g"}`,
		}
		var b bytes.Buffer
		if array {
			b.WriteString("[" + chunks[0] + ",\r\n" + chunks[1] + "]")
		} else {
			b.WriteString("data: " + chunks[0] + "\r\n\r\ndata: " + chunks[1] + "\r\n\r\n")
		}
		col.Write(b.Bytes())
		got, err := col.Body(kernel.Usage{})
		require.NoError(t, err)
		require.JSONEq(t, `{"candidates":[{"content":{"parts":[{"text":"Paris."}],"role":"model"},"finishReason":"STOP","index":0}],
			"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2,"totalTokenCount":3},"modelVersion":"g"}`, string(got))
	}
}

// What the stream cannot carry is not rendered: the lookup is a miss.
func TestRenderUnsupported(t *testing.T) {
	cases := []struct {
		api  API
		body string
	}{
		{APIChat, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"audio":{"id":"a"}},"finish_reason":"stop"}]}`},
		{APIResponses, `{"status":"failed","output":[]}`},
		{APIMessages, `{"type":"message","content":[{"type":"text","text":"x","citations":[{"type":"char_location"}]}]}`},
		{APIEmbeddings, `{"data":[]}`},
	}
	for _, c := range cases {
		_, _, err := render(&Entry{API: c.api, Body: []byte(c.body)}, &Plan{api: c.api, stream: true})
		require.ErrorIs(t, err, ErrUnsupported, c.body)
	}
	// A plain request gets the stored body as it is.
	b, ct, err := render(&Entry{API: APIEmbeddings, Body: []byte(`{"data":[]}`)}, &Plan{api: APIEmbeddings})
	require.NoError(t, err)
	require.Equal(t, contentJSON, ct)
	require.JSONEq(t, `{"data":[]}`, string(b))
}
