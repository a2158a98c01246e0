package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
)

type sdkError struct {
	Class   string `json:"class"`
	Status  int    `json:"status"`
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// batchRows waits until the ledger holds n rows of a batch's lines (the
// poller settles them once the batch ended) and returns them by custom_id.
func (s *system) batchRows(t *testing.T, keyID, batchID string, n int) map[string]ledgerRow {
	t.Helper()
	var rows map[string]ledgerRow
	require.Eventually(t, func() bool {
		rows = map[string]ledgerRow{}
		for _, r := range s.ledger(keyID) {
			if id, ok := strings.CutPrefix(r.RequestID, batchID+"/"); ok {
				_, dup := rows[id]
				require.False(t, dup, "line %s settled twice", id)
				rows[id] = r
			}
		}
		return len(rows) >= n
	}, 30*time.Second, 250*time.Millisecond)
	require.Len(t, rows, n, "one ledger row per line")
	return rows
}

// halfPrice is the mock's bill of a line: its usage at half the model's
// price (mockllm bills batch lines at the batch price), in nano-dollars.
func halfPrice(model string, input, cacheRead, cacheWrite, output int64) int64 {
	p := mockllm.DefaultConfig().Prices[model]
	return (input*p.Input + cacheRead*p.CachedInput + cacheWrite*p.CacheWrite + output*p.Output) / 2 / 1_000_000
}

// TestBatchesWithSDKs runs OpenAI's Batch API (files.create, batches.create,
// batches.retrieve until it ends, files.content) and Anthropic's Message
// Batches (create, retrieve, results) through `tollgate run` with the
// official SDKs. A second replica polls and settles them: each line once in
// the ledger, equal to the mock's bill of the line at the batch price.
// Another key is denied the files and batches (404); a budget that cannot
// cover a batch's worst case refuses it before the provider sees it.
func TestBatchesWithSDKs(t *testing.T) {
	s := startSystem(t, "--batch-delay", "2s")
	s.cli(nil, []string{"CRED=sk-batch-e2e"}, "provider", "create", "p-batch", "--type", "openai", "--base-url", s.mockURL+"/v1", "--credential-env", "CRED")
	s.cli(nil, nil, "deployment", "create", "d-batch", "--provider", "p-batch", "--model", "mock-gpt")
	s.cli(nil, nil, "model", "create", "gpt-batch", "--deployments", "d-batch")
	s.cli(nil, nil, "price", "set", "gpt-batch", "--input", "1", "--output", "2", "--cached-input", "0.5")
	s.cli(nil, []string{"CRED=sk-ant-batch-e2e"}, "provider", "create", "p-abatch", "--type", "anthropic", "--base-url", s.mockURL+"/v1", "--credential-env", "CRED")
	s.cli(nil, nil, "deployment", "create", "d-abatch", "--provider", "p-abatch", "--model", "mock-claude")
	s.cli(nil, nil, "model", "create", "claude-batch", "--deployments", "d-abatch")
	s.cli(nil, nil, "price", "set", "claude-batch", "--input", "3", "--output", "15", "--cached-input", "0.3", "--cache-write", "3.75")
	ownerID, owner := s.createKey("--alias", "batch-owner")
	_, other := s.createKey("--alias", "batch-other")
	_, tight := s.createKey("--alias", "batch-tight", "--budget", "0.01")
	for _, k := range []string{owner, other, tight} {
		s.waitKey(k)
	}
	s.replica(t, "--batch-poll-interval", "1s") // the replica that polls

	t.Run("openai", func(t *testing.T) {
		var out struct {
			BatchID string `json:"batchId"`
			Created string `json:"created"`
			Status  string `json:"status"`
			Output  []struct {
				CustomID string `json:"custom_id"`
				Response struct {
					StatusCode int `json:"status_code"`
					Body       struct {
						Model string `json:"model"`
						Usage struct {
							Prompt     int64 `json:"prompt_tokens"`
							Completion int64 `json:"completion_tokens"`
						} `json:"usage"`
					} `json:"body"`
				} `json:"response"`
			} `json:"output"`
			Denied map[string]*sdkError `json:"denied"`
			Listed []string             `json:"listed"`
			Fatal  *sdkError            `json:"fatal"`
		}
		s.node("openai.mjs", "batch", owner, &out, "TOLLGATE_MODEL=gpt-batch", "TOLLGATE_OTHER_KEY="+other)
		require.Nil(t, out.Fatal)
		require.Equal(t, "in_progress", out.Created)
		require.Equal(t, "completed", out.Status)
		require.Len(t, out.Output, 3)
		require.Contains(t, out.Listed, out.BatchID)
		for what, e := range out.Denied {
			require.NotNil(t, e, "another key's %s", what)
			require.Equal(t, http.StatusNotFound, e.Status, "another key's %s: %+v", what, e)
		}
		require.Len(t, out.Denied, 5)

		rows := s.batchRows(t, ownerID, out.BatchID, 3)
		for _, l := range out.Output {
			require.Equal(t, http.StatusOK, l.Response.StatusCode)
			u := l.Response.Body.Usage
			r := rows[l.CustomID]
			require.Equal(t, "gpt-batch", r.Model)
			require.Equal(t, u.Prompt, r.Usage.Input)
			require.Equal(t, u.Completion, r.Usage.Output)
			require.Positive(t, r.Cost.NanoUSD)
			require.Equal(t, halfPrice("mock-gpt", u.Prompt, 0, 0, u.Completion), r.Cost.NanoUSD, "line %s: the mock's bill at the batch price", l.CustomID)
		}
	})

	t.Run("anthropic", func(t *testing.T) {
		var out struct {
			ID         string `json:"id"`
			Created    string `json:"created"`
			Status     string `json:"status"`
			ResultsURL string `json:"resultsURL"`
			Results    []struct {
				CustomID string `json:"custom_id"`
				Result   struct {
					Type    string `json:"type"`
					Message struct {
						Usage anthropicUsage `json:"usage"`
					} `json:"message"`
				} `json:"result"`
			} `json:"results"`
			Denied *sdkError `json:"denied"`
			Listed []string  `json:"listed"`
			Fatal  *sdkError `json:"fatal"`
		}
		s.node("anthropic.mjs", "batch", owner, &out, "TOLLGATE_MODEL=claude-batch", "TOLLGATE_OTHER_KEY="+other)
		require.Nil(t, out.Fatal)
		require.Equal(t, "in_progress", out.Created)
		require.Equal(t, "ended", out.Status)
		require.True(t, strings.HasPrefix(out.ResultsURL, s.url+"/v1/messages/batches/"), "results are read through the gateway: %s", out.ResultsURL)
		require.Len(t, out.Results, 2)
		require.NotNil(t, out.Denied)
		require.Equal(t, http.StatusNotFound, out.Denied.Status)
		require.Equal(t, "not_found_error", out.Denied.Type)
		require.Contains(t, out.Listed, out.ID)

		rows := s.batchRows(t, ownerID, out.ID, 2)
		for _, l := range out.Results {
			require.Equal(t, "succeeded", l.Result.Type)
			u := l.Result.Message.Usage
			r := rows[l.CustomID]
			require.Equal(t, "claude-batch", r.Model)
			require.Equal(t, u.Output, r.Usage.Output)
			require.Positive(t, r.Cost.NanoUSD)
			require.Equal(t, halfPrice("mock-claude", u.Input, u.CacheRead, u.CacheWrite, u.Output), r.Cost.NanoUSD, "line %s: the mock's bill at the batch price", l.CustomID)
		}
	})

	t.Run("a budget that cannot cover the worst case", func(t *testing.T) {
		var oa struct {
			CreateError *sdkError `json:"createError"`
			Fatal       *sdkError `json:"fatal"`
		}
		s.node("openai.mjs", "batch", tight, &oa, "TOLLGATE_MODEL=gpt-batch", "TOLLGATE_MAX_TOKENS=1000000", "TOLLGATE_OTHER_KEY="+other)
		require.Nil(t, oa.Fatal)
		require.NotNil(t, oa.CreateError)
		require.Equal(t, http.StatusBadRequest, oa.CreateError.Status)
		require.Equal(t, "budget_exceeded", oa.CreateError.Code)

		var an struct {
			CreateError *sdkError `json:"createError"`
			Fatal       *sdkError `json:"fatal"`
		}
		s.node("anthropic.mjs", "batch", tight, &an, "TOLLGATE_MODEL=claude-batch", "TOLLGATE_MAX_TOKENS=1000000", "TOLLGATE_OTHER_KEY="+other)
		require.Nil(t, an.Fatal)
		require.NotNil(t, an.CreateError)
		require.Equal(t, http.StatusBadRequest, an.CreateError.Status)
		require.Equal(t, "invalid_request_error", an.CreateError.Type)
		require.Contains(t, an.CreateError.Message, "Budget exceeded")
	})
}
