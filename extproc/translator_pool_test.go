package extproc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A pooled translator is each request's own, comes back zeroed (an Azure
// one's flag too), and giving it back leaves alone the bytes it returned,
// which a reply may still carry.
func TestTranslatorPool(t *testing.T) {
	a, ok := newTranslator(APIChat, ProviderOpenAI).(*chatOpenAI)
	require.True(t, ok)
	b := newTranslator(APIChat, ProviderOpenAI).(*chatOpenAI)
	require.NotSame(t, a, b)
	a.apiKey, a.strip, a.ed.out = openAIKey, true, []byte("data: sent\n\n")
	out := a.ed.out
	freeTranslator(a)
	require.Equal(t, chatOpenAI{}, *a)
	require.Equal(t, "data: sent\n\n", string(out))
	again := newTranslator(APIChat, ProviderOpenAI).(*chatOpenAI)
	require.Equal(t, chatOpenAI{}, *again)

	az := newTranslator(APIMessages, ProviderAzure).(*messagesOpenAI)
	require.True(t, az.azure)
	freeTranslator(az)
	var got []Translator
	for range 4 { // whichever the pool hands out
		m := newTranslator(APIMessages, ProviderOpenAI).(*messagesOpenAI)
		require.False(t, m.azure)
		got = append(got, m)
	}
	for _, m := range got {
		freeTranslator(m)
	}

	freeTranslator(countTokensEstimate{}) // not pooled: nothing happens
}
