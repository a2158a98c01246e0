package gateway

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The embedding reply is read in place: compact or pretty-printed, with
// its members in any order; anything without a vector is an error.
func TestParseEmbedding(t *testing.T) {
	for _, body := range []string{
		`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25,1e-3]}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}`,
		"{\n  \"usage\": {\"total_tokens\": 7, \"prompt_tokens\": 7},\n  \"data\": [\n    {\n      \"embedding\": [\n        0.5,\n        -0.25,\n        0.001\n      ],\n      \"index\": 0\n    }\n  ]\n}\n",
	} {
		vec, prompt, err := parseEmbedding([]byte(body))
		require.NoError(t, err, body)
		require.Equal(t, []float32{0.5, -0.25, 0.001}, vec)
		require.EqualValues(t, 7, prompt)
	}
	vec, prompt, err := parseEmbedding([]byte(`{"data":[{"embedding":[1]}]}`))
	require.NoError(t, err)
	require.Equal(t, []float32{1}, vec)
	require.Zero(t, prompt, "no usage")
	for _, bad := range []string{
		``, `[]`, `{"data":[]}`, `{"data":[{"embedding":[]}]}`, `{"data":[{"embedding":"AAAA"}]}`,
		`{"data":[{"embedding":[1,"x"]}]}`, `{"data":[{"embedding":[1,2}]}`, `{"data":{}}`, `{"data":[{"index":0}]}`,
	} {
		_, _, err := parseEmbedding([]byte(bad))
		require.ErrorIs(t, err, errNoEmbedding, bad)
	}
}

// benchEmbeddingReply is the mock's embeddings reply of 64 dimensions
// (bench/run.sh CACHE=semantic).
func benchEmbeddingReply() []byte {
	b := []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[`)
	for i := range 64 {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(i-32)/33.7, 'g', -1, 32)
	}
	return append(b, `]}],"model":"mock-gpt","usage":{"prompt_tokens":9,"total_tokens":9}}`...)
}

func BenchmarkParseEmbedding(b *testing.B) {
	body := benchEmbeddingReply()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parseEmbedding(body); err != nil {
			b.Fatal(err)
		}
	}
}
