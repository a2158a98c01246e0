package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPassthroughRawHTTP is #34's pass-through end to end with the binaries
// and the CLI: grants given with `key create --passthrough`, the provider's
// price per call with `provider update --price-per-call`; raw HTTP calls
// through /passthrough/demo-mock/…; the ledger (`spend logs`) equals the
// mock's bill of the provider's credential, a key without a grant gets 403
// and an over-budget key is refused before the provider is called.
func TestPassthroughRawHTTP(t *testing.T) {
	s := startSystem(t)
	s.cli(nil, nil, "price", "set", "mock-gpt", "--input", "3", "--output", "5")
	s.cli(nil, nil, "provider", "update", "demo-mock", "--price-per-call", "0.000007")
	id, key := s.createKey("--passthrough", "demo-mock:/v1/chat/*,demo-mock:/v1/models")
	_, none := s.createKey()
	poorID, poor := s.createKey("--passthrough", "demo-mock:*", "--budget", "0.000001")
	s.waitKey(key)
	s.waitKey(none)
	s.waitKey(poor)
	before := s.mockStats()["sk-demo-upstream"]

	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"hello through"}],"max_tokens":6}`
	require.Eventually(t, func() bool { // the price reaches the snapshot
		code, _, _ := s.post(key, "/passthrough/demo-mock/v1/chat/completions", chat)
		return code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
	code, _, b := s.post(key, "/passthrough/demo-mock/v1/chat/completions",
		`{"model":"mock-gpt","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"stream it"}],"max_tokens":8}`)
	require.Equal(t, http.StatusOK, code, string(b))
	require.Contains(t, string(b), "[DONE]")
	code, b = s.get("/passthrough/demo-mock/v1/models", key)
	require.Equal(t, http.StatusOK, code, string(b))

	code, _, b = s.post(none, "/passthrough/demo-mock/v1/chat/completions", chat)
	require.Equal(t, http.StatusForbidden, code, string(b))
	require.Contains(t, string(b), `"code":"passthrough_not_allowed"`)
	after := s.mockStats()["sk-demo-upstream"]
	code, _, b = s.post(poor, "/passthrough/demo-mock/v1/chat/completions", chat)
	require.Equal(t, http.StatusBadRequest, code, string(b))
	require.Contains(t, string(b), `"code":"budget_exceeded"`)
	require.Equal(t, after.Requests, s.mockStats()["sk-demo-upstream"].Requests, "refused before the provider")
	require.Empty(t, s.ledger(poorID))

	var in, out, cost, perCall int64
	calls := 0
	require.Eventually(t, func() bool { return len(s.ledger(id)) >= 3 }, 10*time.Second, 100*time.Millisecond)
	for _, r := range s.ledger(id) {
		if strings.HasPrefix(r.Model, "passthrough.") {
			perCall += r.Cost.NanoUSD
			continue
		}
		if r.HTTPStatus != http.StatusOK {
			continue
		}
		calls++
		in += r.Usage.Input + r.Usage.CachedInput
		out += r.Usage.Output + r.Usage.Reasoning
		cost += r.Cost.NanoUSD
	}
	bill := s.mockStats()["sk-demo-upstream"]
	require.Equal(t, bill.Requests-before.Requests, int64(calls), "every chat call reached the provider once")
	require.Equal(t, bill.InputTokens-before.InputTokens, in, "ledger input == the mock's bill")
	require.Equal(t, bill.OutputTokens-before.OutputTokens, out, "ledger output == the mock's bill")
	require.Equal(t, in*3_000+out*5_000, cost, "at mock-gpt's price ($3/$5 per million)")
	require.Equal(t, int64(7_000), perCall, "GET /v1/models: one call at the provider's price")
}
