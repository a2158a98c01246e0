package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// teamKey puts a key of team "ml" (org "acme") and returns its secret.
func (r *running) teamKey(t *testing.T, id string, lim kernel.Limits) string {
	t.Helper()
	s := secret.New("tg-")
	put(t, r.st, id, &store.Key{ID: id, TeamID: "ml", OrgID: "acme", Prefix: secret.Display(s), Hashes: []store.KeyHash{{Hash: secret.Hash(s)}}, Limits: lim})
	return s
}

func attach(t *testing.T, st store.Store, scope, id string, names ...string) {
	t.Helper()
	put(t, st, store.AttachmentID(scope, id), &store.GuardrailAttachment{ID: store.AttachmentID(scope, id), Scope: scope, ScopeID: id, Guardrails: names})
}

func errMessage(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Message, Code string }
	}
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	return e.Error.Message
}

// A team's mandatory guardrail holds for its keys even when a key removes
// it; a key removes an optional one; redaction reaches the provider (the mock
// echoes the prompt) and a block costs nothing.
func TestGatewayGuardrailsInheritance(t *testing.T) {
	r := start(t, false)
	put(t, r.st, "acme", &store.Org{ID: "acme"})
	put(t, r.st, "ml", &store.Team{ID: "ml", OrgID: "acme"})
	put(t, r.st, "pii", &store.Guardrail{ID: "pii", Kind: "pii", Action: "redact", On: []string{"pre", "post", "stream"}, Mandatory: true})
	put(t, r.st, "no-words", &store.Guardrail{ID: "no-words", Kind: "words", Action: "block", On: []string{"pre"}, Words: []string{"falcon"}})
	attach(t, r.st, store.AttachTeam, "ml", "pii", "no-words")
	budget := kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodTotal}}}}
	k1 := r.teamKey(t, "k1", budget)
	attach(t, r.st, store.AttachKey, "k1", "-pii", "-no-words")
	k2 := r.teamKey(t, "k2", kernel.Limits{})
	r.warm(t, k2, `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)

	// k1 removed no-words (optional) but not pii (mandatory).
	resp, b := r.post(t, k1, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"falcon jane@example.com"}],"max_tokens":4}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "pii", resp.Header.Get("x-tollgate-guardrails"))
	require.Contains(t, string(b), "falcon [EMAIL]", "the provider saw the placeholder and echoed it")
	require.NotContains(t, string(b), "jane")

	// k2 keeps both: blocked, before anything is charged; the refusal is a
	// $0 row marked with the guardrail, and the ledger's total and the
	// key's spend are what they were.
	before := len(completed(t, r.st))
	total, spent := ledgerTotal(t, r.st), scopeSpend(t, r.st, kernel.ScopeKey, "k2")
	resp, b = r.post(t, k2, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"project falcon"}],"max_tokens":4}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, `Blocked by guardrail "no-words": the text contains BLOCKED_WORD.`, errMessage(t, b))
	require.Equal(t, "pii,no-words", resp.Header.Get("x-tollgate-guardrails"))
	require.Len(t, completed(t, r.st), before, "nothing settled for a refused request")
	refused := entriesWith(t, r.st, kernel.StatusRefused)
	require.Len(t, refused, 1)
	e := refused[0]
	require.Equal(t, "guardrail:no-words", e.Deployment)
	require.Equal(t, "k2", e.KeyID)
	require.Equal(t, "ml", e.TeamID)
	require.Equal(t, "demo", e.Model)
	require.Equal(t, http.StatusBadRequest, e.HTTPStatus)
	require.Zero(t, e.Cost)
	require.Zero(t, e.Usage)
	require.Equal(t, total, ledgerTotal(t, r.st), "the ledger's total is unchanged")
	require.Equal(t, spent, scopeSpend(t, r.st, kernel.ScopeKey, "k2"), "the key's spend is unchanged")
}

func entriesWith(t *testing.T, st store.Store, status kernel.Status) []store.LedgerEntry {
	t.Helper()
	all, err := st.Entries(context.Background(), store.LedgerFilter{})
	require.NoError(t, err)
	var out []store.LedgerEntry
	for _, e := range all {
		if e.Status == status {
			out = append(out, e)
		}
	}
	return out
}

func ledgerTotal(t *testing.T, st store.Store) kernel.Money {
	t.Helper()
	all, err := st.Entries(context.Background(), store.LedgerFilter{})
	require.NoError(t, err)
	var sum kernel.Money
	for _, e := range all {
		sum += e.Cost
	}
	return sum
}

func scopeSpend(t *testing.T, st store.Store, kind kernel.ScopeKind, id string) kernel.Money {
	t.Helper()
	m, err := st.ScopeSpend(context.Background(), kernel.ScopeRef{Kind: kind, ID: id}, time.Time{}, time.Now().Add(time.Hour))
	require.NoError(t, err)
	return m
}

// Streams: a phone number the provider streams over several chunks (one
// word each) reaches the client redacted.
func TestGatewayGuardrailStreamSplit(t *testing.T) {
	r := start(t, false)
	put(t, r.st, "pii-out", &store.Guardrail{ID: "pii-out", Kind: "pii", Action: "redact", On: []string{"stream"}})
	attach(t, r.st, store.AttachModel, "demo", "pii-out")
	k := r.key(t, "k", kernel.Limits{})
	r.warm(t, k, `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)
	resp, b := r.post(t, k, "/v1/chat/completions", `{"model":"demo","stream":true,"messages":[{"role":"user","content":"call +1 415 555 2671 now"}],"max_tokens":6}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var text strings.Builder
	events := 0
	for _, ev := range strings.Split(string(b), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var m struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		require.NoError(t, json.Unmarshal([]byte(data), &m), data)
		for _, c := range m.Choices {
			text.WriteString(c.Delta.Content)
		}
		events++
	}
	require.Equal(t, "call [PHONE] now", text.String())
	require.Greater(t, events, 3, "still streamed as events")
}

// Webhooks: down, a fail-closed guardrail blocks and a fail-open one lets
// the request through.
func TestGatewayGuardrailWebhookDown(t *testing.T) {
	r := start(t, false)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + l.Addr().String() + "/check"
	require.NoError(t, l.Close())
	put(t, r.st, "hook-closed", &store.Guardrail{ID: "hook-closed", Kind: "webhook", Action: "block", On: []string{"pre"}, URL: down, TimeoutMS: 500})
	put(t, r.st, "hook-open", &store.Guardrail{ID: "hook-open", Kind: "webhook", Action: "block", On: []string{"pre"}, URL: down, TimeoutMS: 500, FailOpen: true})
	put(t, r.st, "mod", &store.Guardrail{ID: "mod", Kind: "moderation", Action: "block", On: []string{"pre"}, Provider: "mock"})
	kc, ko := r.key(t, "kc", kernel.Limits{}), r.key(t, "ko", kernel.Limits{})
	attach(t, r.st, store.AttachKey, "kc", "hook-closed")
	attach(t, r.st, store.AttachKey, "ko", "hook-open", "mod")
	r.warm(t, ko, `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)
	resp, b := r.post(t, kc, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, `Blocked by guardrail "hook-closed": the check is unavailable.`, errMessage(t, b))
	// The moderation guardrail calls the mock provider, which flags "flagme".
	resp, b = r.post(t, ko, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"please flagme"}],"max_tokens":2}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, `Blocked by guardrail "mod": flagged by moderation (violence).`, errMessage(t, b))
}

// A guardrail refuses before the customer, the run and the tags are
// resolved; its $0 row names them all the same, as a settled row would, so
// that spend by customer, run or tag counts the refusals.
func TestGatewayGuardrailRefusedRowNamesItsCustomer(t *testing.T) {
	r := start(t, false)
	put(t, r.st, "shop", &store.Customer{ID: "shop"})
	put(t, r.st, "no-words", &store.Guardrail{ID: "no-words", Kind: "words", Action: "block", On: []string{"pre"}, Words: []string{"falcon"}})
	sec := secret.New("tg-")
	put(t, r.st, "agent", &store.Key{
		ID: "agent", Prefix: secret.Display(sec), Hashes: []store.KeyHash{{Hash: secret.Hash(sec)}},
		Tags:   map[string]string{"env": "prod"},
		Limits: kernel.Limits{Run: &kernel.RunPolicy{Budget: kernel.Dollar, TTL: time.Hour}},
	})
	attach(t, r.st, store.AttachKey, "agent", "no-words")
	r.warm(t, sec, `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)

	resp, b := r.postWith(t, sec, `{"model":"demo","messages":[{"role":"user","content":"project falcon"}],"max_tokens":4}`,
		map[string]string{"x-tollgate-customer": "shop", "x-tollgate-run-id": "loop-7", "x-tollgate-tags": "feature=search"})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	refused := entriesWith(t, r.st, kernel.StatusRefused)
	require.Len(t, refused, 1)
	e := refused[0]
	require.Equal(t, "guardrail:no-words", e.Deployment)
	require.Equal(t, "agent", e.KeyID)
	require.Equal(t, "shop", e.CustomerID)
	require.Equal(t, "key:agent/loop-7", e.RunID)
	require.Equal(t, []string{"env=prod", "feature=search"}, e.Tags)
	require.Zero(t, e.Cost)

	// An unknown customer is not named (as for a settled row); the body's
	// user names a known one.
	resp, b = r.postWith(t, sec, `{"model":"demo","user":"shop","messages":[{"role":"user","content":"falcon again"}],"max_tokens":4}`, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	resp, b = r.postWith(t, sec, `{"model":"demo","messages":[{"role":"user","content":"falcon once more"}],"max_tokens":4}`,
		map[string]string{"x-tollgate-customer": "nobody"})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	customers := map[string]int{}
	for _, e := range entriesWith(t, r.st, kernel.StatusRefused) {
		customers[e.CustomerID]++
	}
	require.Equal(t, map[string]int{"shop": 2, "": 1}, customers)
}
