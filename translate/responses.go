package translate

// responsesOpenAI serves the Responses API from an OpenAI-compatible
// deployment: natively when the provider declares the Responses API
// (Target.NativeResponses; OpenAI itself, vLLM), else through its chat
// completions API.
type responsesOpenAI struct {
	Translator
}

// Request picks the way (once, see chatPath) and builds the upstream request.
func (t *responsesOpenAI) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.ChatPath(target)
	return t.Translator.Request(in, target)
}

// ResponsesTranslator is a Responses translator: chatPath returns the
// translation to chat completions the target gets, nil when the upstream
// serves the Responses API itself.
type ResponsesTranslator interface {
	ChatPath(t *Target) *responsesViaChat
}

func (t *responsesViaChat) ChatPath(*Target) *responsesViaChat { return t }

// ChatPath picks the way for the target once.
func (t *responsesOpenAI) ChatPath(target *Target) *responsesViaChat {
	if t.Translator == nil {
		if target.NativeResponses {
			t.Translator = new(responsesNative)
		} else {
			t.Translator = newResponsesViaChat(new(ChatOpenAI))
		}
	}
	v, _ := t.Translator.(*responsesViaChat)
	return v
}

// Sequencer is a Responses stream translator that numbers its events (ok
// false: it passes the provider's own numbers, which it does not follow).
type Sequencer interface{ NextSequence() (n int64, ok bool) }

// NextSequence numbers the event that ends a cut stream after the others.
func (t *responsesViaChat) NextSequence() (int64, bool) {
	n := t.seq
	t.seq++
	return n, true
}

func (t *responsesOpenAI) NextSequence() (int64, bool) {
	if sq, ok := t.Translator.(Sequencer); ok {
		return sq.NextSequence()
	}
	return 0, false
}
