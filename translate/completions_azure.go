package translate

// completionsAzure translates OpenAI's legacy completions API for Azure OpenAI deployments.
type completionsAzure struct{ openAIFormat }

var _ Translator = (*completionsAzure)(nil)

// Request targets /openai/deployments/{deployment}/completions?api-version=... with the api-key header.
func (t *completionsAzure) Request(in *Inbound, target *Target) (*Outbound, error) {
	return t.azureRequest(in, target, opCompletions), nil
}
