package translate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestModelShapes: the model list and model object of each client API.
func TestModelShapes(t *testing.T) {
	models := []ModelInfo{
		{ID: "zeta", OwnedBy: "acme", Created: time.Unix(1700000000, 0)},
		{ID: "alpha"},
	}
	tests := []struct {
		api        ModelAPI
		list, item string
	}{
		{
			ModelsOpenAI,
			`{"object":"list","data":[{"id":"alpha","object":"model","created":0,"owned_by":"tollgate"},{"id":"zeta","object":"model","created":1700000000,"owned_by":"acme"}]}`,
			`{"id":"zeta","object":"model","created":1700000000,"owned_by":"acme"}`,
		},
		{
			ModelsAnthropic,
			`{"data":[{"type":"model","id":"zeta","display_name":"zeta","created_at":"2023-11-14T22:13:20Z"},{"type":"model","id":"alpha","display_name":"alpha","created_at":"1970-01-01T00:00:00Z"}],"has_more":false,"first_id":"zeta","last_id":"alpha"}`,
			`{"type":"model","id":"zeta","display_name":"zeta","created_at":"2023-11-14T22:13:20Z"}`,
		},
	}
	for _, tt := range tests {
		list, err := ModelListBody(tt.api, models)
		require.NoError(t, err)
		require.JSONEq(t, tt.list, string(list))
		item, err := ModelBody(tt.api, models[0])
		require.NoError(t, err)
		require.JSONEq(t, tt.item, string(item))
	}
	list, err := ModelListBody(ModelsGemini, models)
	require.NoError(t, err)
	want, err := GeminiModelsBody([]string{"zeta", "alpha"})
	require.NoError(t, err)
	require.Equal(t, string(want), string(list))
}

func TestModelErrors(t *testing.T) {
	e := ErrModelNotFound(ModelsOpenAI, "m", "")
	require.Equal(t, 404, e.Status)
	require.Equal(t, CodeModelNotFound, e.Code)
	require.JSONEq(t, `{"error":{"message":"The model `+"`m`"+` does not exist or you do not have access to it.","type":"invalid_request_error","param":"model","code":"model_not_found"}}`,
		string(ModelErrorBody(ModelsOpenAI, e)))
	g := ErrModelNotFound(ModelsGemini, "m", "v1beta")
	require.Contains(t, string(ModelErrorBody(ModelsGemini, g)), `"status":"NOT_FOUND"`)
	require.Contains(t, g.Message, "models/m is not found for API version v1beta")
	require.Equal(t, CodeUnknownURL, ErrModelURL(ModelsAnthropic, "GET", "/v1/models/").Code)
	require.Empty(t, ErrModelURL(ModelsGemini, "GET", "/v1beta/models/").Code)
}
