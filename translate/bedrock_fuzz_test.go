package translate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzBedrockStream: ConverseStream bytes (AWS event-stream frames, decoded
// with the SDK's decoder) → client SSE, for chat completions and Messages:
// the client bytes and the usage do not depend on where the provider's
// stream is split, and arbitrary bytes (bad preludes, CRCs, payloads) never
// panic.
func FuzzBedrockStream(f *testing.F) {
	now := anthropicNow
	anthropicNow = func() time.Time { return time.Unix(1_750_000_000, 0) }
	f.Cleanup(func() { anthropicNow = now })
	files, _ := filepath.Glob("testdata/bedrock/in/*stream*.json")
	for i, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var tc struct {
			Events []bedrockEvent `json:"events"`
		}
		if json.Unmarshal(raw, &tc) == nil && len(tc.Events) > 0 {
			s := encodeBedrockEvents(f, tc.Events)
			f.Add([]byte(s), uint8(7), uint8(60), uint8(i))
			f.Add([]byte(s), uint8(1), uint8(1), uint8(i+1))
			f.Add([]byte(s[:len(s)-3]), uint8(30), uint8(30), uint8(i))
		}
	}
	f.Add([]byte("\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), uint8(3), uint8(9), uint8(0))
	pairs := []struct {
		api  API
		body string
	}{
		{APIChat, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`},
		{APIMessages, `{"model":"m","max_tokens":5,"stream":true,"messages":[]}`},
	}
	f.Fuzz(func(t *testing.T, b []byte, s1, s2, which uint8) {
		p := pairs[int(which)%len(pairs)]
		requireStreamSplitInvariant(t, b, s1, s2, func() Translator {
			in, err := ParseRequest(p.api, []byte(p.body))
			require.NoError(t, err)
			tr := NewTranslator(p.api, ProviderBedrock)
			_, err = tr.Request(in, &Target{ProviderModel: "anthropic.claude-v2:1"})
			require.NoError(t, err)
			return tr
		})
	})
}
