package translate

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/schema/bedrock"
)

// bedrockEvent is one ConverseStream message of a golden case: an event
// (Type) or an exception (Exception), with its JSON payload.
type bedrockEvent struct {
	Type      string          `json:"type"`
	Exception string          `json:"exception"`
	Payload   json.RawMessage `json:"payload"`
}

// encodeBedrockEvents frames events as ConverseStream does, with the SDK's
// encoder.
func encodeBedrockEvents(t testing.TB, events []bedrockEvent) string {
	t.Helper()
	var buf bytes.Buffer
	for _, ev := range events {
		h := map[string]string{bedrock.HeaderMessageType: "event", bedrock.HeaderEventType: ev.Type, bedrock.HeaderContentType: "application/json"}
		if ev.Exception != "" {
			h = map[string]string{bedrock.HeaderMessageType: "exception", bedrock.HeaderExceptionType: ev.Exception, bedrock.HeaderContentType: "application/json"}
		}
		require.NoError(t, bedrock.Encode(&buf, h, ev.Payload))
	}
	return buf.String()
}

// TestBedrockGolden runs every testdata/bedrock/in case (streams given as
// events, framed with the SDK's encoder) and compares with
// testdata/bedrock/out (go test -run TestBedrockGolden -update rewrites).
func TestBedrockGolden(t *testing.T) {
	runGoldenDir(t, "testdata/bedrock", func(t *testing.T, raw []byte) *geminiCase {
		var tc struct {
			geminiCase
			Events []bedrockEvent `json:"events"`
		}
		require.NoError(t, json.Unmarshal(raw, &tc))
		if len(tc.Events) > 0 {
			tc.Stream = encodeBedrockEvents(t, tc.Events)
		}
		return &tc.geminiCase
	})
}
