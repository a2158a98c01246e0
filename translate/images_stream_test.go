package translate

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// imageEvents is a streamed generation of n images with partial previews:
// each completed event reports the prompt's input and its image's output.
func imageEvents(n, partial int, in, out int64) string {
	s := ""
	for range n {
		for p := range partial {
			s += fmt.Sprintf("event: image_generation.partial_image\ndata: {\"type\":\"image_generation.partial_image\",\"b64_json\":\"QUFB\",\"partial_image_index\":%d}\n\n", p)
		}
		s += fmt.Sprintf("event: image_generation.completed\ndata: {\"type\":\"image_generation.completed\",\"b64_json\":\"QkJC\",\"usage\":{\"input_tokens\":%d,\"output_tokens\":%d,\"total_tokens\":%d,\"input_tokens_details\":{\"text_tokens\":%d,\"image_tokens\":0}}}\n\n", in, out, in+out, in)
	}
	return s
}

// TestImageStreamUsage: a streamed generation passes unchanged and is
// settled from its completed events, split anywhere: on a model billed by
// tokens, the prompt's input once and every image's output; per image, the
// completed images; a stream cut before any completed event, its bound.
func TestImageStreamUsage(t *testing.T) {
	stream := imageEvents(2, 2, 12, 472)
	in, err := ParseUnitRequest(APIImages, []byte(`{"model":"gpt-image-1","prompt":"a fox","n":2,"stream":true,"partial_images":2,"quality":"low"}`))
	require.NoError(t, err)
	require.True(t, in.Stream)
	require.Equal(t, int64(2), in.Unit.PartialImages)
	for _, byTokens := range []bool{true, false} {
		for split := 1; split <= len(stream); split += 37 {
			u := *in.Unit
			u.ByTokens = byTokens
			tr := NewTranslator(APIImages, ProviderOpenAI)
			_, err := tr.Request(&Inbound{API: APIImages, Model: "gpt-image-1", Body: in.Body, Stream: true, Unit: &u}, &Target{Provider: ProviderOpenAI, BasePath: "/v1"})
			require.NoError(t, err)
			var got []byte
			for i := 0; i < len(stream); i += split {
				out, err := tr.StreamChunk([]byte(stream[i:min(i+split, len(stream))]), i+split >= len(stream))
				require.NoError(t, err)
				got = append(got, out...)
			}
			require.Equal(t, stream, string(got), "the events pass unchanged")
			usage, ok := tr.StreamUsage()
			require.True(t, ok)
			if byTokens {
				require.Equal(t, kernel.Usage{Input: 12, Output: 2 * 472}, usage, "split %d", split)
			} else {
				require.Equal(t, kernel.Usage{Input: 2}, usage, "split %d", split)
			}
			require.Equal(t, int64(2), u.Images)
		}
	}

	// Cut before the first completed event: the bound, not reported.
	for _, byTokens := range []bool{true, false} {
		u := *in.Unit
		u.ByTokens = byTokens
		tr := NewTranslator(APIImages, ProviderOpenAI)
		_, err := tr.Request(&Inbound{API: APIImages, Body: in.Body, Stream: true, Unit: &u}, &Target{Provider: ProviderOpenAI, BasePath: "/v1"})
		require.NoError(t, err)
		_, err = tr.StreamChunk([]byte(imageEvents(1, 2, 12, 472)[:150]), true)
		require.NoError(t, err)
		usage, ok := tr.StreamUsage()
		require.False(t, ok)
		if byTokens {
			require.Equal(t, int64(2*(ImageOutputBound("low")+2*ImagePartialTokens)), usage.Output)
		} else {
			require.Equal(t, kernel.Usage{Input: 2}, usage)
		}
	}

	// Imagen does not stream.
	_, err = new(imagesGemini).Request(&Inbound{API: APIImages, Body: []byte(`{"prompt":"p","stream":true}`), Stream: true}, &Target{Provider: ProviderGemini})
	var fe *fieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "stream", fe.Field)
}
