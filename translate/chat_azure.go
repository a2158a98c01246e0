package translate

// chatAzure translates OpenAI's chat completions API for Azure OpenAI deployments.
type chatAzure struct{ openAIFormat }

var _ Translator = (*chatAzure)(nil)

// Request targets /openai/deployments/{deployment}/chat/completions?api-version=... with the api-key header.
func (t *chatAzure) Request(in *Inbound, target *Target) (*Outbound, error) {
	return t.azureRequest(in, target, opChat), nil
}
