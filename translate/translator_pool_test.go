package translate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A pooled translator is each request's own, comes back zeroed (an Azure
// one's flag too), and giving it back leaves alone the bytes it returned,
// which a reply may still carry.
func TestTranslatorPool(t *testing.T) {
	a, ok := NewTranslator(APIChat, ProviderOpenAI).(*ChatOpenAI)
	require.True(t, ok)
	b := NewTranslator(APIChat, ProviderOpenAI).(*ChatOpenAI)
	require.NotSame(t, a, b)
	a.apiKey, a.strip, a.ed.out = "sk-provider-openai-CCCCCCCCCCCCCCCCCCCC", true, []byte("data: sent\n\n")
	out := a.ed.out
	FreeTranslator(a)
	require.Equal(t, ChatOpenAI{}, *a)
	require.Equal(t, "data: sent\n\n", string(out))
	again := NewTranslator(APIChat, ProviderOpenAI).(*ChatOpenAI)
	require.Equal(t, ChatOpenAI{}, *again)

	az := NewTranslator(APIMessages, ProviderAzure).(*messagesOpenAI)
	require.True(t, az.azure)
	FreeTranslator(az)
	var got []Translator
	for range 4 { // whichever the pool hands out
		m := NewTranslator(APIMessages, ProviderOpenAI).(*messagesOpenAI)
		require.False(t, m.azure)
		got = append(got, m)
	}
	for _, m := range got {
		FreeTranslator(m)
	}

	FreeTranslator(countTokensEstimate{}) // not pooled: nothing happens
}
