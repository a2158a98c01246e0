package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// --debug-addr on all interfaces (or any non-loopback address) is refused at
// start, before anything is opened; loopback forms are accepted.
func TestDebugAddrRefusesNonLoopback(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "10.1.2.3:6060", "[::]:6060", "example.com:6060"} {
		var stderr bytes.Buffer
		err := runGateway(context.Background(), []string{"--db", db, "--debug-addr", addr}, &bytes.Buffer{}, &stderr)
		require.ErrorContains(t, err, "--debug-addr \""+addr+"\": the profiler serves without authentication, so it listens on loopback only", addr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, serveDebug(ctx, "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil))))
}

// The TLS flags reach the configuration: half a server's files, or a TLS xDS
// without a data-plane client certificate, end start-up naming the flags.
func TestTLSFlagsAreValidated(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	err := runGateway(context.Background(), []string{"--db", db, "--dataplane", "builtin", "--admin-tls-cert", "c.pem"}, &bytes.Buffer{}, &bytes.Buffer{})
	require.ErrorContains(t, err, "admin TLS needs --admin-tls-cert, --admin-tls-key and --admin-client-ca together")
	err = runGateway(context.Background(), []string{"--db", db, "--dataplane", "builtin", "--xds-tls-cert", "c.pem", "--xds-tls-key", "k.pem", "--xds-client-ca", "ca.pem"}, &bytes.Buffer{}, &bytes.Buffer{})
	require.ErrorContains(t, err, "--dataplane-tls-cert and --dataplane-tls-key")
}
