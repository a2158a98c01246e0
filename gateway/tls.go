package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/tollgate-ai/tollgate/internal/tlsconf"
)

// validateTLS reports partial TLS settings and a data plane that could not
// reach a server requiring client certificates.
func (c *Config) validateTLS() []error {
	var errs []error
	for name, s := range map[string]tlsconf.Server{"admin": c.AdminTLS, "xds": c.XDSTLS, "extproc": c.ExtProcTLS} {
		if err := s.Check(name); err != nil {
			errs = append(errs, err)
		}
	}
	dp := c.DataPlaneTLS
	if (dp.Cert == "") != (dp.Key == "") {
		errs = append(errs, errors.New("--dataplane-tls-cert and --dataplane-tls-key go together"))
	}
	needsClientCert := false
	switch c.DataPlane {
	case DataPlaneBuiltin:
		needsClientCert = c.XDSTLS.Enabled() || (c.ProcessorOverGRPC && c.ExtProcTLS.Enabled())
	case DataPlaneEnvoy:
		needsClientCert = c.XDSTLS.Enabled() || c.ExtProcTLS.Enabled()
		if c.ExtProcTLS.Enabled() != c.XDSTLS.Enabled() && !strings.HasPrefix(c.ExtProcAddr, "unix:") {
			errs = append(errs, errors.New("with --dataplane envoy, serve xDS and a TCP ext_proc both with TLS or both without (the child Envoy presents one certificate to both)"))
		}
		if needsClientCert && dp.CA == "" {
			errs = append(errs, errors.New("a child Envoy reaching xDS or ext_proc over TLS needs --dataplane-tls-ca (the CA of their server certificates)"))
		}
	}
	if needsClientCert && dp.Cert == "" {
		errs = append(errs, errors.New("xDS or ext_proc requires client certificates: give the data plane one with --dataplane-tls-cert and --dataplane-tls-key"))
	}
	return errs
}

// serverTLS is the gRPC option serving s's mutual TLS; none when s is off.
func serverTLS(s tlsconf.Server) ([]grpc.ServerOption, error) {
	if !s.Enabled() {
		return nil, nil
	}
	cfg, err := s.Config()
	if err != nil {
		return nil, err
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(cfg))}, nil
}

// adminTLS wraps the admin port's listener in mutual TLS when AdminTLS is
// set. The port's split (gRPC by the HTTP/2 preface, else HTTP) then reads
// the decrypted bytes; ALPN prefers http/1.1, so that browsers and curl
// speak HTTP/1.1 and gRPC clients (which offer h2 only) get h2. The REST API
// reaches the gRPC services through an in-memory listener (the returned
// dial option) instead of dialling the port, which would need a client
// certificate.
func (g *Gateway) adminTLS(l net.Listener) (net.Listener, []grpc.DialOption, error) {
	if !g.Config.AdminTLS.Enabled() {
		return l, nil, nil
	}
	cfg, err := g.Config.AdminTLS.Config()
	if err != nil {
		return l, nil, err
	}
	cfg.NextProtos = []string{"http/1.1", "h2"}
	inner := bufconn.Listen(1 << 20)
	g.serve("admin (in-process)", func() error { return g.adminSrv.Serve(inner) })
	dial := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return inner.DialContext(ctx) })
	return tls.NewListener(l, cfg), []grpc.DialOption{dial}, nil
}

// dataPlaneCreds are the credentials the built-in data plane dials a server
// of this process with: plaintext when the server has no TLS, else the
// data plane's client certificate, verifying the server against
// --dataplane-tls-ca or, without it, against the very certificate the server
// loaded (it is in this process), under a name that certificate holds.
func (g *Gateway) dataPlaneCreds(s tlsconf.Server) (grpc.DialOption, error) {
	if !s.Enabled() {
		return grpc.WithTransportCredentials(insecure.NewCredentials()), nil
	}
	c := g.Config.DataPlaneTLS
	name, err := s.ServerName()
	if err != nil {
		return nil, err
	}
	if c.ServerName == "" {
		c.ServerName = name
	}
	pinned := c.CA == ""
	if pinned {
		c.CA = s.Cert
	}
	cfg, err := c.Config()
	if err != nil {
		return nil, fmt.Errorf("data plane client certificate: %w", err)
	}
	if pinned {
		leaf, err := firstCert(s.Cert)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		cfg.RootCAs.AddCert(leaf)
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(cfg)), nil
}

func firstCert(file string) (*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("%s: no PEM certificate", file)
	}
	return x509.ParseCertificate(b.Bytes)
}

// warnPlaintext logs a warning for every server bound beyond loopback
// without TLS: its traffic (provider credentials in ext_proc's header
// mutations, the whole configuration over xDS, admin keys) is readable and,
// without client certificates, open to whoever reaches the port.
func (g *Gateway) warnPlaintext(context.Context) error {
	for _, s := range []struct {
		name, addr string
		tls        bool
		why        string
	}{
		{"admin API", g.Config.AdminAddr, g.Config.AdminTLS.Enabled(), "set --admin-tls-cert, --admin-tls-key and --admin-client-ca"},
		{"xDS", g.Config.XDSAddr, g.Config.XDSTLS.Enabled(), "set --xds-tls-cert, --xds-tls-key and --xds-client-ca"},
		{"ext_proc", g.Config.ExtProcAddr, g.Config.ExtProcTLS.Enabled(), "set --extproc-tls-cert, --extproc-tls-key and --extproc-client-ca"},
		{"metrics", g.Config.MetricsAddr, false, "bind it to loopback and scrape through a proxy, or keep the port firewalled"},
		{"data plane", g.Config.Listen, false, "terminate TLS in front of it (a load balancer or Envoy)"},
	} {
		if s.addr != "" && !s.tls && !tlsconf.Loopback(s.addr) {
			g.log.Warn("listening beyond loopback without TLS", "server", s.name, "addr", s.addr, "fix", s.why)
		}
	}
	return nil
}
