package translate

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

// FuzzAnthropicStream: for every translator that reads or writes Anthropic's
// SSE (Messages native, chat → Anthropic, Messages → OpenAI), the client bytes
// and the usage do not depend on where the provider's stream is split, and a
// translator never panics on arbitrary bytes.
func FuzzAnthropicStream(f *testing.F) {
	// The chunks' "created" must not tick between two runs of one input.
	now := anthropicNow
	anthropicNow = func() time.Time { return time.Unix(1_750_000_000, 0) }
	f.Cleanup(func() { anthropicNow = now })
	f.Add([]byte(translatetest.NativeStream), uint8(5), uint8(90), uint8(0))
	f.Add([]byte(translatetest.NativeStream), uint8(1), uint8(1), uint8(1))
	f.Add([]byte(translatetest.OpenAIStream), uint8(17), uint8(3), uint8(2))
	f.Add([]byte("event: error\r\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\r\r"), uint8(3), uint8(9), uint8(1))
	files, _ := filepath.Glob("testdata/anthropic/in/*stream*.json")
	for _, file := range files {
		if raw, err := os.ReadFile(file); err == nil {
			f.Add(raw, uint8(40), uint8(200), uint8(len(file)%3))
		}
	}
	pairs := []struct {
		api  API
		prov ProviderType
		body string
	}{
		{APIMessages, ProviderAnthropic, `{"model":"m","max_tokens":5,"stream":true}`},
		{APIChat, ProviderAnthropic, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`},
		{APIMessages, ProviderOpenAI, `{"model":"m","max_tokens":5,"stream":true,"messages":[]}`},
	}
	f.Fuzz(func(t *testing.T, b []byte, s1, s2, which uint8) {
		p := pairs[int(which)%len(pairs)]
		requireSplitInvariant(t, p.api, p.prov, p.body, b, s1, s2)
	})
}

// requireSplitInvariant feeds the provider bytes b to a fresh translator of
// the pair, whole and split in three at s1 and s1+s2, and requires the same
// client bytes and usage both ways; it returns the client bytes.
func requireSplitInvariant(t *testing.T, api API, prov ProviderType, body string, b []byte, s1, s2 uint8) string {
	t.Helper()
	run := func(parts ...[]byte) (string, any, bool) {
		in, err := ParseRequest(api, []byte(body))
		require.NoError(t, err)
		tr := NewTranslator(api, prov)
		_, err = tr.Request(in, &Target{ProviderModel: "pm", BasePath: "/v1"})
		require.NoError(t, err)
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
	return w
}
