package extproc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/translate"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// unpricedModels are, by provider type, a model as that provider names it
// that the price table does not know.
var unpricedModels = map[translate.ProviderType]string{
	translate.ProviderOpenAI:    "my-finetune-2026",
	translate.ProviderAzure:     "prod-eastus-deployment",
	translate.ProviderAnthropic: "claude-future-9",
	translate.ProviderGemini:    "models/gemini-future",
	translate.ProviderVertex:    "claude-sonnet-4-5@20250929",
	translate.ProviderBedrock:   "us.anthropic.claude-future-v1:0",
}

// unpricedRequest is a request of api for model: its path and body.
func unpricedRequest(api translate.API, model string) (path, body string) {
	switch api {
	case translate.APIChat:
		return "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`
	case translate.APICompletions:
		return "/v1/completions", `{"model":"` + model + `","prompt":"hi","max_tokens":5}`
	case translate.APIEmbeddings:
		return "/v1/embeddings", `{"model":"` + model + `","input":"hi"}`
	case translate.APIResponses:
		return "/v1/responses", `{"model":"` + model + `","input":"hi","max_output_tokens":16}`
	case translate.APIMessages:
		return "/v1/messages", `{"model":"` + model + `","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	case translate.APIMessagesCount:
		return "/v1/messages/count_tokens", `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
	case translate.APIGeminiGenerate:
		return "/v1beta/models/" + model + ":generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	case translate.APIGeminiCount:
		return "/v1beta/models/" + model + ":countTokens", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	case translate.APIImages:
		return "/v1/images/generations", `{"model":"` + model + `","prompt":"a fox","n":2}`
	case translate.APIModerations:
		return "/v1/moderations", `{"model":"` + model + `","input":"hi"}`
	case translate.APISpeech:
		return "/v1/audio/speech", `{"model":"` + model + `","input":"hi","voice":"alloy"}`
	case translate.APIRerank:
		return "/v1/rerank", `{"model":"` + model + `","query":"q","documents":["a","b"]}`
	case translate.APIImageEdits:
		return "/v1/images/edits", unpricedForm("image", model)
	case translate.APITranscriptions:
		return "/v1/audio/transcriptions", unpricedForm("file", model)
	case translate.APITranslations:
		return "/v1/audio/translations", unpricedForm("file", model)
	}
	return "", ""
}

// unpricedBoundary is the boundary of unpricedForm's forms.
const unpricedBoundary = "tgbound"

// unpricedForm is a multipart form of a model field and a file part.
func unpricedForm(file, model string) string {
	return "--" + unpricedBoundary + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n" + model +
		"\r\n--" + unpricedBoundary + "\r\nContent-Disposition: form-data; name=\"" + file + "\"; filename=\"x\"\r\n\r\nDATA" +
		"\r\n--" + unpricedBoundary + "--\r\n"
}

// unpricedHeaders are the extra headers of api's request (a multipart
// form's content type).
func unpricedHeaders(api translate.API) []extprocfilter.Header {
	switch api {
	case translate.APIImageEdits, translate.APITranscriptions, translate.APITranslations:
		return []extprocfilter.Header{{Key: "content-type", Value: "multipart/form-data; boundary=" + unpricedBoundary}}
	}
	return nil
}

// unpricedEnv is a test env whose key k1 has limits lim and whose catalog
// serves, for every provider type, the public model "unpriced-<provider>"
// from a deployment without a price.
func unpricedEnv(t *testing.T, lim *kernel.Limits) *testEnv {
	t.Helper()
	e := newTestEnv(t)
	e.cat.keys[clientKey].Scopes[0].Limits = lim
	for pt, pm := range unpricedModels {
		name := "unpriced-" + string(pt)
		e.cat.targets[name] = &translate.Target{
			Model: name, Deployment: "dep-" + string(pt), Provider: pt, APIKey: "k", APIVersion: "2024-10-21",
			ProviderModel: pm, Price: kernel.Price{Unpriced: true}, DefaultMaxTokens: 64,
		}
	}
	return e
}

// TestUnpricedRefusedUnderStrictBudget: on every client translate.API × provider type
// of the translation table, a model without a price is refused under a
// strict budget (clamp and reject alike) before any provider call, with an
// error in the client's own shape that names the missing price; the kernel
// holds nothing for it.
func TestUnpricedRefusedUnderStrictBudget(t *testing.T) {
	budget := []kernel.BudgetWindow{{Limit: kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodTotal}}}
	for _, shortfall := range []kernel.Shortfall{kernel.Clamp, kernel.Reject} {
		e := unpricedEnv(t, &kernel.Limits{Budgets: budget, Shortfall: shortfall})
		up := &recorder{resp: jsonResponse(200, `{}`)}
		for _, k := range translate.Pairs() {
			model := "unpriced-" + string(k.Provider)
			t.Run(shortfall.String()+"/"+string(k.API)+"/"+string(k.Provider), func(t *testing.T) {
				path, body := unpricedRequest(k.API, model)
				require.NotEmpty(t, path, "a request for %s", k.API)
				got := e.do(t, post(path, clientKey, body, unpricedHeaders(k.API)...), up.upstream)
				require.Nil(t, got.Forwarded, "nothing goes upstream")
				require.Equal(t, http.StatusBadRequest, got.Status, "%s", got.Body)
				msg := unpricedErrorMessage(t, k.API, got.Body)
				require.Contains(t, msg, "`"+unpricedModels[k.Provider]+"`", "names the model the price is missing for")
				require.Contains(t, msg, "has no price")
				require.Contains(t, msg, "key's budget")
			})
		}
		up.mu.Lock()
		require.Empty(t, up.got, "the provider was never called")
		up.mu.Unlock()
		require.Empty(t, e.acct.Records(), "nothing admitted, nothing settled")
	}
}

// unpricedErrorMessage reads the error message of body in api's error shape
// (OpenAI's with code model_price_missing, Anthropic's, Google's).
func unpricedErrorMessage(t *testing.T, api translate.API, body []byte) string {
	t.Helper()
	switch api {
	case translate.APIMessages, translate.APIMessagesCount:
		var env struct {
			Type  string `json:"type"`
			Error struct{ Type, Message string }
		}
		require.NoError(t, json.Unmarshal(body, &env), "%s", body)
		require.Equal(t, "error", env.Type, "%s", body)
		require.Equal(t, "invalid_request_error", env.Error.Type, "%s", body)
		return env.Error.Message
	case translate.APIGeminiGenerate, translate.APIGeminiCount:
		var env struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &env), "%s", body)
		require.Equal(t, 400, env.Error.Code, "%s", body)
		require.Equal(t, "INVALID_ARGUMENT", env.Error.Status, "%s", body)
		return env.Error.Message
	default:
		var env struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    string `json:"code"`
				Param   string `json:"param"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &env), "%s", body)
		require.Equal(t, "model_price_missing", env.Error.Code, "%s", body)
		require.Equal(t, "invalid_request_error", env.Error.Type, "%s", body)
		require.Equal(t, "model", env.Error.Param, "%s", body)
		return env.Error.Message
	}
}

// TestUnpricedServedAndMarked: under an estimate budget, or with no budget
// at all, an unpriced model is served and its settlement marked unpriced;
// a deployment declared free (a zero price that is not unpriced) is served
// under a strict budget and not marked.
func TestUnpricedServedAndMarked(t *testing.T) {
	budget := []kernel.BudgetWindow{{Limit: kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodTotal}}}
	reply := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`
	for _, tc := range []struct {
		name     string
		lim      *kernel.Limits
		free     bool
		unpriced bool
	}{
		{"estimate budget", &kernel.Limits{Budgets: budget, Mode: kernel.Estimate}, false, true},
		{"no budget", &kernel.Limits{RPM: 100}, false, true},
		{"no limits", nil, false, true},
		{"free deployment under a strict budget", &kernel.Limits{Budgets: budget}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := unpricedEnv(t, tc.lim)
			if tc.free {
				e.cat.targets["unpriced-openai"].Price = kernel.Price{}
			}
			up := &recorder{resp: jsonResponse(200, reply)}
			path, body := unpricedRequest(translate.APIChat, "unpriced-openai")
			got := e.do(t, post(path, clientKey, body), up.upstream)
			require.Equal(t, http.StatusOK, got.Status, "%s", got.Body)
			require.NotNil(t, got.Forwarded)
			recs := e.acct.waitRecords(t, 1)
			require.Equal(t, tc.unpriced, recs[0].Unpriced)
			require.Equal(t, int64(7), recs[0].Usage.Input)
			require.NotContains(t, string(got.Body), "model_price_missing")
		})
	}
}

// TestUnpricedUnitRouteNamesItsFlag: a unit route refused for a missing
// price names, through the processor, the `tollgate price set` flag of its
// unit — for a model nobody priced, and for one priced in tokens only (not
// in the route's unit) — so the operator is not sent to --input/--output.
func TestUnpricedUnitRouteNamesItsFlag(t *testing.T) {
	budget := []kernel.BudgetWindow{{Limit: kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodTotal}}}
	flags := map[translate.API]string{
		translate.APIImages:         "--per-image DOLLARS",
		translate.APIImageEdits:     "--per-image DOLLARS",
		translate.APISpeech:         "--per-character DOLLARS",
		translate.APITranscriptions: "--per-second DOLLARS",
		translate.APITranslations:   "--per-second DOLLARS",
		translate.APIRerank:         "--per-search-unit DOLLARS",
	}
	for _, tokenPriced := range []bool{false, true} {
		e := unpricedEnv(t, &kernel.Limits{Budgets: budget})
		up := &recorder{resp: jsonResponse(200, `{}`)}
		for _, k := range translate.Pairs() {
			flag, ok := flags[k.API]
			if !ok || tokenPriced && k.API == translate.APIRerank { // a rerank priced in tokens is charged in tokens
				continue
			}
			model := "unpriced-" + string(k.Provider)
			if tokenPriced {
				e.cat.targets[model].Price = kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}
			}
			t.Run(fmt.Sprintf("token-priced=%v/%s/%s", tokenPriced, k.API, k.Provider), func(t *testing.T) {
				path, body := unpricedRequest(k.API, model)
				got := e.do(t, post(path, clientKey, body, unpricedHeaders(k.API)...), up.upstream)
				require.Nil(t, got.Forwarded, "nothing goes upstream")
				require.Equal(t, http.StatusBadRequest, got.Status, "%s", got.Body)
				msg := unpricedErrorMessage(t, k.API, got.Body)
				require.Contains(t, msg, "tollgate price set "+unpricedModels[k.Provider]+" "+flag, "names the unit's flag")
				require.NotContains(t, msg, "--input")
			})
		}
	}
}
