package mcp

import (
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The least recently used session conn goes when there are too many; the
// one just made stays.
func TestConnEvictsLeastRecentlyUsed(t *testing.T) {
	u := newUpstreams(http.DefaultTransport, slog.New(slog.DiscardHandler))
	srv := &Server{ID: "s", URL: "http://127.0.0.1:1/mcp"}
	key := func(i int) connKey { return connKey{fmt.Sprint("sess", i), srv.ID} }
	for i := range maxSessionConns {
		u.conn(key(i), srv, nil)
	}
	u.conn(key(0), srv, nil) // used again: now 1 is the oldest
	c := u.conn(key(maxSessionConns), srv, nil)

	u.mu.Lock()
	defer u.mu.Unlock()
	require.Len(t, u.conns, maxSessionConns)
	require.Same(t, c, u.conns[key(maxSessionConns)])
	require.Contains(t, u.conns, key(0))
	require.NotContains(t, u.conns, key(1))
}
