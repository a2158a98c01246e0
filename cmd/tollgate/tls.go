package main

import (
	"flag"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/tlsconf"
)

// tlsFlags declares the transport-security flags of `tollgate run` on cfg:
// for each of the admin API, xDS and ext_proc a server certificate, its key
// and the CA its clients' certificates must chain to (docs/operations.md,
// "Transport security"), and the client certificate of the data plane.
func tlsFlags(fs *flag.FlagSet, cfg *gateway.Config) {
	for _, s := range []struct {
		name, what string
		files      *tlsconf.Server
	}{
		{"admin", "the admin API", &cfg.AdminTLS},
		{"xds", "xDS", &cfg.XDSTLS},
		{"extproc", "ext_proc", &cfg.ExtProcTLS},
	} {
		fs.StringVar(&s.files.Cert, s.name+"-tls-cert", "", "serve "+s.what+" over TLS with this certificate file (with --"+s.name+"-tls-key and --"+s.name+"-client-ca)")
		fs.StringVar(&s.files.Key, s.name+"-tls-key", "", "the key file of --"+s.name+"-tls-cert")
		fs.StringVar(&s.files.ClientCA, s.name+"-client-ca", "", "CA file that client certificates of "+s.what+" must chain to (required with TLS)")
	}
	fs.StringVar(&cfg.DataPlaneTLS.Cert, "dataplane-tls-cert", "", "client certificate file the built-in data plane (or child Envoy) presents to xDS and ext_proc over TLS")
	fs.StringVar(&cfg.DataPlaneTLS.Key, "dataplane-tls-key", "", "the key file of --dataplane-tls-cert")
	fs.StringVar(&cfg.DataPlaneTLS.CA, "dataplane-tls-ca", "", "CA file the data plane verifies xDS and ext_proc with (built-in: default the servers' own certificate; required for a child Envoy)")
}
