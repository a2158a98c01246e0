package gateway

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/internal/tlsconf"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/reconcile"
)

// DataPlane selects what serves the gateway's HTTP traffic.
type DataPlane string

// Data planes.
const (
	// DataPlaneBuiltin is the built-in Go data plane (edge/).
	DataPlaneBuiltin DataPlane = "builtin"
	// DataPlaneEnvoy runs Envoy (Config.EnvoyPath) as a child process,
	// bootstrapped to this process's xDS server.
	DataPlaneEnvoy DataPlane = "envoy"
	// DataPlaneNone runs the control plane and the processor only (for an
	// Envoy started elsewhere from `tollgate envoy bootstrap`).
	DataPlaneNone DataPlane = "none"
)

// Config is everything `tollgate run` needs. Flags and environment are read in cmd/.
type Config struct {
	// Listen is the data plane's HTTP address (the listener programmed over xDS).
	Listen string
	// AdminAddr serves the gRPC admin API.
	AdminAddr string
	// XDSAddr serves ADS for Envoy and the built-in data plane.
	XDSAddr string
	// ExtProcAddr serves the ext_proc processor: host:port or unix:/path.
	ExtProcAddr string
	// MCPAddr serves the MCP gateway to Envoy (the cluster of its /mcp
	// route): host:port, "" for 127.0.0.1 on a free port (gateway/mcp.go).
	MCPAddr string
	// MCPAllowedHosts are the host names /mcp answers for (its Host header,
	// and its Origin header when there is one: DNS-rebinding protection,
	// mcp.WithAllowedHosts); nil: mcp.DefaultAllowedHosts(Listen), loopback
	// names for a loopback listener, any host otherwise.
	MCPAllowedHosts []string
	// DataPlane is builtin, envoy or none.
	DataPlane DataPlane
	// ProcessorOverGRPC makes the built-in data plane call the processor over
	// gRPC instead of in-process.
	ProcessorOverGRPC bool
	// MasterKey is the 32-byte key that seals provider credentials.
	MasterKey []byte
	// AdminKey, when set, is the bootstrap admin secret (else one is generated
	// at first start and printed once).
	AdminKey string
	// ApplyFiles are declarative configuration files applied at start.
	ApplyFiles []string
	// MaxBodyBytes bounds request bodies (413 above).
	MaxBodyBytes int64
	// NodeID is the xDS node id the built-in data plane uses.
	NodeID string
	// EnvoyPath is the envoy binary of DataPlaneEnvoy.
	EnvoyPath string
	// EnvoyAdmin is the admin address of a child Envoy (loopback).
	EnvoyAdmin string
	// ReservationLease is how long an admitted request's reservation lives
	// unsettled (a crashed processor) before it is settled by expiry.
	ReservationLease time.Duration
	// ResponsesRetention is how long stored responses of the Responses API
	// are kept (0: DefaultResponsesRetention).
	ResponsesRetention time.Duration
	// MetricsAddr serves /metrics, /healthz and /readyz over HTTP ("": no
	// metrics; health stays on the data-plane port).
	MetricsAddr string
	// AdminTLS, XDSTLS and ExtProcTLS make those servers serve TLS and
	// require client certificates (docs/operations.md, "Transport security").
	AdminTLS, XDSTLS, ExtProcTLS tlsconf.Server
	// DataPlaneTLS is the client certificate the built-in data plane or a
	// child Envoy presents to xDS and ext_proc over TLS, and the CA it
	// verifies them with.
	DataPlaneTLS tlsconf.Client
	// Reconcile schedules the reconciliation of the ledger against the
	// providers' usage and cost reports (gateway/reconcile.go; off when its
	// Interval is 0).
	Reconcile reconcile.JobConfig
	// BatchPollInterval is how often pending batches are polled and the
	// ended ones settled (gateway/batches.go; 0: never).
	BatchPollInterval time.Duration
}

// DefaultMetricsAddr is where /metrics is served unless told otherwise:
// loopback, port 9464 (the OpenTelemetry Prometheus exporter's).
const DefaultMetricsAddr = "127.0.0.1:9464"

// DefaultConfig returns the settings `tollgate run` starts with.
func DefaultConfig() Config {
	return Config{
		Listen:       "127.0.0.1:8080",
		AdminAddr:    "127.0.0.1:9090",
		XDSAddr:      "127.0.0.1:18000",
		ExtProcAddr:  "127.0.0.1:50051",
		DataPlane:    DataPlaneBuiltin,
		MaxBodyBytes: 32 << 20,
		NodeID:       "tollgate-builtin",
		EnvoyPath:    "envoy",
		EnvoyAdmin:   envoy.DefaultAdmin,

		ReservationLease: kernel.DefaultLease,
		MetricsAddr:      DefaultMetricsAddr,
		Reconcile:        reconcile.DefaultJobConfig(),

		BatchPollInterval: time.Minute,
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	for name, addr := range map[string]string{"listen": c.Listen, "admin": c.AdminAddr, "xds": c.XDSAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s address %q: want host:port", name, addr))
		}
	}
	if path, ok := strings.CutPrefix(c.ExtProcAddr, "unix:"); ok {
		if path == "" {
			errs = append(errs, errors.New("extproc address unix: needs a socket path"))
		}
	} else if _, _, err := net.SplitHostPort(c.ExtProcAddr); err != nil {
		errs = append(errs, fmt.Errorf("extproc address %q: want host:port or unix:/path", c.ExtProcAddr))
	}
	switch c.DataPlane {
	case DataPlaneBuiltin, DataPlaneEnvoy, DataPlaneNone:
	default:
		errs = append(errs, fmt.Errorf("data plane %q: want builtin, envoy or none", c.DataPlane))
	}
	if len(c.MasterKey) != 32 {
		errs = append(errs, errors.New("master key must be 32 bytes"))
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, errors.New("max body bytes must be positive"))
	}
	if c.ReservationLease < 0 {
		errs = append(errs, errors.New("reservation lease must not be negative"))
	}
	if c.BatchPollInterval < 0 {
		errs = append(errs, errors.New("batch poll interval must not be negative"))
	}
	if c.Reconcile.Interval > 0 {
		if err := c.Reconcile.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.validateTLS()...)
	return errors.Join(errs...)
}
