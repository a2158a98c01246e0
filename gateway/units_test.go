package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// unitPrices are the prices of the unit routes' model groups in these tests.
var unitPrices = map[string]kernel.Price{
	"img": {Units: &kernel.UnitPrices{Image: map[string]kernel.Money{
		"1024x1024/hd": 80 * kernel.Dollar / 1000, "1024x1024": 40 * kernel.Dollar / 1000, "*": 120 * kernel.Dollar / 1000,
	}}},
	"tts": {Units: &kernel.UnitPrices{Character: 15_000}}, // $15 per million characters
	"rr":  {Units: &kernel.UnitPrices{Search: 2 * kernel.Dollar / 1000}},
	"mod": {Input: kernel.Dollar / 10},
	"stt": {Units: &kernel.UnitPrices{Second: 100_000}}, // $0.006 a minute
}

// unitGroups puts a model group per unit route on r's mock provider, with
// its price.
func unitGroups(t *testing.T, r *running) {
	t.Helper()
	for group, model := range map[string]string{"img": "dall-e-3", "tts": "tts-1", "rr": "rerank-v3.5", "mod": "omni-moderation-latest", "stt": "whisper-1"} {
		put(t, r.st, "dep-"+group, &store.Deployment{ID: "dep-" + group, Provider: "mock", ProviderModel: model})
		put(t, r.st, group, &store.ModelGroup{ID: group, Deployments: []string{"dep-" + group}})
		p := unitPrices[group]
		put(t, r.st, group, &store.ModelPrice{ID: group, Price: p})
	}
}

// TestUnitRoutes: images, speech, rerank and moderations on the built-in
// data plane (in-process and over gRPC): each reaches the mock with the
// provider's credential and the provider's model, and its ledger row holds
// the unit and the quantity the mock billed, at the price of one unit.
func TestUnitRoutes(t *testing.T) {
	for _, grpc := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "grpc"}[grpc], func(t *testing.T) { testUnitRoutes(t, grpc) })
	}
}

func testUnitRoutes(t *testing.T, overGRPC bool) {
	r := start(t, overGRPC)
	ctx := context.Background()
	unitGroups(t, r)
	key := r.key(t, "k-units", kernel.Limits{})
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	eventually(t, func() bool {
		resp, _ := r.do(t, http.MethodPost, key, "/v1/rerank", `{"model":"rr","query":"q","documents":["a"]}`)
		return resp.StatusCode == http.StatusOK
	})
	require.NoError(t, r.st.Flush(ctx))
	base := len(completed(t, r.st))
	r.mock.ResetStats()

	resp, b := r.do(t, http.MethodPost, key, "/v1/images/generations", `{"model":"img","prompt":"a red fox","n":3,"size":"1024x1024","quality":"hd"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var img struct{ Data []map[string]any }
	require.NoError(t, json.Unmarshal(b, &img))
	require.Len(t, img.Data, 3)
	resp, b = r.do(t, http.MethodPost, key, "/v1/images/generations", `{"model":"img","prompt":"a blue fox","size":"1792x1024"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))

	speech := `{"model":"tts","input":"Grüße aus dem Gateway.","voice":"alloy","response_format":"wav"}`
	resp, b = r.do(t, http.MethodPost, key, "/v1/audio/speech", speech)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "audio/wav", resp.Header.Get("Content-Type"))
	require.Equal(t, "RIFF", string(b[:4]))
	require.Len(t, b, 44+22*100, "the whole audio, 100 samples a character")

	docs := make([]string, 150)
	for i := range docs {
		docs[i] = `"doc"`
	}
	resp, b = r.do(t, http.MethodPost, key, "/v1/rerank", `{"model":"rr","query":"capital of France","documents":[`+strings.Join(docs, ",")+`],"top_n":2}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"search_units":2`)

	resp, b = r.do(t, http.MethodPost, key, "/v1/moderations", `{"model":"mod","input":"is this fine?"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"results"`)

	bill := r.mock.Stats().Keys["sk-upstream"]
	require.Equal(t, int64(4), bill.Images, "%+v", bill)
	require.Equal(t, int64(22), bill.Characters)
	require.Equal(t, int64(2), bill.SearchUnits)

	require.NoError(t, r.st.Flush(ctx))
	rows := completed(t, r.st)[base:]
	require.Len(t, rows, 5, "%+v", rows)
	type line struct {
		unit     kernel.Unit
		quantity int64
		cost     kernel.Money
	}
	got := map[string][]line{}
	for _, e := range rows {
		require.Equal(t, "k-units", e.KeyID)
		require.False(t, e.Unpriced, "%+v", e)
		got[e.Model] = append(got[e.Model], line{e.Unit, e.Quantity, e.Cost})
	}
	require.Equal(t, []line{
		{kernel.UnitImages, 3, 3 * 80 * kernel.Dollar / 1000},
		{kernel.UnitImages, 1, 120 * kernel.Dollar / 1000},
	}, got["img"], "n images at their size and quality's price")
	require.Equal(t, []line{{kernel.UnitCharacters, 22, 22 * 15_000}}, got["tts"])
	require.Equal(t, []line{{kernel.UnitSearches, 2, 2 * 2 * kernel.Dollar / 1000}}, got["rr"])
	require.Len(t, got["mod"], 1)
	require.Empty(t, got["mod"][0].unit, "moderations are tokens")
	require.Positive(t, got["mod"][0].cost)
	var images int64
	for _, l := range got["img"] {
		images += l.quantity
	}
	require.Equal(t, bill.Images, images, "ledger images == the mock's bill")
}

// TestUnitRoutesRefused: a request over a strict budget is refused before
// the provider is called (the reservation of n images exceeds it), an
// unknown model and bad input get typed errors in OpenAI's shape, and a
// size without a price is refused under a strict budget (never $0).
func TestUnitRoutesRefused(t *testing.T) {
	r := start(t, false)
	unitGroups(t, r)
	tiny := kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: 100 * kernel.Dollar / 1000, Period: kernel.Period{Kind: kernel.PeriodTotal}}}}
	key := r.key(t, "k-tiny", tiny)
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	eventually(t, func() bool {
		resp, _ := r.do(t, http.MethodPost, key, "/v1/images/generations", `{"model":"img","prompt":"p","size":"1024x1024"}`)
		return resp.StatusCode == http.StatusOK
	})
	r.mock.ResetStats()

	for _, c := range []struct {
		name, path, body string
		status           int
		code, param      string
	}{
		{"over budget", "/v1/images/generations", `{"model":"img","prompt":"p","n":3,"size":"1024x1024","quality":"hd"}`, 400, "budget_exceeded", ""},
		{"unknown model", "/v1/images/generations", `{"model":"no-such","prompt":"p"}`, 404, "model_not_found", "model"},
		{"too many images", "/v1/images/generations", `{"model":"img","prompt":"p","n":11}`, 400, "", "n"},
		{"speech without input", "/v1/audio/speech", `{"model":"tts","voice":"alloy"}`, 400, "", "input"},
		{"not JSON", "/v1/rerank", `{"model":`, 400, "invalid_json", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := r.do(t, http.MethodPost, key, c.path, c.body)
			require.Equal(t, c.status, resp.StatusCode, string(b))
			var e struct {
				Error struct {
					Type, Message string
					Code, Param   *string
				}
			}
			require.NoError(t, json.Unmarshal(b, &e), string(b))
			require.NotEmpty(t, e.Error.Message)
			if c.code != "" {
				require.NotNil(t, e.Error.Code, string(b))
				require.Equal(t, c.code, *e.Error.Code)
			}
			if c.param != "" {
				require.NotNil(t, e.Error.Param, string(b))
				require.Equal(t, c.param, *e.Error.Param)
			}
		})
	}
	// Priced per image, but not at this size: unpriced, refused under the
	// strict budget rather than charged $0.
	put(t, r.st, "img", &store.ModelPrice{ID: "img", Price: kernel.Price{Units: &kernel.UnitPrices{Image: map[string]kernel.Money{"1024x1024": kernel.Dollar / 100}}}})
	eventually(t, func() bool { // until the new price is in the snapshot
		_, b := r.do(t, http.MethodPost, key, "/v1/images/generations", `{"model":"img","prompt":"p","size":"1792x1024"}`)
		return strings.Contains(string(b), "model_price_missing")
	})
	resp, b := r.do(t, http.MethodPost, key, "/v1/images/generations", `{"model":"img","prompt":"p","size":"1792x1024"}`)
	require.Contains(t, string(b), "model_price_missing", string(b))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Zero(t, r.mock.Stats().Total.Images, "nothing refused reached the provider")
}
