package translate

// embeddingsOpenAI translates OpenAI's embeddings API (usage.prompt_tokens only) for OpenAI and OpenAI-compatible servers.
type embeddingsOpenAI struct{ openAIFormat }

var _ Translator = (*embeddingsOpenAI)(nil)

// Request renames the model; the path is the base path + /embeddings.
func (t *embeddingsOpenAI) Request(in *Inbound, target *Target) (*Outbound, error) {
	return t.openAIRequest(in, target, opEmbeddings), nil
}
