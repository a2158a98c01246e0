package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Checks shared by the cloud provider types' end-to-end tests (gemini,
// bedrock, vertex), each run with an official SDK against one model group.

// responsesChecks: the OpenAI Node SDK's responses.create, JSON (cut at
// max_output_tokens 6: incomplete) and streamed (5 words, the events in
// order from response.created to response.incomplete).
func (s *system) responsesChecks(t *testing.T, key, model string) {
	t.Helper()
	env := []string{"TOLLGATE_MODEL=" + model}
	var out respSummary
	s.node("responses.mjs", "create", key, &out, env...)
	require.Equal(t, "response", out.Object, "%+v", out)
	require.Equal(t, "incomplete", out.Status, "max_output_tokens 6 < the mock's 16 words")
	require.Equal(t, model, out.Model)
	require.Len(t, strings.Fields(out.Text), 6)
	require.NotNil(t, out.Usage)
	require.Equal(t, int64(6), out.Usage.Output)
	require.Positive(t, out.Usage.Input)

	var st struct {
		Types []string
		Seqs  []int
		Text  string
		Final *respSummary
	}
	s.node("responses.mjs", "stream", key, &st, env...)
	require.NotEmpty(t, st.Types, "%+v", st)
	require.Equal(t, "response.created", st.Types[0], "%+v", st)
	require.Equal(t, "response.incomplete", st.Types[len(st.Types)-1])
	for i, n := range st.Seqs {
		require.Equal(t, i, n, "sequence_number counts from 0 with no gap")
	}
	require.Len(t, strings.Fields(st.Text), 5)
	require.NotNil(t, st.Final)
	require.Equal(t, int64(5), st.Final.Usage.Output)
}

// completionsChecks: the OpenAI Node SDK's completions.create, JSON and
// streamed with include_usage, both cut by max_tokens; echo (which chat
// cannot express) is a BadRequestError naming it.
func (s *system) completionsChecks(t *testing.T, key, model string) {
	t.Helper()
	env := []string{"TOLLGATE_MODEL=" + model}
	type usage struct {
		Prompt     int64 `json:"prompt_tokens"`
		Completion int64 `json:"completion_tokens"`
		Total      int64 `json:"total_tokens"`
	}
	var out struct {
		Object, Model, Text, Finish string
		Usage                       usage
	}
	s.node("completions.mjs", "create", key, &out, env...)
	require.Equal(t, "text_completion", out.Object, "%+v", out)
	require.Equal(t, model, out.Model)
	require.Equal(t, "length", out.Finish)
	require.Len(t, strings.Fields(out.Text), 6)
	require.Equal(t, int64(6), out.Usage.Completion)
	require.Equal(t, out.Usage.Prompt+6, out.Usage.Total)

	var st struct {
		Objects      []string
		Text, Finish string
		Usage        *usage
	}
	s.node("completions.mjs", "stream", key, &st, env...)
	require.Equal(t, []string{"text_completion"}, st.Objects, "%+v", st)
	require.Equal(t, "length", st.Finish)
	require.Len(t, strings.Fields(st.Text), 5)
	require.NotNil(t, st.Usage, "include_usage")
	require.Equal(t, int64(5), st.Usage.Completion)

	var bad struct {
		Error        *errInfo
		IsBadRequest bool
	}
	s.node("completions.mjs", "echo", key, &bad, env...)
	require.NotNil(t, bad.Error, "%+v", bad)
	require.True(t, bad.IsBadRequest, "%+v", bad.Error)
	require.Contains(t, bad.Error.Message, "echo")
}

// settledRows waits until the key's ledger has n rows and returns them.
func (s *system) settledRows(t *testing.T, keyID string, n int) []ledgerRow {
	t.Helper()
	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = s.ledger(keyID)
		return len(rows) >= n
	}, 10*time.Second, 100*time.Millisecond, "every request is in the ledger")
	require.Len(t, rows, n)
	return rows
}

// ledgerTokens sums the rows' input (cache reads and writes included) and
// output (reasoning included).
func ledgerTokens(rows []ledgerRow) (in, out int64) {
	for _, r := range rows {
		in += r.Usage.Input + r.Usage.CachedInput + r.Usage.CacheWrite
		out += r.Usage.Output + r.Usage.Reasoning
	}
	return in, out
}
