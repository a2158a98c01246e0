package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// With --dataplane envoy, tollgate run starts Envoy with a bootstrap that
// points at its xDS server, and stops it on shutdown. A stand-in envoy script
// records how it was started (the real Envoy cannot be installed here; the xds
// package's TestRealEnvoy runs one when it is on PATH).
func TestRunStartsAndStopsAChildEnvoy(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	script := filepath.Join(dir, "envoy")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
cp "$2" "`+record+`.yaml"
echo "$@" > "`+record+`.args"
trap 'echo stopped > "`+record+`.stopped"; exit 0' TERM
while true; do sleep 0.05; done
`), 0o755))

	cfg := gateway.DefaultConfig()
	cfg.Listen, cfg.AdminAddr, cfg.XDSAddr, cfg.ExtProcAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.MetricsAddr = "127.0.0.1:0"
	cfg.MasterKey = make([]byte, 32)
	cfg.AdminKey = "tga-test"
	cfg.DataPlane = gateway.DataPlaneEnvoy
	cfg.EnvoyPath = script

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *gateway.Gateway, 1)
	done := make(chan error, 1)
	go func() {
		done <- gateway.Run(ctx, cfg, memstore.New(), gateway.Options{
			Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			OnStart: []gateway.StartHook{func(_ context.Context, g *gateway.Gateway) error { started <- g; return nil }},
		})
	}()
	var g *gateway.Gateway
	select {
	case g = <-started:
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("not started")
	}

	// The script's `echo > file` creates the file before it writes the line:
	// wait for the line, not the file.
	var args []byte
	require.Eventually(t, func() bool {
		var err error
		args, err = os.ReadFile(record + ".args")
		return err == nil && strings.Contains(string(args), "\n")
	}, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, string(args), "-c ")
	boot, err := os.ReadFile(record + ".yaml")
	require.NoError(t, err)
	host, port, _ := strings.Cut(g.XDSAddr, ":")
	require.Contains(t, string(boot), host)
	require.Contains(t, string(boot), port, "the bootstrap points Envoy at this xDS server")
	require.Contains(t, string(boot), "ads")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
	_, err = os.Stat(record + ".stopped")
	require.NoError(t, err, "Envoy was asked to stop (SIGTERM)")
}
