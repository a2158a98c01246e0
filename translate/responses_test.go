package translate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

// FuzzResponsesStream: the Responses SSE encoder's input is the chat stream
// of an upstream (an OpenAI-compatible server, or Anthropic through the chat
// translator). Whatever bytes arrive, split anywhere, the client gets the same
// bytes and usage, every event it gets is a JSON object whose type is the SSE
// event name, and sequence_number counts 0, 1, 2, … with no gap.
func FuzzResponsesStream(f *testing.F) {
	now := responsesNow
	responsesNow = func() time.Time { return time.Unix(1_750_000_000, 0) }
	f.Cleanup(func() { responsesNow = now })
	f.Add([]byte(translatetest.OpenAIStream), uint8(17), uint8(3), uint8(0))
	f.Add([]byte(translatetest.NativeStream), uint8(5), uint8(90), uint8(1))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}]}\n\ndata: {\"error\":{\"message\":\"x\"}}\n\n"), uint8(9), uint8(9), uint8(0))
	files, _ := filepath.Glob("testdata/anthropic/in/responses_*stream*.json")
	for _, file := range files {
		if raw, err := os.ReadFile(file); err == nil {
			var c anthropicCase
			if json.Unmarshal(raw, &c) == nil {
				f.Add([]byte(c.Stream), uint8(40), uint8(200), uint8(len(file)%2))
			}
		}
	}
	provs := []ProviderType{ProviderOpenAI, ProviderAnthropic}
	f.Fuzz(func(t *testing.T, b []byte, s1, s2, which uint8) {
		prov := provs[int(which)%len(provs)]
		w := requireSplitInvariant(t, APIResponses, prov, `{"model":"m","input":"hi","stream":true}`, b, s1, s2)
		var p SSEParser
		var seq int64
		require.NoError(t, p.Feed([]byte(w), func(ev SSEEvent) {
			var e struct {
				Type string `json:"type"`
				Seq  *int64 `json:"sequence_number"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &e), "%s", ev.Data)
			require.Equal(t, string(ev.Event), e.Type)
			require.NotNil(t, e.Seq)
			require.Equal(t, seq, *e.Seq)
			seq++
		}))
		require.NoError(t, p.Flush(func(SSEEvent) { t.Fatal("an event without its blank line") }))
		if seq > 0 { // the stream always ends with a final response event
			require.True(t, bytes.Contains([]byte(w), []byte("event: response.completed\n")) ||
				bytes.Contains([]byte(w), []byte("event: response.incomplete\n")) ||
				bytes.Contains([]byte(w), []byte("event: response.failed\n")))
		}
	})
}

// TestRequestShapes: valid JSON with members of the wrong type gets the
// gateway's own 400 naming the member.
func TestRequestShapes(t *testing.T) {
	for _, c := range []struct {
		api   API
		body  string
		field string
	}{
		{APIChat, `{"model":"m","messages":"x"}`, "messages"},
		{APIChat, `{"model":"m","messages":[],"max_tokens":"5"}`, "max_tokens"},
		{APIChat, `{"model":"m","messages":[],"max_tokens":-1}`, "max_tokens"},
		{APIMessages, `{"model":"m","messages":{},"max_tokens":5}`, "messages"},
		{APIResponses, `{"model":"m","input":5}`, "input"},
		{APIResponses, `{"model":"m","input":"x","max_output_tokens":"9"}`, "max_output_tokens"},
		{APIChat, `{"model":5,"messages":[]}`, "model"},
		{APIChat, `{"model":"m","messages":[],"stream":"yes"}`, "stream"},
	} {
		_, err := ParseRequest(c.api, []byte(c.body))
		require.Error(t, err, c.body)
		e := BodyError(err)
		require.Equal(t, 400, e.Status, c.body)
		require.Equal(t, c.field, e.Param, c.body)
	}
	in, err := ParseRequest(APIResponses, []byte(`{"model":"m","input":[],"max_output_tokens":70}`))
	require.NoError(t, err)
	require.EqualValues(t, 70, in.MaxTokens)
}
