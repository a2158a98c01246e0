package translate

import "sync"

// The translators of the common pairs come from a pool of their type and go
// back, zeroed, when their stream is released (extproc/reply_pool.go): allocated
// per request, an OpenAI chat translator (its SSE editor and usage state, 350
// bytes) was 3.5 % of the bytes a chat request allocates in the gateway. A
// translator lives as long as its request, so it stays out of the pooled
// stream, which would carry the largest translator for every request.
//
// Zeroing drops what a translator held (its output buffers, which a reply may
// still carry to the client): only the struct is reused, never its buffers,
// and no translator type holds an array a reply could point into.
// The translator of a stream is referenced only from that stream (a
// wrapper's inner translator is not the stream's, and is left to the
// collector).

// translatorPool is the pool of one translator type.
type translatorPool[T any] struct{ p sync.Pool }

// get returns a zero *T.
func (tp *translatorPool[T]) get() *T {
	if t, ok := tp.p.Get().(*T); ok {
		return t
	}
	return new(T)
}

// put zeroes t and gives it back.
func (tp *translatorPool[T]) put(t *T) {
	var zero T
	*t = zero
	tp.p.Put(t)
}

// The pooled translator types (translators.go takes them from here).
var (
	chatOpenAIs        translatorPool[ChatOpenAI]
	chatAzures         translatorPool[chatAzure]
	chatAnthropics     translatorPool[chatAnthropic]
	messagesAnthropics translatorPool[messagesAnthropic]
	messagesOpenAIs    translatorPool[messagesOpenAI]
	embeddingsOpenAIs  translatorPool[embeddingsOpenAI]
	completionsOpenAIs translatorPool[completionsOpenAI]
)

// FreeTranslator gives t back to its type's pool; a translator of another
// type is left to the collector. t must not be used afterwards.
func FreeTranslator(t Translator) {
	switch t := t.(type) {
	case *ChatOpenAI:
		chatOpenAIs.put(t)
	case *chatAzure:
		chatAzures.put(t)
	case *chatAnthropic:
		chatAnthropics.put(t)
	case *messagesAnthropic:
		messagesAnthropics.put(t)
	case *messagesOpenAI:
		messagesOpenAIs.put(t)
	case *embeddingsOpenAI:
		embeddingsOpenAIs.put(t)
	case *completionsOpenAI:
		completionsOpenAIs.put(t)
	}
}

// azureMessages is a messagesOpenAI for Azure, from the pool.
func azureMessages() Translator {
	t := messagesOpenAIs.get()
	t.azure = true
	return t
}
