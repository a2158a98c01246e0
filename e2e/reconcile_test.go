package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// catalog makes, for each name, a provider with its own credential (so that
// mockllm bills each separately), a deployment, a priced model and a key that
// may use only that model. It returns the key secrets and ids by name.
func (s *system) catalog(names ...string) (secrets, ids map[string]string) {
	s.t.Helper()
	secrets, ids = map[string]string{}, map[string]string{}
	for _, n := range names {
		env := []string{"CRED=sk-" + n}
		s.cli(nil, env, "provider", "create", "p-"+n, "--type", "openai", "--base-url", s.mockURL+"/v1", "--credential-env", "CRED")
		s.cli(nil, nil, "deployment", "create", "d-"+n, "--provider", "p-"+n, "--model", "mock-gpt")
		s.cli(nil, nil, "model", "create", "m-"+n, "--deployments", "d-"+n)
		s.cli(nil, nil, "price", "set", "m-"+n, "--input", "1", "--output", "2")
		ids[n], secrets[n] = s.createKey("--alias", "k-"+n, "--models", "m-"+n)
	}
	for _, sec := range secrets {
		s.waitKey(sec)
	}
	// The model routes reach the data plane with the same snapshot as the keys.
	return secrets, ids
}

func chatBody(model string, stream, usage bool, words int) string {
	b := fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"reconcile these words please"}]`, model, words)
	if stream {
		b += `,"stream":true`
		if usage {
			b += `,"stream_options":{"include_usage":true}`
		}
	}
	return b + "}"
}

// upstreamCut streams a request whose provider drops the connection after four
// events: the client sees the stream start, then reset (as with Envoy).
func (s *system) upstreamCut(key, body string) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("x-mock-disconnect-after", "4")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err, "the cut reaches the client as an error event, the stream ends cleanly: %s", b)
	require.Contains(s.t, string(b), `"code":"upstream_reset"`, "the cut reaches the client")
	require.NotContains(s.t, string(b), "[DONE]")
}

// abortAfterFirstContent streams a request and closes the connection as soon as
// the first content delta arrives.
func (s *system) abortAfterFirstContent(key, body string) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("x-mock-chunk-delay", "100ms")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"content":"`) && !strings.Contains(sc.Text(), `"content":""`) {
			cancel()
			return
		}
	}
}

func TestLedgerReconcilesWithTheProviderBill(t *testing.T) {
	s := startSystem(t)
	keys, ids := s.catalog("done", "cut", "fail")

	// Completed requests: JSON and streams, with and without usage asked.
	const each = 6
	for i := range each {
		for _, stream := range []bool{false, true} {
			code, _, b := s.post(keys["done"], "/v1/chat/completions", chatBody("m-done", stream, i%2 == 0, 3+i))
			require.Equal(t, http.StatusOK, code, string(b))
		}
	}
	// Aborted: the provider drops the stream, or the client goes away.
	for range 3 {
		s.upstreamCut(keys["cut"], chatBody("m-cut", true, true, 12))
		s.abortAfterFirstContent(keys["cut"], chatBody("m-cut", true, false, 12))
	}
	// Upstream errors pass through in OpenAI's shape.
	for _, status := range []string{"500", "429", "503"} {
		code, h, b := s.post(keys["fail"], "/v1/chat/completions", chatBody("m-fail", false, false, 5), "x-mock-status", status)
		require.Equal(t, status, fmt.Sprint(code), string(b))
		require.Contains(t, string(b), `"error"`)
		require.Empty(t, h.Get("x-mock-provider-key"))
		require.NotContains(t, string(b), "sk-fail", "provider keys never reach clients")
	}

	bill := s.mockStats()
	var rows map[string][]ledgerRow
	require.Eventually(t, func() bool { // aborted streams settle when the processor sees the end
		rows = map[string][]ledgerRow{"done": s.ledger(ids["done"]), "cut": s.ledger(ids["cut"]), "fail": s.ledger(ids["fail"])}
		return len(rows["done"]) == 2*each && len(rows["cut"]) == 6 && len(rows["fail"]) == 3
	}, 10*time.Second, 100*time.Millisecond, "every request is in the ledger")

	// Completed: the ledger's tokens equal what the provider served, exactly.
	var in, out int64
	for _, r := range rows["done"] {
		require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status)
		require.Positive(t, r.Cost.NanoUSD)
		in += r.Usage.Input + r.Usage.CachedInput
		out += r.Usage.Output + r.Usage.Reasoning
	}
	require.Equal(t, bill["sk-done"].InputTokens+bill["sk-done"].CachedTokens, in)
	require.Equal(t, bill["sk-done"].OutputTokens, out)
	require.Equal(t, int64(2*each), bill["sk-done"].Requests)

	// Aborted: never $0; input at least what the provider counted (estimated
	// from the prompt when no usage arrived); output estimated from the text
	// that went through.
	in, out = 0, 0
	for _, r := range rows["cut"] {
		require.Equal(t, "REQUEST_STATUS_ABORTED", r.Status, "%+v", r)
		require.Positive(t, r.Cost.NanoUSD, "an aborted request is never free: %+v", r)
		in += r.Usage.Input + r.Usage.CachedInput
		out += r.Usage.Output + r.Usage.Reasoning
	}
	require.GreaterOrEqual(t, in, bill["sk-cut"].InputTokens)
	require.Positive(t, out)
	t.Logf("aborted: ledger output %d tokens (estimated) vs %d served", out, bill["sk-cut"].OutputTokens)

	// Failed upstream: nothing was served, nothing is charged.
	for _, r := range rows["fail"] {
		require.Equal(t, "REQUEST_STATUS_FAILED", r.Status)
		require.Zero(t, r.Cost.NanoUSD)
	}
	require.Zero(t, bill["sk-fail"].InputTokens+bill["sk-fail"].OutputTokens)
	require.Equal(t, int64(3), bill["sk-fail"].Errors)
}

// TestRush holds 5,000 connections open at once through the built-in data
// plane while the provider takes a second to answer each.
func TestRush(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the rush opens 5,000 connections")
	}
	s := startSystem(t, "--latency", "1s")
	const n = 5000
	body := chatBody("demo", false, false, 2)
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	var failures atomic.Int64
	var firstErr atomic.Value
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+s.demoKey)
			resp, err := client.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			lat[i] = time.Since(t0)
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}()
	}
	wg.Wait()
	total := time.Since(start)
	slices.Sort(lat)
	p50, p99 := lat[n/2], lat[n*99/100]
	_, peak := rss(t, s.tollgate.Process.Pid)
	t.Logf("rush: %d requests at once, provider latency 1s: total %v, p50 %v, p99 %v, max %v, failures %d, tollgate peak RSS %d MiB",
		n, total.Round(time.Millisecond), p50.Round(time.Millisecond), p99.Round(time.Millisecond), lat[n-1].Round(time.Millisecond), failures.Load(), peak/1024)
	require.Zero(t, failures.Load(), "first error: %v", firstErr.Load())
	// The target (p99 < 1.5 s on an idle machine) is measured and reported in
	// bench/README.md; the bound here only catches a data plane that serialises
	// requests, on a CI machine running other test packages at the same time.
	require.Less(t, p99, 30*time.Second)
	// 240–273 MiB while every connection kept a read buffer, every waiting
	// request the processor's 16 KiB stack and every watched one a goroutine;
	// 163–192 MiB without (bench/README.md, "The rush, trimmed"); 157 MiB
	// once a waiting request kept a 4 KiB stack and less garbage ("The rush,
	// third session"). The bound is the issue's goal.
	require.Less(t, peak/1024, int64(200), "tollgate's peak RSS in MiB")
}

// TestLedgerReconcilesResponses: Responses API requests, served natively,
// translated to chat completions and translated to Anthropic Messages, JSON
// and streams, are in the ledger with exactly the tokens mockllm billed.
func TestLedgerReconcilesResponses(t *testing.T) {
	s := startSystem(t)
	models := s.responsesModels("native", "chat", "claude")
	const each = 4
	ids := map[string]string{}
	for kind, model := range models {
		id, key := s.createKey("--alias", "r-"+kind, "--models", model)
		s.waitKey(key)
		ids[kind] = id
		for i := range each {
			for _, stream := range []bool{false, true} {
				body := fmt.Sprintf(`{"model":%q,"input":"reconcile these words please","max_output_tokens":%d,"stream":%t,"store":false}`, model, 3+i, stream)
				code, _, b := s.post(key, "/v1/responses", body)
				require.Equal(t, http.StatusOK, code, string(b))
				if stream {
					require.Contains(t, string(b), "event: response.incomplete", "max_output_tokens below the mock's 16 words")
				}
			}
		}
	}
	bill := s.mockStats()
	for kind := range models {
		var rows []ledgerRow
		require.Eventually(t, func() bool {
			rows = s.ledger(ids[kind])
			return len(rows) == 2*each
		}, 10*time.Second, 100*time.Millisecond, "%s: every request is in the ledger", kind)
		var in, out int64
		for _, r := range rows {
			require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status, "%s: %+v", kind, r)
			require.Positive(t, r.Cost.NanoUSD)
			in += r.Usage.Input + r.Usage.CachedInput + r.Usage.CacheWrite
			out += r.Usage.Output + r.Usage.Reasoning
		}
		b := bill["sk-"+kind]
		require.Equal(t, b.InputTokens+b.CachedTokens, in, kind)
		require.Equal(t, b.OutputTokens, out, kind)
		require.Equal(t, int64(2*each), b.Requests, kind)
	}

	// Aborted: the provider drops the stream after four events; the client
	// sees the cut; the request is charged the prompt and the text delivered,
	// never $0.
	for kind, model := range models {
		id, key := s.createKey("--alias", "cut-"+kind, "--models", model)
		s.waitKey(key)
		req, err := http.NewRequest(http.MethodPost, s.url+"/v1/responses", strings.NewReader(
			fmt.Sprintf(`{"model":%q,"input":"reconcile these words please","stream":true,"store":false}`, model)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("x-mock-disconnect-after", "4")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotContains(t, string(b), "response.completed", kind)
		require.NoError(t, err, "the stream ends cleanly: %s", b)
		require.Contains(t, string(b), "event: error\n", "the cut reaches the client as an error event (%s)", kind)
		var rows []ledgerRow
		require.Eventually(t, func() bool {
			rows = s.ledger(id)
			return len(rows) == 1
		}, 10*time.Second, 100*time.Millisecond, "%s: the aborted request is in the ledger", kind)
		require.Equal(t, "REQUEST_STATUS_ABORTED", rows[0].Status, "%s: %+v", kind, rows[0])
		require.Positive(t, rows[0].Cost.NanoUSD, "%s: an aborted request is never free", kind)
	}
}
