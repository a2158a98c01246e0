package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
)

// Server names the PEM files of a server that requires client certificates.
// All three are set, or none (plaintext).
type Server struct {
	// Cert and Key are the server's certificate (chain) and private key.
	Cert, Key string
	// ClientCA holds the CA certificates a client certificate must chain to.
	ClientCA string
}

// Enabled reports whether any file is named.
func (s Server) Enabled() bool { return s.Cert != "" || s.Key != "" || s.ClientCA != "" }

// Check reports a partial setting; name prefixes the flags it names
// (admin → --admin-tls-cert, --admin-tls-key, --admin-client-ca).
func (s Server) Check(name string) error {
	if !s.Enabled() || (s.Cert != "" && s.Key != "" && s.ClientCA != "") {
		return nil
	}
	return fmt.Errorf("%s TLS needs --%[1]s-tls-cert, --%[1]s-tls-key and --%[1]s-client-ca together (client certificates are always required)", name)
}

// Config loads the files: TLS 1.2 or later, client certificates required
// and verified against ClientCA.
func (s Server) Config() (*tls.Config, error) {
	if err := s.Check("server"); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(s.Cert, s.Key)
	if err != nil {
		return nil, fmt.Errorf("load certificate %s and key %s: %w", s.Cert, s.Key, err)
	}
	pool, err := loadPool(s.ClientCA)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}

// ServerName is a name the certificate Cert is valid for (its first DNS
// name, else its first IP address), for an in-process client that dials the
// server by a loopback address; "" when the certificate names neither.
func (s Server) ServerName() (string, error) {
	cert, err := tls.LoadX509KeyPair(s.Cert, s.Key)
	if err != nil {
		return "", fmt.Errorf("load certificate %s: %w", s.Cert, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return "", fmt.Errorf("parse certificate %s: %w", s.Cert, err)
	}
	if len(leaf.DNSNames) > 0 {
		return leaf.DNSNames[0], nil
	}
	if len(leaf.IPAddresses) > 0 {
		return leaf.IPAddresses[0].String(), nil
	}
	return "", nil
}

// Client names the PEM files of a client of such a server.
type Client struct {
	// CA holds the CA certificates the server's certificate must chain to
	// ("": the system roots).
	CA string
	// Cert and Key are the client certificate and its key (both or neither).
	Cert, Key string
	// ServerName overrides the name the server's certificate is verified
	// against ("": the host dialled).
	ServerName string
}

// Enabled reports whether any file is named.
func (c Client) Enabled() bool { return c.CA != "" || c.Cert != "" || c.Key != "" }

// Config loads the files.
func (c Client) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if (c.Cert == "") != (c.Key == "") {
		return nil, errors.New("a client certificate needs both its certificate and its key file")
	}
	if c.Cert != "" {
		cert, err := tls.LoadX509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("load client certificate %s and key %s: %w", c.Cert, c.Key, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.CA != "" {
		pool, err := loadPool(c.CA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate", file)
	}
	return pool, nil
}

// Loopback reports whether addr (host:port, or unix:/path) is reachable from
// this host only: a Unix socket, a loopback IP or "localhost". An empty host
// (all interfaces) is not.
func Loopback(addr string) bool {
	if len(addr) >= 5 && addr[:5] == "unix:" {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
