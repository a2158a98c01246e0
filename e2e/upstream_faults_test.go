package e2e

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
)

// upstreamSeen is one request of TestFaultUpstream as its client saw it.
type upstreamSeen struct {
	stream     bool
	code       int
	retryAfter string
	body       string
	readErr    error // the body broke off (a reset connection)
}

// TestFaultUpstream: the provider misbehaves — so slow that the client gives
// up, a stream reset after a few events (a JSON reply reset before any byte),
// 500, 429 and 401 — under three replicas on PostgreSQL and Redis. For each:
// what the client sees (an error in its own format, a cut stream ending with
// an error event; the provider's 401 a 502 told apart from the client's key
// being bad), the ledger rows (a request the
// provider refused costs $0; a request cut midway is charged what went
// through, estimated, at least what the provider billed), and the counters
// back to the ledger (no reservation left, nothing in flight). The figures
// are printed.
func TestFaultUpstream(t *testing.T) {
	c := startCluster(t, "closed")
	opt, err := goredis.ParseURL(c.redis.URL)
	require.NoError(t, err)
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	counters := accounting.NewRedisCounters(rdb, nil)
	t.Cleanup(counters.Close)

	const perKind = 4 // two JSON, two streams
	for i, tc := range []struct {
		name          string
		headers       []string      // sent by the client, honoured by the mock
		clientTimeout time.Duration // the client gives up
		free          bool          // the provider billed nothing and said so: $0
		aborted       int64         // ledger rows aborted (the others failed)
		check         func(t *testing.T, s upstreamSeen)
	}{
		{
			// The deployment's --timeout is not applied by the data planes yet
			// (docs/operations.md): a slow provider is bounded by the client.
			name: "slow, the client gives up", headers: []string{"x-mock-latency", "3s"}, clientTimeout: 500 * time.Millisecond,
			aborted: perKind,
			check: func(t *testing.T, s upstreamSeen) {
				require.Zero(t, s.code, "the client timed out: %s", s.body)
			},
		},
		{
			name: "reset", headers: []string{"x-mock-disconnect-after", "3"}, aborted: perKind / 2,
			check: func(t *testing.T, s upstreamSeen) {
				if !s.stream { // JSON: the connection closes before any byte
					require.Equal(t, http.StatusServiceUnavailable, s.code, s.body)
					requireOpenAIError(t, s.body)
					return
				}
				require.Equal(t, http.StatusOK, s.code, "the stream had started")
				require.Contains(t, s.body, "data: {", "the first events went through")
				require.NotContains(t, s.body, "[DONE]", "a cut stream does not end as a complete one")
				require.NoError(t, s.readErr, "the stream ends cleanly, with an error event")
				require.True(t, strings.HasSuffix(s.body, `"code":"upstream_reset"}}`+"\n\n"),
					"not a silent truncation: the last event is an error in OpenAI's shape: %q", s.body)
			},
		},
		{
			name: "500", headers: []string{"x-mock-status", "500"}, free: true,
			check: func(t *testing.T, s upstreamSeen) {
				require.Equal(t, http.StatusInternalServerError, s.code, s.body)
				requireOpenAIError(t, s.body)
			},
		},
		{
			name: "429", headers: []string{"x-mock-status", "429"}, free: true,
			check: func(t *testing.T, s upstreamSeen) {
				require.Equal(t, http.StatusTooManyRequests, s.code, s.body)
				require.Equal(t, "1", s.retryAfter, "the provider's retry-after is kept")
				requireOpenAIError(t, s.body)
			},
		},
		{
			name: "401", headers: []string{"x-mock-status", "401"}, free: true,
			check: func(t *testing.T, s upstreamSeen) {
				require.Equal(t, http.StatusBadGateway, s.code, "not a 401: the client's key is fine: %s", s.body)
				requireOpenAIError(t, s.body)
				require.Contains(t, s.body, `"code":"upstream_auth_error"`,
					"the provider refusing the gateway's credential is told apart from the client's key being bad")
				require.Contains(t, s.body, "rejected the gateway's credentials", "the message names the deployment")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprint("upstream", i)
			env := []string{"CRED=sk-" + name}
			c.sys.cli(nil, env, "provider", "create", "p-"+name, "--type", "openai", "--base-url", c.sys.mockURL+"/v1", "--credential-env", "CRED")
			c.sys.cli(nil, nil, "deployment", "create", "d-"+name, "--provider", "p-"+name, "--model", "mock-gpt")
			c.sys.cli(nil, nil, "model", "create", "m-"+name, "--deployments", "d-"+name)
			c.sys.cli(nil, nil, "price", "set", "m-"+name, "--input", "1", "--output", "2")
			keyID, secret := c.sys.createKey("--alias", "k-"+name, "--models", "m-"+name, "--budget", "10")
			c.waitKey(secret)

			for j := range perKind {
				s := upstreamRequest(t, c.replicas[j%len(c.replicas)].url, secret, "m-"+name, j%2 == 1, tc.clientTimeout, tc.headers)
				t.Logf("%s: stream=%v → %d retry-after=%q read-err=%v body=%.300q", tc.name, s.stream, s.code, s.retryAfter, s.readErr, s.body)
				tc.check(t, s)
				require.NotContains(t, s.body, "sk-"+name, "the provider's key never reaches the client")
			}

			l, b := c.settleDown(name, keyID, func(l ledgerSum, _ bill) bool { return l.Rows == perKind })
			ref := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: keyID}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			spent, reserved, err := counters.Usage(ctx, ref, kernel.Period{Kind: kernel.PeriodTotal}, time.Now())
			require.NoError(t, err)
			inFlight, err := counters.InFlight(ctx, ref)
			require.NoError(t, err)
			t.Logf("%s: ledger %+v; mock bill %+v; counters spent %d n$, reserved %d n$, in flight %d",
				tc.name, l, b, spent, reserved, inFlight)
			require.Equal(t, int64(perKind), l.Rows, "one ledger row per request")
			require.Equal(t, tc.aborted, l.Aborted, "aborted rows")
			require.Equal(t, perKind-tc.aborted, l.Failed, "failed rows")
			require.GreaterOrEqual(t, l.Cost, b.Cost, "the ledger covers the provider's bill")
			if tc.free {
				require.Zero(t, b.Cost)
				require.Zero(t, l.Cost, "a failed request the provider did not bill costs $0")
			}
			require.Zero(t, reserved, "no reservation left")
			require.Zero(t, inFlight, "nothing left in flight")
			require.Equal(t, l.Cost, int64(spent), "the counters hold what the ledger holds")
		})
	}
}

// upstreamRequest sends one chat request (a stream when stream) with the
// mock's fault headers and reads the whole reply.
func upstreamRequest(t *testing.T, url, secret, model string, stream bool, timeout time.Duration, headers []string) upstreamSeen {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(chatBody(model, stream, true, 8)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Timeout: cmp.Or(timeout, 30*time.Second)}
	resp, err := client.Do(req)
	if err != nil {
		return upstreamSeen{stream: stream, readErr: err}
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return upstreamSeen{stream: stream, code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b), readErr: rerr}
}

// requireOpenAIError requires an OpenAI-shaped error body with a message.
func requireOpenAIError(t *testing.T, body string) {
	t.Helper()
	require.Contains(t, body, `"error":{`, body)
	require.Contains(t, body, `"message":"`, body)
}
