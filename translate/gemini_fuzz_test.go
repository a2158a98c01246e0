package translate

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

// geminiStreamSeed is a Gemini SSE stream as streamGenerateContent?alt=sse
// writes it (CRLF, usage in every event, the final counts in the last).
const geminiStreamSeed = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":5,\"totalTokenCount\":5},\"responseId\":\"r\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"lo\"},{\"functionCall\":{\"name\":\"f\",\"args\":{\"a\":1}}}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":5,\"candidatesTokenCount\":3,\"thoughtsTokenCount\":2,\"totalTokenCount\":10}}\r\n\r\n"

// FuzzGeminiStream: for every translator that reads a Gemini stream (chat →
// Gemini, Messages → Gemini, the Gemini API natively as SSE and as a JSON
// array) and those that write one (the Gemini API from OpenAI and
// Anthropic streams), the client bytes and the usage do not depend on where
// the provider's stream is split, and no translator panics on arbitrary
// bytes.
func FuzzGeminiStream(f *testing.F) {
	now := anthropicNow
	anthropicNow = func() time.Time { return time.Unix(1_750_000_000, 0) }
	f.Cleanup(func() { anthropicNow = now })
	f.Add([]byte(geminiStreamSeed), uint8(5), uint8(90), uint8(0))
	f.Add([]byte(geminiStreamSeed), uint8(1), uint8(1), uint8(3))
	f.Add([]byte("data: {\"error\":{\"code\":500,\"message\":\"x\",\"status\":\"INTERNAL\"}}\r\r"), uint8(3), uint8(9), uint8(2))
	f.Add([]byte(translatetest.OpenAIStream), uint8(17), uint8(3), uint8(4))
	f.Add([]byte(translatetest.NativeStream), uint8(17), uint8(3), uint8(5))
	files, _ := filepath.Glob("testdata/gemini/in/*stream*.json")
	for _, file := range files {
		if raw, err := os.ReadFile(file); err == nil {
			f.Add(raw, uint8(40), uint8(200), uint8(len(file)%6))
		}
	}
	pairs := []struct {
		api        API
		prov       ProviderType
		path, body string
	}{
		{APIChat, ProviderGemini, "", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`},
		{APIMessages, ProviderGemini, "", `{"model":"m","max_tokens":5,"stream":true,"messages":[]}`},
		{APIGeminiGenerate, ProviderGemini, "/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[]}`},
		{APIGeminiGenerate, ProviderGemini, "/v1beta/models/m:streamGenerateContent", `{"contents":[]}`},
		{APIGeminiGenerate, ProviderOpenAI, "/v1/models/m:streamGenerateContent", `{"contents":[]}`},
		{APIGeminiGenerate, ProviderAnthropic, "/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[]}`},
	}
	f.Fuzz(func(t *testing.T, b []byte, s1, s2, which uint8) {
		p := pairs[int(which)%len(pairs)]
		requireStreamSplitInvariant(t, b, s1, s2, func() Translator {
			in, err := ParseRequest(p.api, []byte(p.body))
			if p.path != "" {
				in, err = ParseGeminiRequest(p.path, []byte(p.body))
			}
			require.NoError(t, err)
			tr := NewTranslator(p.api, p.prov)
			_, err = tr.Request(in, &Target{ProviderModel: "pm", BasePath: "/v1"})
			require.NoError(t, err)
			return tr
		})
	})
}

// requireStreamSplitInvariant feeds b to a new translator whole, then split in
// three at s1 and s1+s2, and requires the same client bytes and usage.
func requireStreamSplitInvariant(t *testing.T, b []byte, s1, s2 uint8, newTr func() Translator) {
	t.Helper()
	run := func(parts ...[]byte) (string, any, bool) {
		tr := newTr()
		var got []byte
		for i, part := range parts {
			out, _ := tr.StreamChunk(part, i == len(parts)-1)
			got = append(got, out...)
		}
		u, rep := tr.StreamUsage()
		return string(got), u, rep
	}
	i := min(int(s1), len(b))
	j := min(i+int(s2), len(b))
	w, u1, r1 := run(b, nil)
	s, u2, r2 := run(b[:i], b[i:j], b[j:], nil)
	require.Equal(t, w, s)
	require.Equal(t, u1, u2)
	require.Equal(t, r1, r2)
}
