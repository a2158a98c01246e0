package xds

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/envoy"
)

// Errors returned by Build and Server.Update. Every error wraps one of them.
var (
	// ErrInvalidInput means the Input cannot be turned into valid resources.
	ErrInvalidInput = errors.New("xds: invalid input")
	// ErrInvalidResource means a generated resource failed Envoy's validation
	// rules (protoc-gen-validate) or the snapshot is not consistent. It is a
	// bug in this package, never a user error.
	ErrInvalidResource = errors.New("xds: invalid resource")
)

// Defaults applied by Build to zero fields of Input.
const (
	DefaultListenerHost        = "0.0.0.0"
	DefaultListenerPort        = 8080
	DefaultMaxRequestBodyBytes = 32 << 20
	DefaultMessageTimeout      = 5 * time.Second
	DefaultMaxMessageTimeout   = 60 * time.Second
	DefaultRouteIdleTimeout    = 300 * time.Second
	DefaultPerTryIdleTimeout   = 300 * time.Second
	DefaultConnectTimeout      = 5 * time.Second
	DefaultNumRetries          = 2
	DefaultCircuitBreakerMax   = envoy.DefaultCircuitBreakerMax
)

// ExtProcBufferLimitBytes is the per-connection buffer limit of the ext_proc
// cluster.
const ExtProcBufferLimitBytes = envoy.ExtProcBufferLimitBytes

// Input is everything the xDS resources are built from. The gateway fills it
// from the admin store; zero fields take the Default… values.
type Input struct {
	// Listener is where Envoy (or the built-in data plane) accepts clients:
	// an IP address ("localhost" is taken as 127.0.0.1), default 0.0.0.0:8080.
	Listener Address `yaml:"listener"`
	// ExtProc is the ext_proc processor: a TCP host:port or a Unix socket Path.
	// An unspecified IP (0.0.0.0, ::), as in a listen address, becomes
	// loopback.
	ExtProc Address `yaml:"ext_proc"`
	// MCP is the gateway's MCP service (host:port), the cluster of the /mcp
	// route; nil: no MCP route (xds/mcp.go).
	MCP *Address `yaml:"mcp"`
	// MaxRequestBodyBytes caps request bodies (413 above): the listener's
	// per_connection_buffer_limit_bytes and every route's
	// request_body_buffer_limit. At most math.MaxUint32.
	MaxRequestBodyBytes int64 `yaml:"max_request_body_bytes"`
	// Upstreams are the provider deployments, one route and cluster each.
	Upstreams []Upstream `yaml:"upstreams"`
	// Groups are the model groups; those that retry elsewhere get per-try
	// routes (pertry.go). Empty: none (every request goes to one
	// deployment's route).
	Groups []Group `yaml:"groups"`

	// MessageTimeout is ext_proc's per-message timeout.
	MessageTimeout time.Duration `yaml:"message_timeout"`
	// MaxMessageTimeout is the most the processor may extend one message to.
	MaxMessageTimeout time.Duration `yaml:"max_message_timeout"`
	// RouteIdleTimeout bounds stalls on a route (and the HCM stream idle
	// timeout); the route timeout itself is off so long streams survive.
	RouteIdleTimeout time.Duration `yaml:"route_idle_timeout"`
	// PerTryTimeout bounds each upstream attempt; 0 leaves it unset, which is
	// the right choice for long streams.
	PerTryTimeout time.Duration `yaml:"per_try_timeout"`
	// PerTryIdleTimeout bounds the silence of each upstream attempt, including
	// the time to first byte.
	PerTryIdleTimeout time.Duration `yaml:"per_try_idle_timeout"`
	// ConnectTimeout is the upstream TCP (and TLS) connect timeout.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// NumRetries is the retry budget for connect failures and refused streams.
	NumRetries uint32 `yaml:"num_retries"`
	// CircuitBreakerMax is max_connections, max_pending_requests,
	// max_requests and max_retries on every cluster (Envoy's default is 1024).
	CircuitBreakerMax uint32 `yaml:"circuit_breaker_max"`
}

// Address is a TCP address (Host and Port) or a Unix socket (Path).
type Address struct {
	Host string `yaml:"host"`
	Port uint32 `yaml:"port"`
	Path string `yaml:"path"`
}

// String returns host:port or unix:path.
func (a Address) String() string {
	if a.Path != "" {
		return "unix:" + a.Path
	}
	return a.hostPort()
}

func (a Address) hostPort() string {
	return net.JoinHostPort(a.Host, strconv.FormatUint(uint64(a.Port), 10))
}

// ParseAddress parses the flag forms of an address: host:port, or a Unix
// socket as unix:/path, unix:///path, unix:@abstract or /path.
func ParseAddress(s string) (Address, error) {
	if path, ok := strings.CutPrefix(s, "unix://"); ok {
		s = "unix:" + path
	}
	if path, ok := strings.CutPrefix(s, "unix:"); ok || strings.HasPrefix(s, "/") {
		if !ok {
			path = s
		}
		if !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, "@") {
			return Address{}, fmt.Errorf("%w: address %q: the socket path must be absolute", ErrInvalidInput, s)
		}
		return Address{Path: path}, nil
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return Address{}, fmt.Errorf("%w: address %q: %w", ErrInvalidInput, s, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return Address{}, fmt.Errorf("%w: address %q: bad port", ErrInvalidInput, s)
	}
	if host == "" || !envoy.ValidHost(host) {
		return Address{}, fmt.Errorf("%w: address %q: bad host", ErrInvalidInput, s)
	}
	return Address{Host: host, Port: uint32(port)}, nil
}

// Upstream is one provider deployment.
type Upstream struct {
	// Deployment is the deployment id: the value of envoy.RouteHeader and the
	// suffix of envoy.ClusterName.
	Deployment string `yaml:"deployment"`
	// Scheme is "https" or "http".
	Scheme string `yaml:"scheme"`
	Host   string `yaml:"host"`
	// Port defaults to 443 for https and 80 for http.
	Port uint32 `yaml:"port"`
	// SNI is the TLS server name, and the DNS name the certificate must
	// carry; it defaults to Host for https. An IP Host without SNI is
	// checked against the certificate's IP SANs.
	SNI string `yaml:"sni"`
	// HTTP2 says the provider offers HTTP/2: ALPN (auto_config) for https,
	// prior knowledge (h2c) for http.
	HTTP2 bool `yaml:"http2"`
	// ConnectTimeout is the deployment's own connect timeout; 0 takes
	// Input.ConnectTimeout.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// Timeout bounds a request on the deployment to the end of its
	// response (the route's timeout); 0: none (long streams).
	Timeout time.Duration `yaml:"timeout"`
	// FirstByteTimeout bounds each attempt until its response starts (the
	// route's per_try_timeout, retried on another deployment); 0 takes
	// Input.PerTryTimeout.
	FirstByteTimeout time.Duration `yaml:"first_byte_timeout"`
	// AllowedFails and Cooldown are the deployment's cooldown policy: on
	// per-try routes, the outlier detection of its cluster (0: defaults).
	AllowedFails int           `yaml:"allowed_fails"`
	Cooldown     time.Duration `yaml:"cooldown"`
}

// deploymentIDRe restricts deployment ids to characters that are safe in
// cluster names, stat names and header values.
var deploymentIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// normalize returns a copy of in with defaults applied, or an error wrapping
// ErrInvalidInput.
func normalize(in *Input) (*Input, error) {
	if in == nil {
		return nil, fmt.Errorf("%w: nil input", ErrInvalidInput)
	}
	out := *in
	out.Upstreams = append([]Upstream(nil), in.Upstreams...)
	out.Groups = append([]Group(nil), in.Groups...)
	if out.Listener.Path != "" {
		return nil, fmt.Errorf("%w: listener: Unix sockets are not supported", ErrInvalidInput)
	}
	switch out.Listener.Host {
	case "":
		out.Listener.Host = DefaultListenerHost
	case "localhost":
		out.Listener.Host = "127.0.0.1"
	}
	if out.Listener.Port == 0 {
		out.Listener.Port = DefaultListenerPort
	}
	if err := checkIPPort("listener", out.Listener); err != nil {
		return nil, err
	}
	if err := checkExtProc(out.ExtProc); err != nil {
		return nil, err
	}
	// A listen-style address (0.0.0.0, ::) means "this host": dial loopback.
	if ip, err := netip.ParseAddr(out.ExtProc.Host); err == nil && ip.IsUnspecified() {
		out.ExtProc.Host = "127.0.0.1"
		if ip.Is6() {
			out.ExtProc.Host = "::1"
		}
	}
	if out.MCP != nil {
		m := *out.MCP
		out.MCP = &m
	}
	if err := normalizeMCP(out.MCP); err != nil {
		return nil, err
	}
	if out.MaxRequestBodyBytes == 0 {
		out.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if out.MaxRequestBodyBytes < 0 || out.MaxRequestBodyBytes > math.MaxUint32 {
		return nil, fmt.Errorf("%w: max_request_body_bytes %d outside 1..%d",
			ErrInvalidInput, out.MaxRequestBodyBytes, uint32(math.MaxUint32))
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"message_timeout", &out.MessageTimeout, DefaultMessageTimeout},
		{"max_message_timeout", &out.MaxMessageTimeout, DefaultMaxMessageTimeout},
		{"route_idle_timeout", &out.RouteIdleTimeout, DefaultRouteIdleTimeout},
		{"per_try_timeout", &out.PerTryTimeout, 0},
		{"per_try_idle_timeout", &out.PerTryIdleTimeout, DefaultPerTryIdleTimeout},
		{"connect_timeout", &out.ConnectTimeout, DefaultConnectTimeout},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("%w: %s %s is negative", ErrInvalidInput, d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	// ext_proc accepts message_timeout and max_message_timeout up to 3600s.
	if out.MessageTimeout > time.Hour || out.MaxMessageTimeout > time.Hour {
		return nil, fmt.Errorf("%w: ext_proc message timeouts must be at most 1h", ErrInvalidInput)
	}
	if out.MaxMessageTimeout < out.MessageTimeout {
		return nil, fmt.Errorf("%w: max_message_timeout %s below message_timeout %s",
			ErrInvalidInput, out.MaxMessageTimeout, out.MessageTimeout)
	}
	if out.NumRetries == 0 {
		out.NumRetries = DefaultNumRetries
	}
	if out.CircuitBreakerMax == 0 {
		out.CircuitBreakerMax = DefaultCircuitBreakerMax
	}
	seen := make(map[string]bool, len(out.Upstreams))
	for i := range out.Upstreams {
		u := &out.Upstreams[i]
		if err := normalizeUpstream(u); err != nil {
			return nil, err
		}
		if seen[u.Deployment] {
			return nil, fmt.Errorf("%w: deployment %q listed twice", ErrInvalidInput, u.Deployment)
		}
		seen[u.Deployment] = true
	}
	return &out, nil
}

func normalizeUpstream(u *Upstream) error {
	if !deploymentIDRe.MatchString(u.Deployment) {
		return fmt.Errorf("%w: deployment id %q must match %s", ErrInvalidInput, u.Deployment, deploymentIDRe)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch u.Scheme {
	case "https":
		if u.Port == 0 {
			u.Port = 443
		}
		if u.SNI == "" && !isIP(u.Host) {
			u.SNI = u.Host
		}
	case "http":
		if u.Port == 0 {
			u.Port = 80
		}
		if u.SNI != "" {
			return fmt.Errorf("%w: deployment %q: sni set on an http upstream", ErrInvalidInput, u.Deployment)
		}
	default:
		return fmt.Errorf("%w: deployment %q: scheme %q is not http or https", ErrInvalidInput, u.Deployment, u.Scheme)
	}
	if !envoy.ValidHost(u.Host) {
		return fmt.Errorf("%w: deployment %q: host %q is not a hostname or IP address", ErrInvalidInput, u.Deployment, u.Host)
	}
	if u.SNI != "" && (isIP(u.SNI) || !envoy.ValidHost(u.SNI)) {
		return fmt.Errorf("%w: deployment %q: sni %q is not a DNS name", ErrInvalidInput, u.Deployment, u.SNI)
	}
	if u.Port > 65535 {
		return fmt.Errorf("%w: deployment %q: port %d out of range", ErrInvalidInput, u.Deployment, u.Port)
	}
	return nil
}

func checkIPPort(what string, a Address) error {
	if !isIP(a.Host) {
		return fmt.Errorf("%w: %s host %q must be an IP address", ErrInvalidInput, what, a.Host)
	}
	if a.Port == 0 || a.Port > 65535 {
		return fmt.Errorf("%w: %s port %d out of range", ErrInvalidInput, what, a.Port)
	}
	return nil
}

func checkExtProc(a Address) error {
	switch {
	case a.Path != "" && (a.Host != "" || a.Port != 0):
		return fmt.Errorf("%w: ext_proc: set either path or host and port", ErrInvalidInput)
	case a.Path != "":
		if !strings.HasPrefix(a.Path, "/") && !strings.HasPrefix(a.Path, "@") {
			return fmt.Errorf("%w: ext_proc path %q must be absolute (or @abstract)", ErrInvalidInput, a.Path)
		}
		if !envoy.ValidSocketPath(a.Path) {
			return fmt.Errorf("%w: ext_proc path %q is not a usable socket path", ErrInvalidInput, a.Path)
		}
		return nil
	case a.Host == "":
		return fmt.Errorf("%w: ext_proc address is missing", ErrInvalidInput)
	case !envoy.ValidHost(a.Host):
		return fmt.Errorf("%w: ext_proc host %q is not a hostname or IP address", ErrInvalidInput, a.Host)
	case a.Port == 0 || a.Port > 65535:
		return fmt.Errorf("%w: ext_proc port %d out of range", ErrInvalidInput, a.Port)
	}
	return nil
}

func isIP(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}
