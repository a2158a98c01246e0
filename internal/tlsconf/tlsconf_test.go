package tlsconf_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/tlsconf"
	"github.com/tollgate-ai/tollgate/internal/tlsconf/tlstest"
)

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9090": true, "127.1.2.3:1": true, "[::1]:9090": true, "localhost:9090": true, "unix:/run/x.sock": true,
		"0.0.0.0:9090": false, ":9090": false, "[::]:9090": false, "10.0.0.1:9090": false, "tollgate:9090": false, "nonsense": false,
	} {
		require.Equal(t, want, tlsconf.Loopback(addr), addr)
	}
}

func TestServerFiles(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	srv := ca.Server(t, "srv")
	require.NoError(t, tlsconf.Server{}.Check("admin"))
	require.ErrorContains(t, tlsconf.Server{Cert: srv.Cert}.Check("xds"), "--xds-tls-cert, --xds-tls-key and --xds-client-ca together")

	s := tlsconf.Server{Cert: srv.Cert, Key: srv.Key, ClientCA: ca.Cert}
	cfg, err := s.Config()
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1)
	name, err := s.ServerName()
	require.NoError(t, err)
	require.Equal(t, "localhost", name)

	_, err = tlsconf.Server{Cert: srv.Cert, Key: srv.Key, ClientCA: srv.Key}.Config()
	require.ErrorContains(t, err, "no PEM certificate")
	_, err = tlsconf.Server{Cert: srv.Cert, Key: ca.Cert, ClientCA: ca.Cert}.Config()
	require.ErrorContains(t, err, "load certificate")
}
