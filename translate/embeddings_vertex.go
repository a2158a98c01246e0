package translate

import (
	"encoding/json"
	"errors"
	"math"
	"net/url"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// embeddingsVertex serves OpenAI's embeddings API from a Vertex AI
// deployment of a Google embedding model (text-embedding-005,
// gemini-embedding-001, text-multilingual-embedding-002) with :predict:
// each input string is one instance, dimensions → outputDimensionality. The
// usage is exact: the sum of each prediction's statistics.token_count.
// Claude models on Vertex have no embeddings: a 400 says so.
type embeddingsVertex struct {
	model  string
	base64 bool
}

var _ Translator = (*embeddingsVertex)(nil)

// Request builds the :predict request.
func (t *embeddingsVertex) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.model = in.Model
	model := target.ProviderModel
	if model == "" {
		model = in.Model
	}
	if vertexClaude(model) {
		return nil, errors.New("this model has no embeddings on Vertex AI (Claude models generate text only)")
	}
	inputs, dims, b64, err := parseTextEmbeddings(in.Body)
	if err != nil {
		return nil, err
	}
	t.base64 = b64
	out := gemini.PredictEmbeddingsRequest{Instances: make([]gemini.EmbeddingInstance, len(inputs))}
	for i, s := range inputs {
		out.Instances[i] = gemini.EmbeddingInstance{Content: s}
	}
	if dims != nil {
		out.Parameters = &gemini.EmbeddingsParameters{OutputDimensionality: dims}
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	path := joinPath(target.BasePath, "/publishers/google/models/"+url.PathEscape(model)+":predict")
	return &Outbound{Path: path, Body: body}, nil
}

// Response converts the predictions into OpenAI's list; the usage is the
// sum of their token counts.
func (t *embeddingsVertex) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r gemini.PredictEmbeddingsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	list := oaEmbeddingList{Object: "list", Data: make([]oaEmbedding, len(r.Predictions)), Model: t.model}
	var tokens int64
	for i, p := range r.Predictions {
		list.Data[i] = oaEmbedding{Object: "embedding", Index: i, Embedding: embeddingValue(p.Embeddings.Values, t.base64)}
		tokens += int64(math.Round(p.Embeddings.Statistics.TokenCount))
	}
	list.Usage.PromptTokens, list.Usage.TotalTokens = tokens, tokens
	out, err := json.Marshal(list)
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	return out, kernel.Usage{Input: tokens}, nil
}

// StreamChunk is not reached: embeddings do not stream.
func (t *embeddingsVertex) StreamChunk(chunk []byte, _ bool) ([]byte, error) { return chunk, nil }

// StreamUsage: nothing is reported before the reply (the processor
// estimates the input of an aborted request).
func (t *embeddingsVertex) StreamUsage() (kernel.Usage, bool) { return kernel.Usage{}, false }

// Error converts a Google error into OpenAI's error shape.
func (t *embeddingsVertex) Error(status int, body []byte) []byte {
	return upstreamGeminiError(status, body, "").OpenAIBody()
}
