package cli

import (
	"flag"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tollgate-ai/tollgate/internal/tlsconf"
)

// Environment defaults of the TLS flags.
const (
	EnvTLSCA   = "TOLLGATE_TLS_CA"
	EnvTLSCert = "TOLLGATE_TLS_CERT"
	EnvTLSKey  = "TOLLGATE_TLS_KEY"
)

// tlsFlags declares --tls-ca, --tls-cert and --tls-key, for an admin API
// served with --admin-tls-cert; the returned function gives the transport
// credentials they ask for (plaintext when none is set).
func tlsFlags(fs *flag.FlagSet) func() (grpc.DialOption, error) {
	var c tlsconf.Client
	fs.StringVar(&c.CA, "tls-ca", envOr(EnvTLSCA, ""), "reach the admin API over TLS, verifying it against this CA file (env "+EnvTLSCA+")")
	fs.StringVar(&c.Cert, "tls-cert", envOr(EnvTLSCert, ""), "client certificate file for an admin API requiring one (env "+EnvTLSCert+")")
	fs.StringVar(&c.Key, "tls-key", envOr(EnvTLSKey, ""), "the key file of --tls-cert (env "+EnvTLSKey+")")
	return func() (grpc.DialOption, error) {
		if !c.Enabled() {
			return grpc.WithTransportCredentials(insecure.NewCredentials()), nil
		}
		cfg, err := c.Config()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return grpc.WithTransportCredentials(credentials.NewTLS(cfg)), nil
	}
}
