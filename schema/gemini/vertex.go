package gemini

// Vertex AI's :predict for text embedding models
// (POST …/publishers/google/models/{m}:predict).

// PredictEmbeddingsRequest asks for one embedding per instance.
type PredictEmbeddingsRequest struct {
	Instances  []EmbeddingInstance   `json:"instances"`
	Parameters *EmbeddingsParameters `json:"parameters,omitempty"`
}

// EmbeddingInstance is one text to embed.
type EmbeddingInstance struct {
	Content  string `json:"content"`
	TaskType string `json:"task_type,omitempty"`
}

// EmbeddingsParameters are the request's options.
type EmbeddingsParameters struct {
	OutputDimensionality *int64 `json:"outputDimensionality,omitempty"`
}

// PredictEmbeddingsResponse holds one prediction per instance, in order.
type PredictEmbeddingsResponse struct {
	Predictions []struct {
		Embeddings struct {
			Statistics struct {
				// TokenCount is the instance's input tokens (a JSON number that
				// Vertex may write as 6.0).
				TokenCount float64 `json:"token_count"`
				Truncated  bool    `json:"truncated"`
			} `json:"statistics"`
			Values []float64 `json:"values"`
		} `json:"embeddings"`
	} `json:"predictions"`
}
