package translate

import (
	"encoding/json"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// The Gemini API's countTokens of a Claude model on Vertex AI or Bedrock is
// the provider's own count (count-tokens:rawPredict, CountTokens) of the
// Messages or Converse request the generateContent translators build: the
// count of what generateContent would then be billed.

// geminiCountAsGenerate is a countTokens request as the generateContent
// request it counts: the body itself ({"contents",…}) or its
// generateContentRequest member.
func geminiCountAsGenerate(in *Inbound) (*Inbound, error) {
	body := in.Body
	if v, err := TopLevelMember(body, "generateContentRequest"); err == nil && v.isObject(body) {
		body = v.bytes(body)
	}
	gen, err := ParseRequest(APIGeminiGenerate, body)
	if err != nil {
		return nil, err
	}
	gen.Path, gen.Model, gen.RequestID = in.Path, in.Model, in.RequestID
	gen.Stream, gen.MaxTokens, gen.User, gen.IncludeUsage = false, 0, "", false
	return gen, nil
}

// countReplyGemini answers countTokens from a provider's count (Anthropic's
// input_tokens or Bedrock's inputTokens), free; errors in Google's shape.
type countReplyGemini struct {
	countTokensEstimate
	readError func(status int, body []byte) *APIError
}

var _ Translator = countReplyGemini{}

// Response answers {"totalTokens":N} at zero usage.
func (c countReplyGemini) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r struct {
		Anthropic *int64 `json:"input_tokens"`
		Bedrock   *int64 `json:"inputTokens"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	var n int64
	switch {
	case r.Anthropic != nil:
		n = *r.Anthropic
	case r.Bedrock != nil:
		n = *r.Bedrock
	}
	out, err := json.Marshal(gemini.CountTokensResponse{TotalTokens: n})
	return out, kernel.Usage{}, err
}

// Error renders the provider's error in Google's shape.
func (c countReplyGemini) Error(status int, body []byte) []byte {
	return GeminiErrorBody(c.readError(status, body))
}
