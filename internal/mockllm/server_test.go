package mockllm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestInjectedStatus(t *testing.T) {
	h := start(t, testConfig())
	resp := h.post("/v1/chat/completions", chatBody("x", nil), "Authorization", "Bearer k", "x-mock-status", "429")
	require.Equal(t, "1", resp.Header.Get("retry-after"))
	m := decodeJSON(t, resp, http.StatusTooManyRequests)
	e := m["error"].(map[string]any)
	require.Equal(t, "requests", e["type"])
	require.Equal(t, "rate_limit_exceeded", e["code"])
	require.Contains(t, e, "param")
	require.NotEmpty(t, e["message"])

	m = decodeJSON(t, h.post("/v1/chat/completions", chatBody("x", map[string]any{"stream": true}), "Authorization", "Bearer k", "x-mock-status", "500"), http.StatusInternalServerError)
	require.Equal(t, "server_error", m["error"].(map[string]any)["type"])

	m = decodeJSON(t, h.post("/v1/messages", messagesBody("x", nil), "x-api-key", "k", "x-mock-status", "529"), 529)
	require.Equal(t, map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "injected by x-mock-status"}}, m)
	m = decodeJSON(t, h.post("/v1/messages", messagesBody("x", nil), "x-api-key", "k", "x-mock-status", "429"), http.StatusTooManyRequests)
	require.Equal(t, "rate_limit_error", m["error"].(map[string]any)["type"])

	require.Equal(t, Usage{Errors: 4}, h.srv.Stats().Keys["k"])

	// A bad override value is the caller's bug: 400.
	for _, hdr := range []string{"x-mock-status", "x-mock-latency", "x-mock-output-tokens", "x-mock-disconnect-after", "x-mock-chunk-delay", "x-mock-cached-tokens"} {
		decodeJSON(t, h.post("/v1/chat/completions", chatBody("x", nil), hdr, "bogus"), http.StatusBadRequest)
	}
}

func TestLatencyAndChunkDelay(t *testing.T) {
	h := start(t, testConfig())
	t0 := time.Now()
	resp := h.post("/v1/chat/completions", chatBody("x", map[string]any{"stream": true}), "x-mock-latency", "150ms", "x-mock-chunk-delay", "30ms", "x-mock-output-tokens", "4")
	require.GreaterOrEqual(t, time.Since(t0), 150*time.Millisecond, "headers after the latency")
	t1 := time.Now()
	evs, err := readEvents(resp.Body)
	require.NoError(t, err)
	require.Len(t, evs, 1+4+1+1)
	require.GreaterOrEqual(t, time.Since(t1), 3*30*time.Millisecond, "three delays between four chunks")

	cfg := testConfig()
	cfg.Latency = 100 * time.Millisecond
	h2 := start(t, cfg)
	t0 = time.Now()
	decodeJSON(t, h2.post("/v1/embeddings", map[string]any{"model": "e", "input": "x"}), http.StatusOK)
	require.GreaterOrEqual(t, time.Since(t0), 100*time.Millisecond)
}

func TestOutputTokensOverride(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1/chat/completions", chatBody("w", nil), "x-mock-output-tokens", "3", "x-mock-cached-tokens", "50"), http.StatusOK)
	require.Equal(t, "w w w", m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"])
	usage := m["usage"].(map[string]any)
	require.InDelta(t, 3, usage["completion_tokens"], 0)
	require.InDelta(t, 1, usage["prompt_tokens_details"].(map[string]any)["cached_tokens"], 0, "capped at the prompt tokens")
	// max_tokens still caps the override.
	m = decodeJSON(t, h.post("/v1/chat/completions", chatBody("w", map[string]any{"max_tokens": 2}), "x-mock-output-tokens", "30"), http.StatusOK)
	require.InDelta(t, 2, m["usage"].(map[string]any)["completion_tokens"], 0)
	require.Equal(t, Usage{Requests: 2, InputTokens: 1, CachedTokens: 1, OutputTokens: 5}, h.srv.Stats().Keys[""])
}

func TestDisconnectAfter(t *testing.T) {
	h := start(t, testConfig())
	// role chunk + 2 content chunks, then the connection closes.
	resp := h.post("/v1/chat/completions", chatBody("a b c", map[string]any{"stream": true}), "Authorization", "Bearer d", "x-mock-disconnect-after", "3")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	evs, err := readEvents(resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Len(t, evs, 3)
	require.Equal(t, Usage{Requests: 1, Aborted: 1, InputTokens: 2, OutputTokens: 2}, h.srv.Stats().Keys["d"])

	// Anthropic: message_start, content_block_start, ping, 1 delta.
	resp = h.post("/v1/messages", messagesBody("a b c", map[string]any{"stream": true}), "x-api-key", "d2", "x-mock-disconnect-after", "4")
	evs, err = readEvents(resp.Body)
	require.Error(t, err)
	require.Len(t, evs, 4)
	require.Equal(t, Usage{Requests: 1, Aborted: 1, InputTokens: 2, OutputTokens: 1}, h.srv.Stats().Keys["d2"])

	// Non-streaming: the connection closes before any byte.
	req, err := http.NewRequest(http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	require.NoError(t, err)
	req.Header.Set("x-mock-disconnect-after", "0")
	req.Header.Set("Authorization", "Bearer d3")
	_, err = h.client.Do(req) //nolint:bodyclose // fails
	require.Error(t, err)
	require.Equal(t, Usage{Aborted: 1}, h.srv.Stats().Keys["d3"])
}

func TestClientAbortCountsDelivered(t *testing.T) {
	h := start(t, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := json.Marshal(chatBody("a", map[string]any{"stream": true}))
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(string(b)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer ab")
	req.Header.Set("x-mock-chunk-delay", "40ms")
	resp, err := h.client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	rd := bufio.NewReader(resp.Body)
	for range 4 { // role chunk, first content chunk (each "data: …" + blank line)
		_, err := rd.ReadString('\n')
		require.NoError(t, err)
	}
	cancel()
	require.Eventually(t, func() bool { return h.srv.Stats().Keys["ab"].Aborted == 1 }, 5*time.Second, 10*time.Millisecond)
	u := h.srv.Stats().Keys["ab"]
	require.Equal(t, int64(1), u.Requests)
	require.Equal(t, int64(1), u.InputTokens)
	require.GreaterOrEqual(t, u.OutputTokens, int64(1))
	require.Less(t, u.OutputTokens, int64(16), "only what was delivered")
}

func TestStatsEndpoint(t *testing.T) {
	h := start(t, testConfig())
	decodeJSON(t, h.post("/v1/chat/completions", chatBody("abcd", nil), "Authorization", "Bearer s1"), http.StatusOK)
	decodeJSON(t, h.post("/v1/messages", messagesBody("abcdefgh", nil), "x-api-key", "s2"), http.StatusOK)
	decodeJSON(t, h.post("/v1/embeddings", map[string]any{"model": "e", "input": "abcd"}, "api-key", "s2"), http.StatusOK)
	var st Stats
	resp := h.get("/stats")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.Equal(t, Stats{
		Keys: map[string]Usage{
			"s1": {Requests: 1, InputTokens: 1, OutputTokens: 16},
			"s2": {Requests: 2, InputTokens: 3, OutputTokens: 16},
		},
		Total: Usage{Requests: 3, InputTokens: 4, OutputTokens: 32},
	}, st)
	resp = h.post("/stats/reset", "")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, Stats{Keys: map[string]Usage{}}, h.srv.Stats())
}

func TestH2C(t *testing.T) {
	h := start(t, testConfig())
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Post(h.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, 2, resp.ProtoMajor)
	evs, err := readEvents(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "[DONE]", evs[len(evs)-1].data)

	// Disconnect over HTTP/2 resets the stream.
	req, err := http.NewRequest(http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("x-mock-disconnect-after", "2")
	resp2, err := c.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp2.Body.Close() }()
	evs, err = readEvents(resp2.Body)
	require.Error(t, err)
	require.Len(t, evs, 2)
}

func TestManyConcurrentConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("opens thousands of connections")
	}
	const n = 5000
	cfg := testConfig()
	cfg.Latency = 500 * time.Millisecond
	h := start(t, cfg)
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"c%d"}]}`, i)
			resp, err := c.Post(h.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// All held open at once: far less than n × latency (2,500 s), even on a
	// loaded machine.
	require.Less(t, time.Since(t0), 60*time.Second)
	require.Equal(t, int64(n), h.srv.Stats().Total.Requests)
	require.Equal(t, int64(2*n), h.srv.Stats().Total.OutputTokens)
}

func TestServeDrainsOnCancel(t *testing.T) {
	srv := New(testConfig())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	type result struct {
		events int
		err    error
	}
	got := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+lis.Addr().String()+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
		req.Header.Set("x-mock-latency", "200ms")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			got <- result{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		evs, err := readEvents(resp.Body)
		got <- result{len(evs), err}
	}()
	require.Eventually(t, func() bool { return srv.inflight() > 0 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, 1+16+1+1, r.events, "the in-flight stream finished")
	require.NoError(t, <-done)
}
