package extproc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
)

// TestModelRetrieve: GET /v1/models/{id} answers the model object of a model
// the key may use, 404 model_not_found otherwise; with anthropic-version the
// list and the object come in Anthropic's shapes.
func TestModelRetrieve(t *testing.T) {
	e := newTestEnv(t)
	resp := e.do(t, get("/v1/models/gpt-4o", otherKey), nil)
	require.Equal(t, 200, resp.Status)
	require.JSONEq(t, `{"id":"gpt-4o","object":"model","created":1700000000,"owned_by":"acme"}`, string(resp.Body))

	resp = e.do(t, get("/v1/models/instruct", otherKey), nil) // exists, not allowed to k2
	requireOpenAIError(t, resp, wantError{404, "invalid_request_error", "model_not_found", "model", "does not exist"})
	resp = e.do(t, get("/v1/models/nope", clientKey), nil)
	requireOpenAIError(t, resp, wantError{404, "invalid_request_error", "model_not_found", "model", "does not exist"})
	resp = e.do(t, get("/v1/models/nope", "tg-bad"), nil)
	requireOpenAIError(t, resp, wantError{401, "invalid_request_error", "invalid_api_key", "", "Invalid API key"})

	anth := func(path string) *extprocfiltertest.Request {
		r := get(path, otherKey)
		r.Headers = append(r.Headers, extprocfilter.Header{Key: "anthropic-version", Value: "2023-06-01"})
		return r
	}
	resp = e.do(t, anth("/v1/models"), nil)
	require.Equal(t, 200, resp.Status)
	require.JSONEq(t, `{"data":[{"type":"model","id":"gpt-4o","display_name":"gpt-4o","created_at":"2023-11-14T22:13:20Z"}],"has_more":false,"first_id":"gpt-4o","last_id":"gpt-4o"}`, string(resp.Body))
	resp = e.do(t, anth("/v1/models/gpt-4o"), nil)
	require.JSONEq(t, `{"type":"model","id":"gpt-4o","display_name":"gpt-4o","created_at":"2023-11-14T22:13:20Z"}`, string(resp.Body))
	resp = e.do(t, anth("/v1/models/nope"), nil)
	require.Equal(t, 404, resp.Status)
	require.JSONEq(t, `{"type":"error","error":{"type":"not_found_error","message":"The model `+"`nope`"+` does not exist or you do not have access to it."}}`, string(resp.Body))
	require.Empty(t, e.acct.Admits())
}
