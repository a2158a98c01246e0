package extproc

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tollgate-ai/tollgate/translate"
)

func TestGeminiModelPath(t *testing.T) {
	for _, tc := range []struct {
		path, model, method string
		ok                  bool
		ep                  *endpoint
	}{
		{"/v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", "generateContent", true, geminiGenerateEndpoint},
		{"/v1/models/gem:streamGenerateContent?alt=sse", "gem", "streamGenerateContent", true, geminiStreamEndpoint},
		{"/v1beta/models/a%2Fb:countTokens?key=x", "a/b", "countTokens", true, geminiCountEndpoint},
		{"/v1beta/models/gem:embedContent", "gem", "embedContent", true, nil},
		{"/v1beta/models/:generateContent", "", "", false, nil},
		{"/v1beta/models/x/y:generateContent", "", "", false, nil},
		{"/v1beta/models/gem", "", "", false, nil},
		{"/v2/models/gem:generateContent", "", "", false, nil},
		{"/v1/chat/completions", "", "", false, nil},
	} {
		m, meth, ok := translate.GeminiModelPath(tc.path)
		require.Equal(t, tc.ok, ok, tc.path)
		require.Equal(t, tc.model, m, tc.path)
		require.Equal(t, tc.method, meth, tc.path)
		if tc.ep != nil {
			require.Same(t, tc.ep, lookupEndpoint(tc.path), tc.path)
		} else if ep := lookupEndpoint(tc.path); tc.path != "/v1/chat/completions" && ep != nil {
			// only models.get (GET, no body) may take it: it answers 404 for a method
			require.Equal(t, "/v1beta/models/", ep.Path, tc.path)
			require.Empty(t, ep.API, tc.path)
		}
	}
	require.NotNil(t, lookupEndpoint("/v1beta/models?key=x"), "models.list")
}

func TestGeminiQuery(t *testing.T) {
	require.Equal(t, "tg-123", translate.QueryKey("/v1beta/models/m:generateContent?alt=sse&key=tg-123"))
	require.Empty(t, translate.QueryKey("/v1beta/models/m:generateContent"))
	require.True(t, translate.GeminiSSE("/v1/models/m:streamGenerateContent?alt=sse"))
	require.False(t, translate.GeminiSSE("/v1/models/m:streamGenerateContent"))
}

func TestParseGeminiRequest(t *testing.T) {
	in, err := translate.ParseGeminiRequest("/v1/models/gem:streamGenerateContent", []byte(`{"contents":[],"generationConfig":{"maxOutputTokens":77}}`))
	require.NoError(t, err)
	require.Equal(t, "gem", in.Model)
	require.True(t, in.Stream)
	require.Equal(t, int64(77), in.MaxTokens)
	require.Equal(t, translate.APIGeminiGenerate, in.API)

	in, err = translate.ParseGeminiRequest("/v1beta/models/gem:countTokens", []byte(`{"contents":[]}`))
	require.NoError(t, err)
	require.Equal(t, translate.APIGeminiCount, in.API)
	require.False(t, in.Stream)

	_, err = translate.ParseGeminiRequest("/v1beta/models/gem:generateContent", []byte(`{"generationConfig":{"maxOutputTokens":"x"}}`))
	require.Error(t, err)
	_, err = translate.ParseGeminiRequest("/v1beta/models/gem:generateContent", []byte(`{"contents":[`))
	require.Error(t, err)
}
