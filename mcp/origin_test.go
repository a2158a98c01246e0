package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/mcp"
)

// DNS-rebinding protection: a request whose Host, or Origin when it has one,
// is not an allowed host is refused with 403 before its key is looked at;
// loopback names pass (what the conformance suite's scenario checks).
func TestHostAndOriginChecked(t *testing.T) {
	f := newFixture(t, false)
	h := mcp.New(f.cat, f.acct, f.sealer, mcp.WithAllowedHosts(mcp.DefaultAllowedHosts("127.0.0.1:8080")))
	t.Cleanup(h.Close)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	post := func(host, origin, key string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp/github", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		require.NoError(t, err)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, http.StatusForbidden, post("evil.example.com", "http://evil.example.com", keyAll))
	require.Equal(t, http.StatusForbidden, post("evil.example.com", "", keyAll), "a rebound name without Origin")
	require.Equal(t, http.StatusForbidden, post("127.0.0.1:9", "http://evil.example.com", keyAll))
	require.Equal(t, http.StatusForbidden, post("127.0.0.1:9", "null", keyAll))
	require.Equal(t, http.StatusForbidden, post("evil.example.com", "", ""), "before the key")
	require.Equal(t, http.StatusOK, post("127.0.0.1:9", "http://127.0.0.1:9", keyAll))
	require.Equal(t, http.StatusOK, post("localhost:3000", "http://localhost:5173", keyAll))
	require.Equal(t, http.StatusOK, post("[::1]:8080", "", keyAll))

	named := mcp.New(f.cat, f.acct, f.sealer, mcp.WithAllowedHosts([]string{"ai.example.com", "*.corp.example"}))
	t.Cleanup(named.Close)
	srv2 := httptest.NewServer(named)
	t.Cleanup(srv2.Close)
	srv = srv2
	require.Equal(t, http.StatusOK, post("ai.example.com", "https://ai.example.com", keyAll))
	require.Equal(t, http.StatusOK, post("mcp.corp.example:443", "", keyAll))
	require.Equal(t, http.StatusForbidden, post("127.0.0.1", "", keyAll), "only the names given")

	require.Equal(t, mcp.LoopbackHosts, mcp.DefaultAllowedHosts("[::1]:8080"))
	require.Equal(t, mcp.LoopbackHosts, mcp.DefaultAllowedHosts("localhost:8080"))
	require.Equal(t, []string{"*"}, mcp.DefaultAllowedHosts("0.0.0.0:8080"))
}
