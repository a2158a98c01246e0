package routing

import (
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The processor's signed values: the retry token (an Attempt's payload) and
// per-try routing's signed client header (docs/envoy.md, "Retries" and
// "Retries across deployments"). Both are signed with one key, which a
// gateway shares between its replicas (from the store); a client at the data
// plane or an attacker at the ext_proc port does not have it. The processor
// keeps the key and the header names; the payloads and their checks are here
// so that they are tested without a processor.

// NewTokenKey is a random signing key, for a processor given none: a token
// signed by another processor is then ignored (routed as a first attempt).
func NewTokenKey() []byte {
	k := make([]byte, 32)
	_, _ = crand.Read(k)
	return k
}

// SignToken is the retry token of an Attempt's payload: the payload and its
// truncated HMAC-SHA256 under key.
func SignToken(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return payload + "&s=" + hex.EncodeToString(m.Sum(nil)[:16])
}

// ParseToken reads a retry token signed with key; the zero Attempt when it
// is not valid (forged, another key, malformed).
func ParseToken(key []byte, v string) Attempt {
	payload, sig, ok := strings.Cut(v, "&s=")
	if !ok || !hmac.Equal([]byte(SignToken(key, payload)), []byte(v)) || sig == "" {
		return Attempt{}
	}
	a, _ := ParseAttempt(payload)
	return a
}

// ClientHeaderTTL bounds how long a signed client header is honoured: a
// retry comes within the route's timeout (10 minutes by default).
const ClientHeaderTTL = time.Hour

// ClientFields are the client's request values a signed client header
// carries to the tries of a per-try route: Envoy runs upstream filters on
// the router's own request header map and does not restore it on a retry,
// so a try after the first sees the previous try's changes.
type ClientFields struct {
	KeyID, Path, Customer, Version, Beta, Traceparent string
	Expires                                           int64 // unix seconds
	GoogleKey                                         bool  // the key came in x-goog-api-key or ?key=
}

// nClientFields is the number of fields of a signed client header.
const nClientFields = 8

// SignClient is the signed client header of f:
//
//	base64url(key id NUL expiry NUL path NUL customer NUL anthropic-version
//	          NUL anthropic-beta NUL traceparent NUL flags) "." base64url(mac)
//
// with mac HMAC-SHA256 over the payload keyed by key. The path loses a ?key=
// (the client's Gemini key): the header reaches the provider, to which it is
// opaque.
func SignClient(key []byte, f ClientFields) string {
	flags := ""
	if f.GoogleKey {
		flags = "g"
	}
	payload := strings.Join([]string{
		f.KeyID, strconv.FormatInt(f.Expires, 10), WithoutQueryKey(f.Path), f.Customer, f.Version, f.Beta,
		f.Traceparent, flags,
	}, "\x00")
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + clientMAC(key, payload)
}

// ParseClient checks a signed client header against key and the time now:
// its fields, or ok false when it is malformed, forged or expired.
func ParseClient(key []byte, v string, now time.Time) (f ClientFields, ok bool) {
	enc, mac, found := strings.Cut(v, ".")
	if !found || mac == "" {
		return f, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return f, false
	}
	payload := string(raw)
	p := strings.Split(payload, "\x00")
	if len(p) != nClientFields || p[0] == "" || !strings.HasPrefix(p[2], "/") {
		return f, false
	}
	exp, err := strconv.ParseInt(p[1], 10, 64)
	if err != nil {
		return f, false
	}
	if exp < now.Unix() || !hmac.Equal([]byte(clientMAC(key, payload)), []byte(mac)) {
		return f, false
	}
	return ClientFields{
		KeyID: p[0], Expires: exp, Path: p[2], Customer: p[3], Version: p[4], Beta: p[5],
		Traceparent: p[6], GoogleKey: p[7] == "g",
	}, true
}

// clientMAC signs a client header's payload with key.
func clientMAC(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// WithoutQueryKey is path without its key query parameter (a Gemini
// client's secret must not travel in a signed header nor a pass-through
// path).
func WithoutQueryKey(path string) string {
	p, q, ok := strings.Cut(path, "?")
	if !ok || !strings.Contains(q, "key=") {
		return path
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		return p
	}
	v.Del("key")
	if len(v) == 0 {
		return p
	}
	return p + "?" + v.Encode()
}
