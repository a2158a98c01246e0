package translate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStreamText(t *testing.T) {
	for _, tc := range []struct {
		api  API
		data string
		want string
		ok   bool
	}{
		{APIChat, `{"choices":[{"index":0,"delta":{"content":"a\"b"}}]}`, `a\"b`, true},
		{APIChat, `{"choices":[],"usage":{}}`, "", false},
		{APICompletions, `{"choices":[{"text":"x"}]}`, "x", true},
		{APIResponses, `{"type":"response.output_text.delta","delta":"hi"}`, "hi", true},
		{APIResponses, `{"type":"response.output_text.done","text":"hi"}`, "", false},
		{APIMessages, `{"type":"content_block_delta","delta":{"type":"text_delta","text":"t"}}`, "t", true},
		{APIMessages, `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}`, "", false},
		{APIGeminiGenerate, `{"candidates":[{"content":{"parts":[{"text":"g"}]}}]}`, "g", true},
	} {
		sp, ok := StreamText(tc.api, []byte(tc.data))
		require.Equal(t, tc.ok, ok, tc.data)
		if ok {
			require.Equal(t, tc.want, tc.data[sp.Start:sp.End])
		}
	}
}
