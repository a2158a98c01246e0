package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// TestLangChainJS: LangChain's ChatOpenAI (@langchain/openai), on chat
// completions and with useResponsesApi, invoke and stream, on a group whose
// provider serves the Responses API natively, one translated to chat
// completions and one translated to Anthropic Messages; the ledger equals
// mockllm's bill for each provider.
func TestLangChainJS(t *testing.T) {
	s := startSystem(t)
	testenv.NodePackage(t, "@langchain/openai")
	models := s.responsesModels("native", "chat", "claude")
	type usage struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	}
	calls := 0
	for _, kind := range []string{"native", "chat", "claude"} {
		for _, responses := range []string{"0", "1"} {
			env := []string{"TOLLGATE_MODEL=" + models[kind], "TOLLGATE_RESPONSES=" + responses}
			name := kind + "/chat"
			if responses == "1" {
				name = kind + "/responses"
			}
			t.Run(name, func(t *testing.T) {
				var inv struct {
					Text  string
					Usage *usage
					Fatal any
				}
				s.node("langchain.mjs", "invoke", s.demoKey, &inv, env...)
				require.Nil(t, inv.Fatal)
				require.NotEmpty(t, inv.Text)
				require.NotNil(t, inv.Usage)
				require.Positive(t, inv.Usage.InputTokens)
				require.Equal(t, int64(8), inv.Usage.OutputTokens)
				var st struct {
					Text   string
					Chunks int
					Usage  *usage
					Fatal  any
				}
				s.node("langchain.mjs", "stream", s.demoKey, &st, env...)
				require.Nil(t, st.Fatal)
				require.Len(t, strings.Fields(st.Text), 8, "%+v", st)
				require.Greater(t, st.Chunks, 1)
				require.NotNil(t, st.Usage)
				require.Equal(t, int64(8), st.Usage.OutputTokens)
				calls += 2
			})
		}
	}

	var bill anthropicBill
	for _, kind := range []string{"native", "chat", "claude"} {
		b := s.anthropicBill("sk-" + kind)
		bill.Requests += b.Requests
		bill.InputTokens += b.InputTokens + b.CachedTokens + b.CacheCreationTokens
		bill.OutputTokens += b.OutputTokens
	}
	require.Equal(t, int64(calls), bill.Requests)
	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = s.ledger("demo")
		return len(rows) >= calls
	}, 10*time.Second, 100*time.Millisecond, "every request is in the ledger")
	in, out := completedUsage(t, rows)
	require.Len(t, rows, calls)
	require.Equal(t, bill.InputTokens, in, "input")
	require.Equal(t, bill.OutputTokens, out, "output")
}

// completedUsage checks that every row completed and returns their input
// tokens (cache reads and writes included) and output tokens (reasoning
// included), to set against a provider's bill.
func completedUsage(t *testing.T, rows []ledgerRow) (in, out int64) {
	t.Helper()
	for _, r := range rows {
		require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status, "%+v", r)
		in += r.Usage.Input + r.Usage.CachedInput + r.Usage.CacheWrite
		out += r.Usage.Output + r.Usage.Reasoning
	}
	return in, out
}
