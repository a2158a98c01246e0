package extproc

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// TestStrictBudgetReservesEveryChoice: the provider generates, and bills, n
// (or best_of) completions of up to max_tokens each, so a strict budget
// reserves n × the output bound and a clamp splits what the budget affords
// between the choices.
func TestStrictBudgetReservesEveryChoice(t *testing.T) {
	budget := 3 * kernel.Cent / 10 // $0.003
	strict := func(sf kernel.Shortfall) *kernel.Limits {
		return &kernel.Limits{Shortfall: sf, Budgets: []kernel.BudgetWindow{{Limit: budget, Period: kernel.Period{Kind: kernel.PeriodTotal}}}}
	}
	tests := []struct {
		name      string
		path      string
		body      string
		shortfall kernel.Shortfall
		choices   int64
		reserved  int64 // output tokens the kernel was asked to reserve for
		field     string
	}{
		{"chat n clamp", "/v1/chat/completions", `{"model":"gpt-4o","n":5,"max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`, kernel.Clamp, 5, 5000, "max_tokens"},
		{"chat n default bound", "/v1/chat/completions", `{"model":"gpt-4o","n":3,"messages":[{"role":"user","content":"hi"}]}`, kernel.Clamp, 3, 3 * kernel.DefaultOutputBound, "max_completion_tokens"},
		{"completions best_of", "/v1/completions", `{"model":"gpt-4o","n":2,"best_of":4,"max_tokens":1000,"prompt":"hi"}`, kernel.Clamp, 4, 4000, "max_tokens"},
		{"chat n reject", "/v1/chat/completions", `{"model":"gpt-4o","n":5,"max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`, kernel.Reject, 5, 5000, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.cat.keys[clientKey].Scopes[0].Limits = strict(tt.shortfall)
			up := &recorder{resp: jsonResponse(200, chatResponse)}
			resp := e.do(t, post(tt.path, clientKey, tt.body), up.upstream)
			admits := e.acct.Admits()
			require.Len(t, admits, 1)
			bound := admits[0].MaxTokens
			if bound == 0 {
				bound = admits[0].DefaultMaxTokens
			}
			require.Equal(t, tt.reserved, bound, "output reserved for every choice")
			if tt.shortfall == kernel.Reject {
				requireOpenAIError(t, resp, wantError{400, "budget_exceeded", "budget_exceeded", "", "Budget exceeded for the key"})
				require.Empty(t, up.got, "not forwarded")
				return
			}
			require.Equal(t, 200, resp.Status)
			var sent map[string]any
			require.NoError(t, json.Unmarshal(up.last(t).Body, &sent))
			perChoice, ok := sent[tt.field].(float64)
			require.True(t, ok, "%s sent upstream: %v", tt.field, sent)
			// What the provider may bill at most stays within the budget.
			worst := kernel.Cost(testPrice, kernel.Usage{Input: int64(len(tt.body)), Output: tt.choices * int64(perChoice)})
			t.Logf("%s: %s=%v per choice, %d choices: worst bill %d n$ of a %d n$ budget", tt.name, tt.field, perChoice, tt.choices, worst, budget)
			require.GreaterOrEqual(t, perChoice, 1.0)
			require.LessOrEqual(t, worst, budget)
		})
	}
}

func TestChoicesValidated(t *testing.T) {
	for _, body := range []string{
		`{"model":"gpt-4o","n":0,"messages":[]}`,
		`{"model":"gpt-4o","n":"2","messages":[]}`,
		`{"model":"gpt-4o","n":129,"messages":[]}`,
	} {
		e := newTestEnv(t)
		up := &recorder{resp: jsonResponse(200, chatResponse)}
		resp := e.do(t, post("/v1/chat/completions", clientKey, body), up.upstream)
		requireOpenAIError(t, resp, wantError{400, "invalid_request_error", "", "n", "Invalid 'n'"})
		require.Empty(t, e.acct.Admits(), body)
	}
}
