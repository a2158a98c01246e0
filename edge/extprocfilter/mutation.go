package extprocfilter

import (
	"net"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// checkOp is the kind of header change being checked (mutation_rules).
type checkOp int

const (
	opSet checkOp = iota
	opAppend
	opRemove
)

// checkResult is the verdict of the mutation rules on one header change.
type checkResult int

const (
	checkOK checkResult = iota
	checkIgnore
	checkFail
)

// check applies the HeaderMutationRules to one change (R2.9.6–9). A denied
// change is ignored, or an error with disallow_is_error.
func (c *Config) check(op checkOp, name, value string) checkResult {
	if c.allowed(op, name, value) {
		return checkOK
	}
	if c.DisallowIsError {
		return checkFail
	}
	return checkIgnore
}

func (c *Config) allowed(op checkOp, name, value string) bool {
	system := strings.HasPrefix(name, ":")
	// R2.9.7: never remove ':' headers or host, never append to ':' headers.
	if op == opRemove && (system || name == "host") {
		return false
	}
	if op == opAppend && system {
		return false
	}
	switch {
	case c.DisallowAll:
		return false
	case !c.AllowAllRouting && (name == "host" || name == ":authority" || name == ":method" || name == ":scheme"):
		return false
	case c.DisallowSystem && system:
		return false
	case !c.AllowEnvoy && strings.HasPrefix(name, "x-envoy"):
		return false
	}
	if op == opRemove {
		return true
	}
	// R2.9.8: value checks.
	switch name {
	case ":status":
		n, err := strconv.ParseUint(value, 10, 32)
		return err == nil && n >= 200
	case "host", ":authority":
		return validAuthority(value)
	case ":scheme":
		return value == "http" || value == "https"
	}
	return true
}

func validAuthority(v string) bool {
	if v == "" || strings.ContainsAny(v, "/?#@ \t") {
		return false
	}
	host := v
	if h, port, err := net.SplitHostPort(v); err == nil {
		if _, perr := strconv.ParseUint(port, 10, 16); perr != nil {
			return false
		}
		host = h
	}
	return host != ""
}

// validHeaderName: a token (RFC 9110) for ordinary headers, where Envoy allows
// upper case; lower-case token characters after the ':' of a pseudo-header.
func validHeaderName(name string) bool {
	rest, pseudo := strings.CutPrefix(name, ":")
	if rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		b := rest[i]
		if pseudo && b >= 'A' && b <= 'Z' {
			return false
		}
		if !isTokenChar(b) {
			return false
		}
	}
	return true
}

func isTokenChar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

// validHeaderValue rejects NUL, CR and LF, as nghttp2 does.
func validHeaderValue(v string) bool {
	return !strings.ContainsAny(v, "\x00\r\n")
}

// mutationOptions are the per-call parameters of applyHeaderMutation.
type mutationOptions struct {
	replacing bool // CONTINUE_AND_REPLACE: changing :method is allowed (R2.3)
	stripCL   bool // the direction strips content-length (R2.9.5)
}

// applyHeaderMutation applies m to h the way Envoy's MutationUtils does: size
// check, remove_headers first, then set_headers in order, then the limits of
// the result (R2.9). It returns the number of ignored changes. On error h may
// be partly mutated, as in Envoy; the caller fails the request anyway.
func (c *Config) applyHeaderMutation(h *Headers, m *extprocv3.HeaderMutation, o mutationOptions) (rejected int, err error) {
	limit := c.maxHeadersCount()
	if len(m.GetRemoveHeaders()) > limit || len(m.GetSetHeaders()) > limit {
		return 1, errMutationCount(len(m.GetRemoveHeaders()), len(m.GetSetHeaders()), limit)
	}
	if len(m.GetRemoveHeaders()) > 0 {
		if rejected, err = c.removeHeaders(h, m.GetRemoveHeaders()); err != nil {
			return rejected, err
		}
	}
	*h = slices.Grow(*h, len(m.GetSetHeaders())) // most sets add a header
	for _, sh := range m.GetSetHeaders() {
		r, err := c.setHeader(h, sh, o)
		rejected += r
		if err != nil {
			return rejected, err
		}
	}
	// R2.9.10: limits of the result.
	if len(*h) > limit || h.byteSize() > c.maxHeadersBytes() {
		return rejected + 1, errMutationResult(len(*h), h.byteSize(), limit, c.maxHeadersBytes())
	}
	return rejected, nil
}

// The helpers below keep applyHeaderMutation's frame small: it runs at the
// deepest point of a request's goroutine (under the exchange, the filter's
// call and its reply), and a frame past the goroutine's 4 KiB stack makes
// every waiting request's stack 8 KiB (see bench/README.md, the rush).

// removeHeaders applies remove_headers; it returns how many were rejected.
//
//go:noinline
func (c *Config) removeHeaders(h *Headers, names []string) (rejected int, err error) {
	for _, name := range names {
		if !validHeaderName(name) {
			return rejected + 1, failuref(ErrInvalidMutation, "Invalid character in remove_headers mutation.")
		}
		name = strings.ToLower(name)
		switch c.check(opRemove, name, "") {
		case checkOK:
			h.Del(name)
		case checkIgnore:
			rejected++
		case checkFail:
			return rejected + 1, failuref(ErrDisallowedMutation, "Invalid attempt to remove %s", name)
		}
	}
	return rejected, nil
}

// setHeader applies one of set_headers; it returns 1 when it was rejected.
//
//go:noinline
func (c *Config) setHeader(h *Headers, sh *corev3.HeaderValueOption, o mutationOptions) (rejected int, err error) {
	hv := sh.GetHeader()
	if hv == nil {
		return 0, nil
	}
	// R2.9.3: raw_value only; value-only sets an empty header; both is an error.
	if hv.GetValue() != "" && len(hv.GetRawValue()) != 0 {
		return 1, failuref(ErrInvalidMutation, "Only one of value or raw_value in the HeaderValue message should be set.")
	}
	value := string(hv.GetRawValue())
	if !validHeaderName(hv.GetKey()) || !validHeaderValue(value) {
		return 1, failuref(ErrInvalidMutation, "Invalid character in set_headers mutation.")
	}
	name := strings.ToLower(hv.GetKey())
	if o.stripCL && name == "content-length" {
		return 0, nil // R2.9.5
	}
	// R2.9.4: append defaults to false (overwrite); append_action is ignored.
	appendMode := sh.GetAppend().GetValue()
	op := opSet
	if appendMode && h.Has(name) {
		op = opAppend
	}
	res := c.check(op, name, value)
	if o.replacing && name == ":method" {
		res = checkOK
	}
	switch res {
	case checkOK:
		if appendMode {
			h.addLower(name, value)
		} else {
			h.setLower(name, value)
		}
	case checkIgnore:
		return 1, nil
	case checkFail:
		return 1, failuref(ErrDisallowedMutation, "Invalid attempt to modify %s", name)
	}
	return 0, nil
}

//go:noinline
func errMutationCount(removes, sets, limit int) error {
	return failuref(ErrInvalidMutation, "Header mutation remove header count %d or set header count %d exceed the HCM header countlimit %d",
		removes, sets, limit)
}

//go:noinline
func errMutationResult(count, size, limit, maxBytes int) error {
	return failuref(ErrInvalidMutation, "Header mutation causes end result header count %d or header size %d bytes, exceeding the count limit %d or the size limit %d kilobytes",
		count, size, limit, maxBytes/1024)
}
