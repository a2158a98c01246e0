package mockllm

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestModerations(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlaggedWords = []string{"Forbidden"}
	srv := httptest.NewServer(New(cfg))
	defer srv.Close()
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(srv.URL+"/v1/moderations", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp.StatusCode, out
	}
	code, out := post(`{"model":"omni-moderation-latest","input":["a FORBIDDEN thing","hello"]}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "omni-moderation-latest", out["model"])
	res := out["results"].([]any)
	require.Len(t, res, 2)
	first, second := res[0].(map[string]any), res[1].(map[string]any)
	require.Equal(t, true, first["flagged"])
	require.Equal(t, true, first["categories"].(map[string]any)["violence"])
	require.InDelta(t, 0.99, first["category_scores"].(map[string]any)["violence"], 1e-9)
	require.Equal(t, false, second["flagged"])
	require.Len(t, second["categories"], len(moderationCategories))

	_, out = post(`{"input":[{"type":"text","text":"forbidden"},{"type":"image_url","image_url":{"url":"x"}}]}`)
	require.Equal(t, "omni-moderation-latest", out["model"])
	require.Len(t, out["results"], 1)

	code, out = post(`{"input":42}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, out, "error")
}
