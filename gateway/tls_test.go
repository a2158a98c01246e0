package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/tlsconf"
	"github.com/tollgate-ai/tollgate/internal/tlsconf/tlstest"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// grpcCode is the code of a health check on addr with the client
// certificate pair (none when pair is zero), trusting ca: Unavailable when
// the TLS handshake is refused; any other code (OK, or Unimplemented on a
// server without the health service) was answered by the server over TLS.
func grpcCode(t *testing.T, addr, ca string, pair tlstest.Pair) codes.Code {
	t.Helper()
	cfg, err := tlsconf.Client{CA: ca, Cert: pair.Cert, Key: pair.Key}.Config()
	require.NoError(t, err)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return status.Code(err)
}

// adminREST is the status of a REST call on the admin port over TLS with
// pair, or -1 when the connection fails.
func adminREST(t *testing.T, addr, ca string, pair tlstest.Pair, key string) int {
	t.Helper()
	cfg, err := tlsconf.Client{CA: ca, Cert: pair.Cert, Key: pair.Key}.Config()
	require.NoError(t, err)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	req, err := http.NewRequest(http.MethodPost, "https://"+addr+"/tollgate.admin.v1.AuditService/ListAudit", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

// TestServersRequireClientCertificates: with TLS on the admin API, xDS and
// ext_proc, each refuses a client without a certificate and one with a
// certificate from another CA, and answers the right certificate; the
// built-in data plane reaches xDS and the processor (over gRPC) with its
// own client certificate, so a request through it gets the processor's 401.
func TestServersRequireClientCertificates(t *testing.T) {
	ca, other := tlstest.NewCA(t, "tollgate"), tlstest.NewCA(t, "other")
	srv := ca.Server(t, "server")
	files := tlsconf.Server{Cert: srv.Cert, Key: srv.Key, ClientCA: ca.Cert}
	dataPlane, operator, rogue := ca.Client(t, "dataplane"), ca.Client(t, "operator"), other.Client(t, "rogue")

	cfg := freeConfig()
	cfg.AdminKey = "tga-test"
	cfg.ProcessorOverGRPC = true
	cfg.AdminTLS, cfg.XDSTLS, cfg.ExtProcTLS = files, files, files
	cfg.DataPlaneTLS = tlsconf.Client{Cert: dataPlane.Cert, Key: dataPlane.Key}
	checked := false
	_, err := runUntilStarted(t, cfg, memstore.New(), func(_ context.Context, g *gateway.Gateway) error {
		for name, addr := range map[string]string{"admin": g.AdminAddr, "xds": g.XDSAddr, "extproc": g.ExtProcAddr} {
			require.Equal(t, codes.Unavailable, grpcCode(t, addr, ca.Cert, tlstest.Pair{}), "%s without a client certificate", name)
			require.Equal(t, codes.Unavailable, grpcCode(t, addr, ca.Cert, rogue), "%s with another CA's certificate", name)
			require.NotEqual(t, codes.Unavailable, grpcCode(t, addr, ca.Cert, operator), "%s with the right certificate", name)
		}
		// The admin port's HTTP side (REST API through the in-process
		// gRPC connection) over the same mutual TLS.
		require.Equal(t, http.StatusOK, adminREST(t, g.AdminAddr, ca.Cert, operator, cfg.AdminKey))
		require.Equal(t, -1, adminREST(t, g.AdminAddr, ca.Cert, tlstest.Pair{}, cfg.AdminKey), "HTTP without a client certificate")
		require.Equal(t, -1, adminREST(t, g.AdminAddr, ca.Cert, rogue, cfg.AdminKey), "HTTP with another CA's certificate")
		resp, err := http.Post("http://"+g.ListenAddr+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the processor answered over mTLS")
		checked = true
		return nil
	})
	require.NoError(t, err)
	require.True(t, checked)
}

// A child Envoy reaching a TLS xDS gets a bootstrap with the data plane's
// client certificate and CA on the xDS and (static) ext_proc clusters. A
// stand-in envoy script keeps the bootstrap it was given.
func TestChildEnvoyBootstrapCarriesTheClientCertificate(t *testing.T) {
	ca := tlstest.NewCA(t, "tollgate")
	srv, client := ca.Server(t, "server"), ca.Client(t, "envoy")
	files := tlsconf.Server{Cert: srv.Cert, Key: srv.Key, ClientCA: ca.Cert}
	dir := t.TempDir()
	kept := filepath.Join(dir, "bootstrap.yaml")
	script := filepath.Join(dir, "envoy")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\ncp \"$2\" \""+kept+"\"\ntrap 'exit 0' TERM\nwhile true; do sleep 0.05; done\n"), 0o755))

	cfg := freeConfig()
	cfg.AdminKey, cfg.DataPlane, cfg.EnvoyPath = "tga-test", gateway.DataPlaneEnvoy, script
	cfg.XDSTLS, cfg.ExtProcTLS = files, files
	cfg.DataPlaneTLS = tlsconf.Client{CA: ca.Cert, Cert: client.Cert, Key: client.Key}
	var boot string
	_, err := runUntilStarted(t, cfg, memstore.New(), func(_ context.Context, g *gateway.Gateway) error {
		require.Eventually(t, func() bool { b, err := os.ReadFile(kept); boot = string(b); return err == nil && len(b) > 0 }, 10*time.Second, 20*time.Millisecond)
		_, port, _ := strings.Cut(g.ExtProcAddr, ":")
		require.Contains(t, boot, "port_value: "+port, "the static ext_proc cluster")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(boot, "UpstreamTlsContext"), boot)
	require.Contains(t, boot, `filename: "`+client.Cert+`"`)
	require.Contains(t, boot, `filename: "`+ca.Cert+`"`)
}

// A server certificate without the client CA, or a data plane without a
// client certificate for a TLS xDS server, is a configuration error.
func TestTLSConfigErrors(t *testing.T) {
	cfg := freeConfig()
	cfg.AdminTLS = tlsconf.Server{Cert: "c.pem", Key: "k.pem"}
	require.ErrorContains(t, cfg.Validate(), "--admin-client-ca")

	cfg = freeConfig()
	cfg.XDSTLS = tlsconf.Server{Cert: "c.pem", Key: "k.pem", ClientCA: "ca.pem"}
	require.ErrorContains(t, cfg.Validate(), "--dataplane-tls-cert")
	cfg.DataPlane = gateway.DataPlaneNone
	require.NoError(t, cfg.Validate())
}

// A server bound beyond loopback without TLS is warned about at start (the
// apply step then fails, so nothing is bound: tests listen on 127.0.0.1 only).
func TestPlaintextBeyondLoopbackWarns(t *testing.T) {
	ca := tlstest.NewCA(t, "tollgate")
	srv := ca.Server(t, "server")
	cfg := freeConfig()
	cfg.AdminAddr, cfg.XDSAddr, cfg.MetricsAddr = "0.0.0.0:0", "0.0.0.0:0", ""
	cfg.XDSTLS = tlsconf.Server{Cert: srv.Cert, Key: srv.Key, ClientCA: ca.Cert}
	cfg.DataPlane = gateway.DataPlaneNone
	cfg.ApplyFiles = []string{t.TempDir() + "/missing.yaml"}
	var logs bytes.Buffer
	err := gateway.Run(context.Background(), cfg, memstore.New(), gateway.Options{
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Stdout: io.Discard,
	})
	require.ErrorContains(t, err, "apply configuration")
	require.Contains(t, logs.String(), `level=WARN msg="listening beyond loopback without TLS" server="admin API" addr=0.0.0.0:0`)
	require.NotContains(t, logs.String(), `server=xDS`, "xDS has TLS")
	require.NotContains(t, logs.String(), `server=ext_proc`, "ext_proc is on loopback")
}
