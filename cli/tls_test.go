package cli_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/cli"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/internal/tlsconf"
	"github.com/tollgate-ai/tollgate/internal/tlsconf/tlstest"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// The CLI reaches an admin API that requires client certificates with
// --tls-ca, --tls-cert and --tls-key (also before the noun); without a
// certificate, or with one from another CA, the call fails.
func TestCLIOverMutualTLS(t *testing.T) {
	ca, other := tlstest.NewCA(t, "tollgate"), tlstest.NewCA(t, "other")
	srvPair, operator, rogue := ca.Server(t, "admin"), ca.Client(t, "operator"), other.Client(t, "rogue")
	tlsCfg, err := tlsconf.Server{Cert: srvPair.Cert, Key: srvPair.Key, ClientCA: ca.Cert}.Config()
	require.NoError(t, err)

	st := memstore.New()
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	key, _, err := admin.Bootstrap(context.Background(), st, "")
	require.NoError(t, err)
	srv := admin.New(st, sealer, admin.WithLogger(slog.New(slog.DiscardHandler)))
	g := grpc.NewServer(append(admin.ServerOptions(srv), grpc.Creds(credentials.NewTLS(tlsCfg)))...)
	srv.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)

	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var out, errOut bytes.Buffer
		err := cli.Main(ctx, append(args, "--addr", lis.Addr().String(), "--admin-key", key), &out, &errOut)
		return out.String(), err
	}
	out, err := run("--tls-ca", ca.Cert, "--tls-cert", operator.Cert, "--tls-key", operator.Key, "team", "create", "red")
	require.NoError(t, err)
	require.Contains(t, out, "red")

	_, err = run("team", "list", "--tls-ca", ca.Cert)
	require.Error(t, err, "no client certificate")
	_, err = run("team", "list", "--tls-ca", ca.Cert, "--tls-cert", rogue.Cert, "--tls-key", rogue.Key)
	require.Error(t, err, "a certificate from another CA")
	_, err = run("team", "list")
	require.Error(t, err, "plaintext to a TLS server")
	_, err = run("team", "list", "--tls-ca", ca.Cert, "--tls-cert", operator.Cert)
	require.ErrorIs(t, err, cli.ErrUsage, "a certificate without its key")
}
