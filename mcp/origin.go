package mcp

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// DNS-rebinding protection (2025-11-25 transports, "Security Warning":
// servers MUST validate the Origin header, and answer 403 when it is present
// and invalid). A page on evil.example whose name is rebound to 127.0.0.1
// makes the browser send requests to a gateway on the developer's machine
// with Host and Origin evil.example: the Host check refuses them even when
// the page sends no Origin. Every request also needs a key, which such a page
// should not have; the check does not rely on it.

// CodeHostNotAllowed is the JSON-RPC error code (with HTTP 403) of a request
// whose Host or Origin names a host outside the allow-list.
const CodeHostNotAllowed = -32048

// LoopbackHosts is the allow-list of a gateway that listens on loopback.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// DefaultAllowedHosts is the allow-list a gateway whose data plane listens on
// listen starts with: LoopbackHosts on a loopback address (the developer's
// machine, where DNS rebinding is the threat), else every host ("*": a
// shared gateway is reached under names the operator knows; name them with
// WithAllowedHosts to check them).
func DefaultAllowedHosts(listen string) []string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	if isLoopback(host) {
		return LoopbackHosts
	}
	return []string{"*"}
}

// WithAllowedHosts sets the host names /mcp answers for: a request whose Host
// header, or whose Origin header when it has one, names another host is
// refused with HTTP 403. Entries are host names or IP addresses (no port),
// "*.example.com" for the subdomains of example.com, or "*" for any host.
// Without this option (or with "*") nothing is checked.
func WithAllowedHosts(hosts []string) Option {
	return func(h *Handler) {
		h.hosts = nil
		for _, s := range hosts {
			s = strings.ToLower(strings.Trim(strings.TrimSpace(s), "[]"))
			if s == "*" {
				h.hosts = nil
				return
			}
			if s != "" {
				h.hosts = append(h.hosts, s)
			}
		}
	}
}

// hostAllowed reports whether r's Host and Origin are on the allow-list.
func (h *Handler) hostAllowed(r *http.Request) bool {
	if len(h.hosts) == 0 {
		return true
	}
	if !h.allowedHost(hostOnly(r.Host)) {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" { // "null" among them (sandboxed pages, files)
		return false
	}
	return h.allowedHost(strings.ToLower(u.Hostname()))
}

func (h *Handler) allowedHost(host string) bool {
	if host == "" {
		return false
	}
	for _, a := range h.hosts {
		if a == host {
			return true
		}
		if sub, ok := strings.CutPrefix(a, "*."); ok && strings.HasSuffix(host, "."+sub) {
			return true
		}
	}
	return false
}

// hostOnly is the lower-cased host of a Host header, without port or
// brackets.
func hostOnly(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

func isLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
