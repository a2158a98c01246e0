package translate

// ChatOpenAI translates OpenAI's chat completions API for OpenAI and OpenAI-compatible servers (vLLM, Ollama, Groq, Mistral, DeepSeek, Together, OpenRouter): the same API under the provider's base path with a bearer key.
type ChatOpenAI struct{ openAIFormat }

var _ Translator = (*ChatOpenAI)(nil)

// Request renames the model, asks for the stream's usage and clamps max tokens; the path is the base path + /chat/completions.
func (t *ChatOpenAI) Request(in *Inbound, target *Target) (*Outbound, error) {
	return t.openAIRequest(in, target, opChat), nil
}
