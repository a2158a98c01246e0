package translate

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// embeddingsGemini serves OpenAI's embeddings API from a Gemini deployment
// with batchEmbedContents: each input string is one request (dimensions →
// outputDimensionality), the vectors come back in OpenAI's list (as floats,
// or base64 little-endian float32 with encoding_format=base64).
//
// The Gemini API reports no usage for embeddings: the usage is the gateway's
// estimate of the inputs, a token per 4 bytes of each input rounded up,
// summed — reported, so the client sees it in usage.prompt_tokens and the
// ledger charges it.
type embeddingsGemini struct {
	apiKey string
	model  string
	base64 bool
	tokens int64
}

var _ Translator = (*embeddingsGemini)(nil)

// Request builds the batchEmbedContents request.
func (t *embeddingsGemini) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey, t.model = target.APIKey, in.Model
	inputs, dims, b64, err := parseTextEmbeddings(in.Body)
	if err != nil {
		return nil, err
	}
	t.base64 = b64
	model := target.ProviderModel
	if model == "" {
		model = in.Model
	}
	out := gemini.BatchEmbedContentsRequest{Requests: make([]gemini.EmbedContentRequest, len(inputs))}
	for i, s := range inputs {
		out.Requests[i] = gemini.EmbedContentRequest{
			Model: "models/" + model, Content: gemini.Content{Parts: []gemini.Part{{Text: s}}},
			OutputDimensionality: dims,
		}
		t.tokens += EstimateTokens(int64(len(s)))
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &Outbound{Path: geminiPath(target, in, geminiEmbed), Headers: geminiHeaders(target), Body: body}, nil
}

type oaEmbedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

type oaEmbeddingList struct {
	Object string        `json:"object"`
	Data   []oaEmbedding `json:"data"`
	Model  string        `json:"model"`
	Usage  struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
}

// embeddingTexts reads an embeddings input made of text: a string or an
// array of strings (token arrays are refused: other providers embed text).
func embeddingTexts(raw json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var inputs []string
	if json.Unmarshal(raw, &inputs) != nil || len(inputs) == 0 {
		return nil, errors.New("input must be a string or an array of strings for this model")
	}
	return inputs, nil
}

// embeddingValue is a vector as OpenAI writes it: floats, or with
// encoding_format=base64 the little-endian float32s in base64.
func embeddingValue(v []float64, b64 bool) any {
	if !b64 {
		return v
	}
	raw := make([]byte, 4*len(v))
	for j, f := range v {
		binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(float32(f)))
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// Response converts the vectors into OpenAI's list.
func (t *embeddingsGemini) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r gemini.BatchEmbedContentsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	list := oaEmbeddingList{Object: "list", Data: make([]oaEmbedding, len(r.Embeddings)), Model: t.model}
	for i, e := range r.Embeddings {
		list.Data[i] = oaEmbedding{Object: "embedding", Index: i, Embedding: embeddingValue(e.Values, t.base64)}
	}
	list.Usage.PromptTokens, list.Usage.TotalTokens = t.tokens, t.tokens
	out, err := json.Marshal(list)
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	return out, kernel.Usage{Input: t.tokens}, nil
}

// StreamChunk is not reached: embeddings do not stream.
func (t *embeddingsGemini) StreamChunk(chunk []byte, _ bool) ([]byte, error) { return chunk, nil }

// StreamUsage is the input estimate.
func (t *embeddingsGemini) StreamUsage() (kernel.Usage, bool) {
	return kernel.Usage{Input: t.tokens}, false
}

// Error converts a Google error into OpenAI's error shape.
func (t *embeddingsGemini) Error(status int, body []byte) []byte {
	return upstreamGeminiError(status, body, t.apiKey).OpenAIBody()
}

// parseTextEmbeddings reads an OpenAI embeddings request's texts, its
// dimensions (nil when absent) and whether it asks for base64 vectors.
func parseTextEmbeddings(body []byte) (inputs []string, dims *int64, b64 bool, err error) {
	var req struct {
		Input          json.RawMessage `json:"input"`
		Dimensions     *int64          `json:"dimensions"`
		EncodingFormat string          `json:"encoding_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, false, fmt.Errorf("invalid embeddings request: %w", err)
	}
	if inputs, err = embeddingTexts(req.Input); err != nil {
		return nil, nil, false, err
	}
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		b64 = true
	default:
		return nil, nil, false, fmt.Errorf("encoding_format %q is not supported", req.EncodingFormat)
	}
	return inputs, req.Dimensions, b64, nil
}
