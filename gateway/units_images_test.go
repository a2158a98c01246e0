package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// TestUnitRoutesImagenAndImageTokens: OpenAI's images API served by Imagen
// on the Gemini API (the provider's key, :predict, a filtered image neither
// returned nor billed) is charged per image the mock billed; gpt-image-1,
// priced by tokens, is charged its reply's usage, and its row counts the
// images served.
func TestUnitRoutesImagenAndImageTokens(t *testing.T) {
	r := start(t, false)
	ctx := context.Background()
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, r.st, "gem", &store.Provider{ID: "gem", Type: store.ProviderGemini, BaseURL: r.mockURL + "/v1beta", Credential: sealer.Seal([]byte("sk-gem-up"))})
	put(t, r.st, "dep-imagen", &store.Deployment{ID: "dep-imagen", Provider: "gem", ProviderModel: "imagen-4.0-generate-001"})
	put(t, r.st, "imagen", &store.ModelGroup{ID: "imagen", Deployments: []string{"dep-imagen"}})
	put(t, r.st, "imagen", &store.ModelPrice{ID: "imagen", Price: kernel.Price{Units: &kernel.UnitPrices{Image: map[string]kernel.Money{"*": 40 * kernel.Dollar / 1000}}}})
	put(t, r.st, "dep-gimg", &store.Deployment{ID: "dep-gimg", Provider: "mock", ProviderModel: "gpt-image-1"})
	put(t, r.st, "gimg", &store.ModelGroup{ID: "gimg", Deployments: []string{"dep-gimg"}})
	tokens := kernel.Price{Input: 5 * kernel.Dollar, Output: 40 * kernel.Dollar, Units: &kernel.UnitPrices{ImageInputTokens: 10 * kernel.Dollar, ImageOutputTokens: 40 * kernel.Dollar}}
	put(t, r.st, "gimg", &store.ModelPrice{ID: "gimg", Price: tokens})
	key := r.key(t, "k-img", kernel.Limits{})
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	eventually(t, func() bool {
		resp, _ := r.do(t, http.MethodPost, key, "/v1/images/generations", `{"model":"imagen","prompt":"p"}`)
		return resp.StatusCode == http.StatusOK
	})
	require.NoError(t, r.st.Flush(ctx))
	base := len(completed(t, r.st))
	r.mock.ResetStats()

	resp, b := r.do(t, http.MethodPost, key, "/v1/images/generations", `{"model":"imagen","prompt":"a lighthouse [filter]","n":3,"size":"1792x1024"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var img struct {
		Data []struct {
			B64JSON string `json:"b64_json"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(b, &img))
	require.Len(t, img.Data, 2, "the filtered image is left out")
	require.NotEmpty(t, img.Data[0].B64JSON)

	resp, b = r.do(t, http.MethodPost, key, "/v1/images/generations", `{"model":"imagen","prompt":"p","n":5}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), "from 1 to 4 on Imagen")

	const prompt = "a cat in a hat"
	resp, b = r.do(t, http.MethodPost, key, "/v1/images/generations", `{"model":"gimg","prompt":"`+prompt+`","n":2,"quality":"low"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))

	require.Equal(t, int64(2), r.mock.Stats().Keys["sk-gem-up"].Images)
	require.NoError(t, r.st.Flush(ctx))
	rows := completed(t, r.st)[base:]
	got := map[string]store.LedgerEntry{}
	for _, e := range rows {
		got[e.Model] = e
	}
	im := got["imagen"]
	require.Equal(t, kernel.UnitImages, im.Unit)
	require.Equal(t, int64(2), im.Quantity, "ledger images == the mock's bill")
	require.Equal(t, 2*40*kernel.Dollar/1000, im.Cost)

	g := got["gimg"]
	in := int64(utf8.RuneCountInString(prompt)+3) / 4 // the mock's usage
	want := kernel.Usage{Input: in, Output: 2 * 272}
	require.Equal(t, want, g.Usage)
	require.Equal(t, kernel.UnitImages, g.Unit)
	require.Equal(t, int64(2), g.Quantity)
	tp, _ := tokens.ImageTokens()
	require.Equal(t, kernel.Cost(tp, want), g.Cost)
	require.False(t, g.Unpriced)
}
