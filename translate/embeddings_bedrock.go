package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/bedrock"
)

// embeddingsBedrock serves OpenAI's embeddings API from a Bedrock deployment
// with InvokeModel, in the body of the model's family: Amazon Titan
// (amazon.titan-embed-*: one inputText a request, dimensions passed;
// usage from inputTextTokenCount, exact) or Cohere (cohere.embed-*: texts,
// input_type search_document; Cohere reports no token count, so the usage is
// the gateway's estimate, a token per 4 bytes of each input).
type embeddingsBedrock struct {
	model  string
	cohere bool
	base64 bool
	tokens int64 // estimate (Cohere)
}

var _ Translator = (*embeddingsBedrock)(nil)

// Request builds the InvokeModel request.
func (t *embeddingsBedrock) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.model = in.Model
	inputs, dims, b64, err := parseTextEmbeddings(in.Body)
	if err != nil {
		return nil, err
	}
	t.base64 = b64
	pm := target.ProviderModel
	if pm == "" {
		pm = in.Model
	}
	var body []byte
	switch {
	case strings.Contains(pm, "cohere.embed"):
		t.cohere = true
		for _, s := range inputs {
			t.tokens += EstimateTokens(int64(len(s)))
		}
		body, err = json.Marshal(bedrock.CohereEmbeddingRequest{Texts: inputs, InputType: "search_document"})
	case strings.Contains(pm, "titan-embed"):
		if len(inputs) != 1 {
			return nil, errors.New("input: Titan embeddings take one input a request")
		}
		body, err = json.Marshal(bedrock.TitanEmbeddingRequest{InputText: inputs[0], Dimensions: dims})
	default:
		return nil, fmt.Errorf("model %q: embeddings are served for amazon.titan-embed-* and cohere.embed-* models", pm)
	}
	if err != nil {
		return nil, err
	}
	return &Outbound{Path: bedrockPath(target, in, "invoke"), Body: body, Headers: [][2]string{{"accept", "application/json"}}}, nil
}

// Response converts the vectors into OpenAI's list.
func (t *embeddingsBedrock) Response(body []byte) ([]byte, kernel.Usage, error) {
	var vectors [][]float64
	var tokens int64
	if t.cohere {
		var r bedrock.CohereEmbeddingResponse
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, kernel.Usage{}, err
		}
		vectors, tokens = r.Embeddings, t.tokens
	} else {
		var r bedrock.TitanEmbeddingResponse
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, kernel.Usage{}, err
		}
		vectors, tokens = [][]float64{r.Embedding}, r.InputTextTokenCount
	}
	list := oaEmbeddingList{Object: "list", Data: make([]oaEmbedding, len(vectors)), Model: t.model}
	for i, v := range vectors {
		list.Data[i] = oaEmbedding{Object: "embedding", Index: i, Embedding: embeddingValue(v, t.base64)}
	}
	list.Usage.PromptTokens, list.Usage.TotalTokens = tokens, tokens
	out, err := json.Marshal(list)
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	return out, kernel.Usage{Input: tokens}, nil
}

// StreamChunk is not reached: embeddings do not stream.
func (t *embeddingsBedrock) StreamChunk(chunk []byte, _ bool) ([]byte, error) { return chunk, nil }

// StreamUsage is the input estimate.
func (t *embeddingsBedrock) StreamUsage() (kernel.Usage, bool) {
	return kernel.Usage{Input: t.tokens}, false
}

// Error converts a Bedrock error into OpenAI's error shape.
func (t *embeddingsBedrock) Error(status int, body []byte) []byte {
	return upstreamBedrockError(status, body, "").OpenAIBody()
}
