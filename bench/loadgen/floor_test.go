package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// The floor proxy passes requests through as they came and answers with
// the upstream's status, content type and body, over one upstream
// connection reused request after request.
func TestFloorProxies(t *testing.T) {
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"path":"` + r.URL.Path + `","body":` + string(b) + `}`))
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	defer up.Close()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveFloor(ctx, lis, up.Listener.Addr().String()) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	for i := range 3 {
		resp, err := c.Post("http://"+lis.Addr().String()+"/v1/chat/completions", "application/json", strings.NewReader(`{"n":1}`))
		require.NoError(t, err, "request %d", i)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.JSONEq(t, `{"path":"/v1/chat/completions","body":{"n":1}}`, string(b))
	}
	require.Equal(t, int64(1), conns.Load(), "one upstream connection, reused")
}
