package mockllm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// upload posts a batch input file as multipart/form-data.
func (h *harness) upload(key, content string) map[string]any {
	h.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(h.t, mw.WriteField("purpose", "batch"))
	fw, err := mw.CreateFormFile("file", "in.jsonl")
	require.NoError(h.t, err)
	_, err = fw.Write([]byte(content))
	require.NoError(h.t, err)
	require.NoError(h.t, mw.Close())
	req, err := http.NewRequest(http.MethodPost, h.url+"/v1/files", &body)
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	require.Equal(h.t, http.StatusOK, resp.StatusCode)
	var f map[string]any
	require.NoError(h.t, json.NewDecoder(resp.Body).Decode(&f))
	return f
}

func (h *harness) call(method, path, key string, body any) (int, []byte) {
	h.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(h.t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.url+path, r)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, b
}

func jsonLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		out = append(out, m)
	}
	return out
}

// clockAt makes the mock's clock settable.
func clockAt(srv *Server, t0 time.Time) *atomic.Int64 {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	srv.now = func() time.Time { return time.Unix(0, now.Load()) }
	return &now
}

func TestOpenAIBatchRunsEachLineAsAlone(t *testing.T) {
	h := start(t, testConfig())
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	now := clockAt(h.srv, t0)
	lines := []string{}
	for _, id := range []string{"a", "b", "c", "d"} {
		lines = append(lines, `{"custom_id":"`+id+`","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-gpt","max_tokens":3,"messages":[{"role":"user","content":"eight by"}]}}`)
	}
	f := h.upload("sk-owner", strings.Join(lines, "\n"))
	require.Equal(t, "file", f["object"])

	// Another key sees neither the file nor the batch.
	code, _ := h.call(http.MethodGet, "/v1/files/"+f["id"].(string), "sk-other", nil)
	require.Equal(t, http.StatusNotFound, code)

	req, err := http.NewRequest(http.MethodPost, h.url+"/v1/batches", strings.NewReader(`{"input_file_id":"`+f["id"].(string)+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-owner")
	req.Header.Set("x-mock-batch-delay", "40s")
	resp, err := h.client.Do(req)
	require.NoError(t, err)
	var b map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "in_progress", b["status"])
	id := b["id"].(string)
	code, _ = h.call(http.MethodGet, "/v1/batches/"+id, "sk-other", nil)
	require.Equal(t, http.StatusNotFound, code)

	// At 20 s two of four lines ran; cancelling stops the other two.
	now.Store(t0.Add(20 * time.Second).UnixNano())
	code, raw := h.call(http.MethodPost, "/v1/batches/"+id+"/cancel", "sk-owner", nil)
	require.Equal(t, http.StatusOK, code, string(raw))
	require.NoError(t, json.Unmarshal(raw, &b))
	require.Equal(t, "cancelled", b["status"])
	require.Equal(t, map[string]any{"total": 4.0, "completed": 2.0, "failed": 0.0}, b["request_counts"])
	code, raw = h.call(http.MethodGet, "/v1/files/"+b["output_file_id"].(string)+"/content", "sk-owner", nil)
	require.Equal(t, http.StatusOK, code)
	out := jsonLines(t, raw)
	require.Len(t, out, 2)
	require.Equal(t, "a", out[0]["custom_id"])
	resp0 := out[0]["response"].(map[string]any)
	require.InDelta(t, 200, resp0["status_code"], 0)
	usage := resp0["body"].(map[string]any)["usage"].(map[string]any)
	require.InDelta(t, 2, usage["prompt_tokens"], 0)
	require.InDelta(t, 3, usage["completion_tokens"], 0)

	// Reported as batch usage when grouped by batch.
	var page openAIPage
	require.Equal(t, http.StatusOK, h.report("/v1/organization/usage/completions?group_by=batch&start_time="+strconv.FormatInt(t0.Truncate(24*time.Hour).Unix(), 10)+"&end_time="+strconv.FormatInt(t0.Add(time.Hour).Unix(), 10), &page, "Authorization", "Bearer sk-admin-mock"))
	require.Len(t, page.Data, 1)
	isBatch, _ := page.Data[0].Results[0].(map[string]any)["batch"].(bool)
	require.True(t, isBatch)

	// Billed at half price, as batch usage.
	require.Equal(t, int64(2), h.srv.Stats().Keys["sk-owner"].Requests)
	lns := h.srv.linesOf(lineCompletions)
	require.Len(t, lns, 1)
	require.True(t, lns[0].batch)
	in, _, _, o := lns[0].cost(h.srv.cfg.Prices["mock-gpt"])
	require.Equal(t, int64(2000), in, "4 tokens at $0.50/M, in nano-USD")
	require.Equal(t, int64(6000), o, "6 tokens at $1/M")
}

func TestAnthropicMessageBatch(t *testing.T) {
	h := start(t, testConfig())
	code, raw := h.call(http.MethodPost, "/v1/messages/batches", "sk-ant", map[string]any{"requests": []map[string]any{
		{"custom_id": "one", "params": map[string]any{"model": "mock-claude", "max_tokens": 5, "messages": []map[string]string{{"role": "user", "content": "abcd"}}}},
		{"custom_id": "two", "params": map[string]any{"model": "mock-claude", "messages": []map[string]string{{"role": "user", "content": "no max_tokens"}}}},
	}})
	require.Equal(t, http.StatusOK, code, string(raw))
	var b map[string]any
	require.NoError(t, json.Unmarshal(raw, &b))
	require.Equal(t, "message_batch", b["type"])
	code, raw = h.call(http.MethodGet, "/v1/messages/batches/"+b["id"].(string), "sk-ant", nil)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(raw, &b))
	require.Equal(t, "ended", b["processing_status"], "no delay: ended at once")
	require.Equal(t, map[string]any{"processing": 0.0, "succeeded": 1.0, "errored": 1.0, "canceled": 0.0, "expired": 0.0}, b["request_counts"])
	require.True(t, strings.HasSuffix(b["results_url"].(string), "/v1/messages/batches/"+b["id"].(string)+"/results"))

	code, raw = h.call(http.MethodGet, "/v1/messages/batches/"+b["id"].(string)+"/results", "sk-ant", nil)
	require.Equal(t, http.StatusOK, code)
	res := jsonLines(t, raw)
	require.Len(t, res, 2)
	one := res[0]["result"].(map[string]any)
	require.Equal(t, "succeeded", one["type"])
	require.InDelta(t, 5, one["message"].(map[string]any)["usage"].(map[string]any)["output_tokens"], 0)
	two := res[1]["result"].(map[string]any)
	require.Equal(t, "errored", two["type"])
	require.Equal(t, "invalid_request_error", two["error"].(map[string]any)["error"].(map[string]any)["type"])

	code, _ = h.call(http.MethodDelete, "/v1/messages/batches/"+b["id"].(string), "sk-ant", nil)
	require.Equal(t, http.StatusOK, code)
}
