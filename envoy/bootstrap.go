package envoy

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"text/template"
)

// ErrInvalidBootstrap is wrapped by every error Bootstrap returns.
var ErrInvalidBootstrap = errors.New("envoy: invalid bootstrap options")

// Bootstrap defaults.
const (
	DefaultNodeID      = "tollgate-envoy"
	DefaultNodeCluster = "tollgate"
	DefaultAdmin       = "127.0.0.1:9901"
)

// BootstrapOptions configure Bootstrap. Every field is a string or a number
// so that each maps to one command-line flag; zero fields take defaults.
type BootstrapOptions struct {
	// NodeID identifies this Envoy to the xDS server (node.id). Every node
	// gets the same resources; the id shows in logs. Default DefaultNodeID.
	NodeID string `yaml:"node_id"`
	// NodeCluster is node.cluster. Default DefaultNodeCluster.
	NodeCluster string `yaml:"node_cluster"`
	// XDS is the ADS server: "host:port", or a Unix socket as "unix:/path",
	// "unix:///path" or "/path". Required.
	XDS string `yaml:"xds"`
	// ExtProc, when set, is this Envoy's own ext_proc processor (same forms
	// as XDS), defined as the static cluster ExtProcCluster. A static cluster
	// cannot be replaced over CDS, so this overrides the ext_proc address the
	// xDS server sends: use it when each Envoy has its own sidecar processor
	// at an address the control plane does not know. Empty: the xDS server's
	// ExtProcCluster is used.
	ExtProc string `yaml:"ext_proc"`
	// Admin is the admin interface address; it must be a loopback IP
	// address. Default DefaultAdmin.
	Admin string `yaml:"admin"`
	// CircuitBreakerMax is the circuit-breaker limit of the static ext_proc
	// cluster. Default DefaultCircuitBreakerMax.
	CircuitBreakerMax uint32 `yaml:"circuit_breaker_max"`
	// TLSCA, TLSCert and TLSKey (files on Envoy's host; all three or none)
	// make every cluster to a host:port (xDS, and ExtProc) use TLS: Envoy
	// presents TLSCert as its client certificate and accepts a server
	// certificate that chains to TLSCA and names the host dialled (a DNS
	// name or an IP address). A Unix socket stays plaintext. The ext_proc
	// cluster the xDS server sends carries no certificate, so TLS needs
	// ExtProc.
	TLSCA   string `yaml:"tls_ca"`
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
}

// tlsFiles are the files of an UpstreamTlsContext.
type tlsFiles struct{ CA, Cert, Key string }

// endpoint is a parsed address for the template.
type endpoint struct {
	Name string // cluster name
	Pipe string // Unix socket path, or ""
	Host string
	Port int
	DNS  bool // Host is a hostname: STRICT_DNS
	TLS  *tlsFiles
}

type bootstrapData struct {
	NodeID, NodeCluster string
	XDS                 endpoint
	ExtProc             *endpoint
	AdminHost           string
	AdminPort           int
	CircuitBreakerMax   uint32
	ExtProcBufferLimit  int
}

// Bootstrap renders the Envoy bootstrap as YAML: the node, the static ADS
// cluster (XDSCluster, HTTP/2), LDS and CDS over ADS, the admin interface on
// loopback and a layered runtime (static layer, then admin layer), and the
// static ExtProcCluster when ExtProc is set.
func Bootstrap(opts BootstrapOptions) ([]byte, error) {
	d := bootstrapData{
		NodeID:             orDefault(opts.NodeID, DefaultNodeID),
		NodeCluster:        orDefault(opts.NodeCluster, DefaultNodeCluster),
		CircuitBreakerMax:  opts.CircuitBreakerMax,
		ExtProcBufferLimit: ExtProcBufferLimitBytes,
	}
	if d.CircuitBreakerMax == 0 {
		d.CircuitBreakerMax = DefaultCircuitBreakerMax
	}
	if opts.XDS == "" {
		return nil, fmt.Errorf("%w: the xDS server address is required", ErrInvalidBootstrap)
	}
	var err error
	if d.XDS, err = parseEndpoint("xds", XDSCluster, opts.XDS); err != nil {
		return nil, err
	}
	if opts.ExtProc != "" {
		ep, err := parseEndpoint("ext_proc", ExtProcCluster, opts.ExtProc)
		if err != nil {
			return nil, err
		}
		d.ExtProc = &ep
	}
	if err := setTLS(opts, &d); err != nil {
		return nil, err
	}
	admin, err := netip.ParseAddrPort(orDefault(opts.Admin, DefaultAdmin))
	if err != nil || !admin.Addr().IsLoopback() || admin.Port() == 0 {
		return nil, fmt.Errorf("%w: admin %q must be a loopback IP address and port", ErrInvalidBootstrap, opts.Admin)
	}
	d.AdminHost, d.AdminPort = admin.Addr().String(), int(admin.Port())

	var buf bytes.Buffer
	if err := bootstrapTemplate.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("envoy: render bootstrap: %w", err)
	}
	return append(bytes.TrimRight(buf.Bytes(), "\n"), '\n'), nil
}

// parseEndpoint accepts host:port, unix:/path, unix:///path, unix:@abstract
// and /path.
func parseEndpoint(what, name, s string) (endpoint, error) {
	if path, ok := strings.CutPrefix(s, "unix://"); ok {
		s = "unix:" + path
	}
	if path, ok := strings.CutPrefix(s, "unix:"); ok || strings.HasPrefix(s, "/") {
		if !ok {
			path = s
		}
		if !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "@") {
			return endpoint{}, fmt.Errorf("%w: %s %q: the socket path must be absolute", ErrInvalidBootstrap, what, s)
		}
		if !ValidSocketPath(path) {
			return endpoint{}, fmt.Errorf("%w: %s %q: not a usable socket path", ErrInvalidBootstrap, what, s)
		}
		return endpoint{Name: name, Pipe: path}, nil
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return endpoint{}, fmt.Errorf("%w: %s %q: %w", ErrInvalidBootstrap, what, s, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return endpoint{}, fmt.Errorf("%w: %s %q: bad port", ErrInvalidBootstrap, what, s)
	}
	if host == "" {
		return endpoint{}, fmt.Errorf("%w: %s %q: the host is missing", ErrInvalidBootstrap, what, s)
	}
	if !ValidHost(host) {
		return endpoint{}, fmt.Errorf("%w: %s %q: bad host", ErrInvalidBootstrap, what, s)
	}
	_, ipErr := netip.ParseAddr(host)
	return endpoint{Name: name, Host: host, Port: port, DNS: ipErr != nil}, nil
}

// setTLS puts the TLS files on the clusters to a host:port.
func setTLS(opts BootstrapOptions, d *bootstrapData) error {
	if opts.TLSCA == "" && opts.TLSCert == "" && opts.TLSKey == "" {
		return nil
	}
	if opts.TLSCA == "" || opts.TLSCert == "" || opts.TLSKey == "" {
		return fmt.Errorf("%w: TLS needs the CA, the client certificate and its key together", ErrInvalidBootstrap)
	}
	if d.ExtProc == nil {
		return fmt.Errorf("%w: with TLS, give the ext_proc address (the ext_proc cluster sent over xDS has no client certificate)", ErrInvalidBootstrap)
	}
	files := &tlsFiles{CA: opts.TLSCA, Cert: opts.TLSCert, Key: opts.TLSKey}
	for _, ep := range []*endpoint{&d.XDS, d.ExtProc} {
		if ep.Pipe == "" {
			ep.TLS = files
		}
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// quote renders s as a YAML double-quoted scalar, so no option can inject
// YAML: printable ASCII stays, everything else is a \u or \U escape
// (invalid UTF-8 becomes U+FFFD).
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var bootstrapTemplate = template.Must(template.New("bootstrap").Funcs(template.FuncMap{"q": quote}).Parse(
	`# Envoy bootstrap generated by Tollgate (tollgate envoy bootstrap).
# Listeners, routes and clusters come from the Tollgate xDS server over ADS.
node:
  id: {{q .NodeID}}
  cluster: {{q .NodeCluster}}
admin:
  address:
    socket_address:
      address: {{q .AdminHost}}
      port_value: {{.AdminPort}}
dynamic_resources:
  ads_config:
    api_type: GRPC
    transport_api_version: V3
    set_node_on_first_message_only: true
    grpc_services:
      - envoy_grpc:
          cluster_name: {{q .XDS.Name}}
  lds_config:
    ads: {}
    resource_api_version: V3
  cds_config:
    ads: {}
    resource_api_version: V3
static_resources:
  clusters:
{{- template "cluster" .XDS}}
      connect_timeout: 1s
{{- if .ExtProc}}
{{- template "cluster" .ExtProc}}
      connect_timeout: 1s
      per_connection_buffer_limit_bytes: {{.ExtProcBufferLimit}}
      circuit_breakers:
        thresholds:
          - priority: DEFAULT
            max_connections: {{.CircuitBreakerMax}}
            max_pending_requests: {{.CircuitBreakerMax}}
            max_requests: {{.CircuitBreakerMax}}
            max_retries: {{.CircuitBreakerMax}}
{{- end}}
layered_runtime:
  layers:
    - name: static
      static_layer: {}
    - name: admin
      admin_layer: {}
{{define "cluster"}}
    - name: {{q .Name}}
      type: {{if .DNS}}STRICT_DNS
      dns_lookup_family: V4_PREFERRED{{else}}STATIC{{end}}
      typed_extension_protocol_options:
        envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
          "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
          explicit_http_config:
            http2_protocol_options:
              connection_keepalive:
                interval: 30s
                timeout: 10s
      load_assignment:
        cluster_name: {{q .Name}}
        endpoints:
          - lb_endpoints:
              - endpoint:
                  address:
{{- if .Pipe}}
                    pipe:
                      path: {{q .Pipe}}
{{- else}}
                    socket_address:
                      address: {{q .Host}}
                      port_value: {{.Port}}
{{- end}}
{{- with .TLS}}
      transport_socket:
        name: envoy.transport_sockets.tls
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
{{- if $.DNS}}
          sni: {{q $.Host}}
{{- end}}
          common_tls_context:
            tls_certificates:
              - certificate_chain:
                  filename: {{q .Cert}}
                private_key:
                  filename: {{q .Key}}
            validation_context:
              trusted_ca:
                filename: {{q .CA}}
              match_typed_subject_alt_names:
                - san_type: {{if $.DNS}}DNS{{else}}IP_ADDRESS{{end}}
                  matcher:
                    exact: {{q $.Host}}
{{- end}}
{{- end}}
`))
