package translate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// OpenAI sizes map onto the nearest Imagen aspect ratio, and the 2K tier
// from 2048 pixels up.
func TestImagenSize(t *testing.T) {
	for size, want := range map[string][2]string{
		"":          {"", ""},
		"auto":      {"", ""},
		"1024x1024": {"1:1", ""},
		"1024x1536": {"3:4", ""}, // 2:3 is nearer 3:4 than 9:16
		"1536x1024": {"4:3", ""},
		"1024x1792": {"9:16", ""},
		"1792x1024": {"16:9", ""},
		"2048x2048": {"1:1", "2K"},
		"256x256":   {"1:1", ""},
	} {
		ratio, tier, err := imagenSize(size)
		require.NoError(t, err, size)
		require.Equal(t, want, [2]string{ratio, tier}, size)
	}
	for _, bad := range []string{"1024", "x1024", "0x10", "ax b", "99999x1"} {
		_, _, err := imagenSize(bad)
		require.Error(t, err, bad)
	}
}

// What Imagen cannot do is a 400 naming the field, before any provider
// call; the images of a reply are told to the request (the ledger's
// quantity).
func TestImagesGeminiRequest(t *testing.T) {
	target := &Target{Provider: ProviderGemini, BasePath: "/v1beta", ProviderModel: "imagen-4.0-generate-001"}
	for body, field := range map[string]string{
		`{"model":"m"}`:                                     "prompt",
		`{"model":"m","prompt":""}`:                         "prompt",
		`{"model":"m","prompt":"p","n":5}`:                  "n",
		`{"model":"m","prompt":"p","size":"big"}`:           "size",
		`{"model":"m","prompt":"p","output_format":"webp"}`: "output_format",
		`{"model":"m","prompt":"p","response_format":"x"}`:  "response_format",
		`[1]`: "body",
	} {
		_, err := new(imagesGemini).Request(&Inbound{API: APIImages, Model: "m", Body: []byte(body)}, target)
		var fe *fieldError
		require.ErrorAs(t, err, &fe, body)
		require.Equal(t, field, fe.Field, body)
	}

	u := &UnitRequest{Unit: kernel.UnitImages, Bound: 2}
	tr := new(imagesGemini)
	_, err := tr.Request(&Inbound{API: APIImages, Model: "m", Body: []byte(`{"model":"m","prompt":"p","n":2}`), Unit: u}, target)
	require.NoError(t, err)
	_, usage, err := tr.Response([]byte(`{"predictions":[{"bytesBase64Encoded":"YQ=="},{"raiFilteredReason":"filtered"}]}`))
	require.NoError(t, err)
	require.Equal(t, kernel.Usage{Input: 1}, usage, "a filtered image is not billed")
	require.Equal(t, int64(1), u.Images)
	_, _, err = tr.Response([]byte(`not json`))
	require.Error(t, err)
}
