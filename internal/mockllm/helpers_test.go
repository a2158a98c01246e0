package mockllm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a mock served on a loopback port.
type harness struct {
	t      *testing.T
	srv    *Server
	url    string
	client *http.Client
}

func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	srv := New(cfg)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	h := &harness{t: t, srv: srv, url: "http://" + lis.Addr().String(), client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		cancel()
		require.NoError(t, <-done)
	})
	return h
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	return cfg
}

// post sends body (JSON-encoded unless a string) with headers (name, value…).
func (h *harness) post(path string, body any, headers ...string) *http.Response {
	h.t.Helper()
	var r io.Reader
	if s, ok := body.(string); ok {
		r = strings.NewReader(s)
	} else {
		b, err := json.Marshal(body)
		require.NoError(h.t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(http.MethodPost, h.url+path, r)
	require.NoError(h.t, err)
	req.Header.Set("content-type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func (h *harness) get(path string) *http.Response {
	h.t.Helper()
	resp, err := h.client.Get(h.url + path)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// decodeJSON reads a JSON reply into a generic map after checking the status.
func decodeJSON(t *testing.T, resp *http.Response, status int) map[string]any {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode, string(b))
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	return m
}

// event is one SSE event.
type event struct {
	name string
	data string
}

// readEvents reads SSE events until EOF; err is the read error that ended it
// (nil on a clean end).
func readEvents(r io.Reader) ([]event, error) {
	var evs []event
	var cur event
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" || cur.name != "" {
				evs = append(evs, cur)
			}
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return evs, sc.Err()
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m), s)
	return m
}

// words returns n words cycling over the words of s (the documented reply).
func words(s string, n int) string {
	src := strings.Fields(s)
	out := make([]string, n)
	for i := range out {
		out[i] = src[i%len(src)]
	}
	return strings.Join(out, " ")
}

func chatBody(text string, extra map[string]any) map[string]any {
	b := map[string]any{"model": "mock-gpt", "messages": []any{map[string]any{"role": "user", "content": text}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}
