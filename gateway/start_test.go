package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// runUntilStarted runs the gateway until it serves, then stops it; it returns
// Run's error and what Run printed. A Run that neither starts nor ends within
// 20 s fails the test.
func runUntilStarted(t *testing.T, cfg gateway.Config, st store.Store, hooks ...gateway.StartHook) (string, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	stop := func(context.Context, *gateway.Gateway) error { cancel(); return nil }
	done := make(chan error, 1)
	go func() {
		done <- gateway.Run(ctx, cfg, st, gateway.Options{
			Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
			Stdout:  &out,
			OnStart: append(hooks, stop),
		})
	}()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(20 * time.Second):
		t.Fatal("gateway.Run neither started nor returned within 20s")
		return "", nil
	}
}

func freeConfig() gateway.Config {
	cfg := gateway.DefaultConfig()
	cfg.Listen, cfg.AdminAddr, cfg.XDSAddr, cfg.ExtProcAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.MetricsAddr = "127.0.0.1:0" // the default port may be another test's
	cfg.MasterKey = make([]byte, 32)
	return cfg
}

// A data plane port in use ends Run with the bind error, before the admin
// secret is created; the next start creates and prints it.
func TestRunEndsWhenTheListenPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	st := memstore.New()
	cfg := freeConfig()
	cfg.Listen = taken.Addr().String()
	out, err := runUntilStarted(t, cfg, st)
	require.ErrorContains(t, err, "data plane listener: listen tcp "+cfg.Listen)
	require.NotContains(t, out, "Bootstrap admin key")

	out, err = runUntilStarted(t, freeConfig(), st)
	require.NoError(t, err)
	require.Contains(t, out, "Bootstrap admin key (shown once, keep it): tga-")
}

// A start hook's error ends Run after stopping every service it started: the
// ports are free again.
func TestRunEndsWhenAStartHookFails(t *testing.T) {
	cfg := freeConfig()
	cfg.AdminKey = "tga-test"
	var addrs []string
	errHook := errors.New("hook failed")
	_, err := runUntilStarted(t, cfg, memstore.New(), func(_ context.Context, g *gateway.Gateway) error {
		addrs = []string{g.ListenAddr, g.AdminAddr, g.XDSAddr, g.ExtProcAddr}
		return errHook
	})
	require.ErrorIs(t, err, errHook)
	require.ErrorContains(t, err, "start hook: hook failed")
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		require.NoError(t, err, "%s is released", a)
		require.NoError(t, l.Close())
	}
}

// With Envoy missing, Run ends with the error.
func TestRunEndsWithoutEnvoy(t *testing.T) {
	cfg := freeConfig()
	cfg.AdminKey = "tga-test"
	cfg.DataPlane = gateway.DataPlaneEnvoy
	cfg.EnvoyPath = filepath.Join(t.TempDir(), "envoy")
	_, err := runUntilStarted(t, cfg, memstore.New())
	require.ErrorContains(t, err, "data plane: start envoy ("+cfg.EnvoyPath+")")
}
