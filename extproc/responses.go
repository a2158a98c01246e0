package extproc

// responsesOpenAI serves the Responses API from an OpenAI-compatible
// deployment: natively when the provider declares the Responses API
// (Target.NativeResponses; OpenAI itself, vLLM), else through its chat
// completions API.
type responsesOpenAI struct {
	Translator
}

// Request picks the way (once, see chatPath) and builds the upstream request.
func (t *responsesOpenAI) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.chatPath(target)
	return t.Translator.Request(in, target)
}

// responsesTranslator is a Responses translator: chatPath returns the
// translation to chat completions the target gets, nil when the upstream
// serves the Responses API itself.
type responsesTranslator interface {
	chatPath(t *Target) *responsesViaChat
}

func (t *responsesViaChat) chatPath(*Target) *responsesViaChat { return t }

// chatPath picks the way for the target once.
func (t *responsesOpenAI) chatPath(target *Target) *responsesViaChat {
	if t.Translator == nil {
		if target.NativeResponses {
			t.Translator = new(responsesNative)
		} else {
			t.Translator = newResponsesViaChat(new(chatOpenAI))
		}
	}
	v, _ := t.Translator.(*responsesViaChat)
	return v
}

// sequencer is a Responses stream translator that numbers its events (ok
// false: it passes the provider's own numbers, which it does not follow).
type sequencer interface{ nextSequence() (n int64, ok bool) }

// nextSequence numbers the event that ends a cut stream after the others.
func (t *responsesViaChat) nextSequence() (int64, bool) {
	n := t.seq
	t.seq++
	return n, true
}

func (t *responsesOpenAI) nextSequence() (int64, bool) {
	if sq, ok := t.Translator.(sequencer); ok {
		return sq.nextSequence()
	}
	return 0, false
}
