package h1

import (
	"io"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Field is one header field: a name (lower-case as Envoy's codec writes it,
// unless said otherwise) and its value.
type Field struct {
	Key, Value string
}

// Fields is a header block in wire order.
type Fields []Field

// Value returns the first value of the field named key (lower-case), or "".
func (f Fields) Value(key string) string {
	for _, kv := range f {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

// FieldWriter is what header fields are written to: a bytes.Buffer or a
// bufio.Writer.
type FieldWriter interface {
	io.StringWriter
	io.ByteWriter
}

// WriteField writes "k: v\r\n" with any CR or LF in v turned into a space, as
// net/http does.
func WriteField(w FieldWriter, k, v string) {
	_, _ = w.WriteString(k)
	_, _ = w.WriteString(": ")
	if !strings.ContainsAny(v, "\r\n") {
		_, _ = w.WriteString(v)
	} else {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c == '\r' || c == '\n' {
				_ = w.WriteByte(' ')
			} else {
				_ = w.WriteByte(c)
			}
		}
	}
	_, _ = w.WriteString("\r\n")
}

// lowerNames maps the canonical form of common header names to the
// lower-case form Envoy and the filter use, so that converting them costs no
// allocation.
var lowerNames = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"accept", "accept-encoding", "accept-language", "anthropic-beta", "anthropic-version",
		"api-key", "authorization", "cache-control", "connection", "content-encoding",
		"content-length", "content-type", "cookie", "date", "host", "keep-alive",
		"openai-organization", "openai-processing-ms", "openai-project", "openai-version",
		"origin", "referer", "request-id", "retry-after", "server", "set-cookie",
		"transfer-encoding", "user-agent", "vary", "x-api-key", "x-forwarded-for",
		"x-forwarded-proto", "x-request-id", "x-stainless-arch", "x-stainless-async",
		"x-stainless-lang", "x-stainless-os", "x-stainless-package-version",
		"x-stainless-retry-count", "x-stainless-runtime", "x-stainless-runtime-version",
		"x-stainless-timeout",
		"x-ratelimit-limit-requests", "x-ratelimit-limit-tokens", "x-ratelimit-remaining-requests",
		"x-ratelimit-remaining-tokens", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens",
		"x-tollgate-request-id", "x-tollgate-cost",
	} {
		m[http.CanonicalHeaderKey(k)] = k
	}
	return m
}()

// LowerKey is the header name k in lower case, without an allocation for
// common names.
func LowerKey(k string) string {
	if l, ok := lowerNames[k]; ok {
		return l
	}
	return strings.ToLower(k)
}

// HopByHop reports whether the lower-case header name k is a hop-by-hop
// field of RFC 9110 §7.6.1 (and the legacy proxy-connection and
// keep-alive): it describes one connection and is never forwarded.
func HopByHop(k string) bool {
	switch k {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer":
		return true
	}
	return false
}

// ConnectionValues are the values of f's Connection fields; nil when it has
// none (the usual case, which costs nothing).
func (f Fields) ConnectionValues() []string {
	var vs []string
	for _, kv := range f {
		if kv.Key == "connection" {
			vs = append(vs, kv.Value)
		}
	}
	return vs
}

// Nominated reports whether the lower-case field name k is listed in conn,
// the values of a message's Connection fields: RFC 9110 §7.6.1 makes every
// field a Connection field names hop-by-hop, so a proxy removes it before
// forwarding the message (docs/dataplane.md H1).
func Nominated(conn []string, k string) bool {
	return conn != nil && httpguts.HeaderValuesContainsToken(conn, k)
}
