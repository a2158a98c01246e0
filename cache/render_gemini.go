package cache

import (
	"bytes"
	"encoding/json"
)

// renderGeminiStream renders a GenerateContentResponse as a Gemini stream
// of one chunk (the whole response: candidates with their finishReason,
// usageMetadata, modelVersion, responseId), which is what the API's last
// chunk carries: SSE ("data: …" and CRLF CRLF, as Google writes it; the JSON
// compacted onto one line) with alt=sse, else a JSON array of that one
// element.
func renderGeminiStream(e *Entry, jsonArray bool) ([]byte, error) {
	var b bytes.Buffer
	if jsonArray {
		b.WriteByte('[')
	} else {
		b.WriteString("data: ")
	}
	if err := json.Compact(&b, e.Body); err != nil || bytes.TrimSpace(e.Body)[0] != '{' {
		return nil, ErrUnsupported
	}
	if jsonArray {
		b.WriteByte(']')
	} else {
		b.WriteString("\r\n\r\n")
	}
	return b.Bytes(), nil
}
