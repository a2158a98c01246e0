package main

import (
	"errors"
	"flag"
	"io"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/gateway"
)

// runEnvoy implements `tollgate envoy bootstrap`.
func runEnvoy(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "bootstrap" {
		return errors.New("usage: tollgate envoy bootstrap --xds HOST:PORT [--extproc ADDR] [--node-id ID] [--admin 127.0.0.1:9901] [--tls-ca F --tls-cert F --tls-key F]")
	}
	var o envoy.BootstrapOptions
	fs := flag.NewFlagSet("tollgate envoy bootstrap", flag.ContinueOnError)
	fs.StringVar(&o.XDS, "xds", gateway.DefaultConfig().XDSAddr, "xDS (ADS) server: host:port or unix:/path")
	fs.StringVar(&o.ExtProc, "extproc", "", "this Envoy's own ext_proc sidecar (host:port or unix:/path); empty: the address the xDS server sends")
	fs.StringVar(&o.NodeID, "node-id", envoy.DefaultNodeID, "node id")
	fs.StringVar(&o.NodeCluster, "node-cluster", envoy.DefaultNodeCluster, "node cluster")
	fs.StringVar(&o.Admin, "admin", envoy.DefaultAdmin, "Envoy admin interface (loopback only)")
	fs.StringVar(&o.TLSCA, "tls-ca", "", "with --tls-cert and --tls-key: reach xDS and ext_proc over mutual TLS, verifying them against this CA file (needs --extproc)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "Envoy's client certificate file for xDS and ext_proc")
	fs.StringVar(&o.TLSKey, "tls-key", "", "the key file of --tls-cert")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	b, err := envoy.Bootstrap(o)
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}
