package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// A request whose head breaks the listener's limits (max_headers_count,
// max_request_headers_kb) gets a 431 from the built-in data plane before
// the processor sees it: nothing is admitted (the key's rate limit does not
// move) and nothing is charged (no ledger entry).
func TestHeaderLimitsAnswer431BeforeAdmission(t *testing.T) {
	r := start(t, false)
	key := r.key(t, "k-limits", kernel.Limits{RPM: 2})
	body := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`
	// Wait for the configuration with another key, so that only one request
	// of this key is admitted before the refused heads.
	warm := r.key(t, "k-limits-warm", kernel.Limits{})
	eventually(t, func() bool {
		resp, _ := r.post(t, warm, "/v1/chat/completions", body)
		return resp.StatusCode == http.StatusOK
	})
	first, _ := r.post(t, key, "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.NoError(t, r.st.Flush(context.Background()))
	entries, err := r.st.Entries(context.Background(), store.LedgerFilter{Limit: 1000})
	require.NoError(t, err)
	before := len(entries)
	upstream := r.mock.Stats().Total.Requests

	raw := func(extra string) int {
		t.Helper()
		c, err := net.Dial("tcp", r.g.ListenAddr)
		require.NoError(t, err)
		defer func() { _ = c.Close() }()
		require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
		_, err = io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+key+
			"\r\nContent-Type: application/json\r\n"+extra+"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for range 3 {
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, raw(strings.Repeat("X-Many: 1\r\n", 101)))
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, raw("X-Big: "+strings.Repeat("b", 61<<10)+"\r\n"))
	}
	// RPM 2: one request was admitted; six refused heads later a second
	// still is, so none of them counted.
	resp, _ := r.post(t, key, "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, upstream+1, r.mock.Stats().Total.Requests, "only the admitted request went upstream")

	require.NoError(t, r.st.Flush(context.Background()))
	entries, err = r.st.Entries(context.Background(), store.LedgerFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, entries, before+1, "one ledger entry: the admitted request's; none for the refused heads")
	require.Equal(t, kernel.StatusCompleted, entries[len(entries)-1].Status)
}
