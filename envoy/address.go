package envoy

import (
	"net/netip"
	"regexp"
	"strings"
	"unicode/utf8"
)

// hostnameRe is a DNS name: labels of letters, digits and hyphens.
var hostnameRe = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)

// ValidHost reports whether host is an IP address or a DNS name Envoy can
// resolve: at most 253 bytes of letters, digits, hyphens and dots.
func ValidHost(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return len(host) <= 253 && hostnameRe.MatchString(host)
}

// ValidSocketPath reports whether path fits a Unix socket address: valid
// UTF-8 without NUL, in the 108 bytes of sun_path with the terminating NUL.
// Whether it is absolute (or @abstract) is the caller's check.
func ValidSocketPath(path string) bool {
	return utf8.ValidString(path) && !strings.ContainsRune(path, 0) && len(path) <= 107
}
