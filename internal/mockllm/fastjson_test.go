package mockllm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var fastJSONSeeds = []string{
	`{"model":"mock-gpt","messages":[{"role":"user","content":"Say hello to the benchmark"}],"max_tokens":16}`,
	`{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"Say hello"}],"max_tokens":16}`,
	` { "model" : "m" , "messages" : [ { "role" : "system" , "content" : "be brief" } , {"content":"héllo wörld","role":"user"} ] } trailing`,
	`{"model":"m","messages":[],"stream":false,"max_tokens":null,"max_completion_tokens":-0,"stream_options":{"include_usage":true}}`,
	`{"model":null,"messages":null,"stream":null,"stream_options":null}`,
	`{"model":"m","messages":[{"role":"user","content":null}],"stream_options":{}}`,
	`{}`,
	// encoding/json's business: each must fall back, or fail the same way.
	`{"Model":"m"}`,
	`{"model":"m","model":"n"}`,
	`{"model":"a\"b"}`,
	`{"model":"a\u0041"}`,
	"{\"model\":\"a\tb\"}",
	"{\"model\":\"\xff\"}",
	`{"model":"m","max_tokens":16.0}`,
	`{"model":"m","max_tokens":1e3}`,
	`{"model":"m","max_tokens":016}`,
	`{"model":"m","max_tokens":99999999999999999999}`,
	`{"model":"m","max_tokens":"16"}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
	`{"model":"m","messages":[null]}`,
	`{"model":"m","messages":[{"role":"user","role":"x"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"hi","name":"x"}]}`,
	`{"model":"m","tools":[{"function":{"name":"f"}}]}`,
	`{"model":"m","prompt":"p"}`,
	`{"model":"m","stream":1}`,
	`{"model":"m",}`,
	`{"model":"m"`,
	`{"model"}`,
	`[]`,
	``,
	`nul`,
	`{"model":"mock-embedding","input":"embed this sentence for the benchmark"}`,
	`{"model":"m","input":"x","encoding_format":"base64","dimensions":4}`,
	`{"model":"m","input":["a","b"]}`,
	`{"model":"m","input":[1,2,3]}`,
	`{"model":"m","input":null}`,
	`{"model":"m","input":"a\nb"}`,
	`{"model":"m","input":"x","dimensions":-3}`,
	`{"model":"m","input":"x","dimensions":2.5}`,
}

// decodeBoth decodes s with decodeFast and with encoding/json (as the mock did
// before decodeFast) into fresh values of T.
func decodeBoth[T any](s string) (fast, slow T, fastOK bool, slowErr error) {
	fastOK = decodeFast(s, &fast)
	slowErr = json.NewDecoder(strings.NewReader(s)).Decode(&slow)
	return fast, slow, fastOK, slowErr
}

// checkFast: whatever decodeFast accepts, encoding/json accepts too and
// decodes to the same value.
func checkFast(t *testing.T, s string) {
	t.Helper()
	chat, chatJSON, ok, err := decodeBoth[openAIRequest](s)
	if ok {
		require.NoError(t, err, "%q", s)
		require.Equal(t, chatJSON, chat, "%q", s)
	}
	emb, embJSON, ok, err := decodeBoth[embeddingsRequest](s)
	if ok {
		require.NoError(t, err, "%q", s)
		if emb.isText {
			var text string
			require.NoError(t, json.Unmarshal(emb.Input, &text))
			require.Equal(t, text, emb.text)
			emb.text, emb.isText = "", false
		}
		require.Equal(t, embJSON, emb, "%q", s)
	}
}

func TestDecodeFastAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range fastJSONSeeds {
		checkFast(t, s)
	}
	// The requests of bench/loadgen take the fast path.
	for _, s := range fastJSONSeeds[:7] {
		require.True(t, decodeFast(s, new(openAIRequest)), "%q", s)
	}
	for _, s := range []string{
		`{"model":"mock-embedding","input":"embed this sentence for the benchmark"}`,
		`{"model":"m","input":"x","encoding_format":"base64","dimensions":4}`,
	} {
		require.True(t, decodeFast(s, new(embeddingsRequest)), "%q", s)
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, s := range fastJSONSeeds {
		f.Add(s)
	}
	f.Fuzz(checkFast)
}
