package translate

// completionsOpenAI translates OpenAI's legacy completions API for OpenAI and OpenAI-compatible servers.
type completionsOpenAI struct{ openAIFormat }

var _ Translator = (*completionsOpenAI)(nil)

// Request renames the model, asks for the stream's usage and clamps max_tokens; the path is the base path + /completions.
func (t *completionsOpenAI) Request(in *Inbound, target *Target) (*Outbound, error) {
	return t.openAIRequest(in, target, opCompletions), nil
}
