package translate

// embeddingsAzure translates OpenAI's embeddings API for Azure OpenAI deployments.
type embeddingsAzure struct{ openAIFormat }

var _ Translator = (*embeddingsAzure)(nil)

// Request targets /openai/deployments/{deployment}/embeddings?api-version=... with the api-key header.
func (t *embeddingsAzure) Request(in *Inbound, target *Target) (*Outbound, error) {
	return t.azureRequest(in, target, opEmbeddings), nil
}
