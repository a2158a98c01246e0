package extproc

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/translate"
)

// The signed client header of per-try routing (docs/envoy.md, "Retries
// across deployments"). Envoy runs upstream filters on the router's own
// request header map (UpstreamRequest::acceptHeadersFromRouter) and does
// not restore it on a retry (Filter::doRetry copies the body, not the
// headers), so a try after the first sees the previous try's changes: the
// provider's credential instead of the client's key, the translated :path,
// provider headers. The router-level stream therefore writes hdrClient
// (always: a client's own is removed first) with what a try needs of the
// client's request:
//
//	base64url(key id NUL expiry NUL path NUL customer NUL anthropic-version
//	          NUL anthropic-beta NUL traceparent NUL flags) "." base64url(mac)
//
// mac is HMAC-SHA256 over the payload keyed by the key that signs retry
// tokens (retry.go): every replica on one store shares it (WithTokenKey),
// a client at the data plane or an attacker at the ext_proc port does not
// have it. The try then looks the key up by id (KeyLookup), so a key
// revoked or expired since is refused. The path loses
// a ?key= (the client's Gemini key): the header reaches the provider, to
// which it is opaque. A try authenticates from a valid header; without one
// (a router-level stream of an older processor, a catalog without
// KeyLookup) it authenticates the client's credential as before; an
// invalid or expired one is a 401.

// hdrClient carries the signed client header.
const hdrClient = "x-tollgate-client"

// clientHeaderTTL bounds how long a signed client header is honoured: a
// retry comes within the route's timeout (10 minutes by default).
const clientHeaderTTL = time.Hour

// KeyLookup is the optional part of a Catalog that per-try routing's signed
// client header needs. Without it tries authenticate the client's
// credential, which on Envoy only the first try still has.
type KeyLookup interface {
	// KeyByID returns the principal of the key with id when one of its
	// secrets is valid now; ErrUnauthorized when the key is unknown,
	// expired or revoked.
	KeyByID(ctx context.Context, id string) (*Principal, error)
}

// clientFields are the client's request values a signed header carries.
type clientFields struct {
	keyID, path, customer, version, beta, traceparent string
	expires                                           int64
	googleKey                                         bool
}

// nClientFields is the number of fields of a signed client header.
const nClientFields = 8

// signedClient is the router-level stream's hdrClient value ("" when the
// catalog cannot sign: tries then authenticate the client's credential).
func (s *stream) signedClient() string {
	if _, ok := s.p.cat.(KeyLookup); !ok || s.principal == nil || s.principal.KeyID == "" {
		return ""
	}
	flags := ""
	if s.googleKey {
		flags = "g"
	}
	payload := strings.Join([]string{
		s.principal.KeyID, strconv.FormatInt(s.p.now().Add(clientHeaderTTL).Unix(), 10),
		withoutQueryKey(s.path), s.customerHdr, s.anthropicVersion, s.clientBeta(),
		s.report.ClientTraceparent, flags,
	}, "\x00")
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + clientMAC(s.p.retryKey, payload)
}

// clientMAC signs a client header's payload with key.
func clientMAC(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// readTryClient authenticates an upstream try from its signed client
// header, when it has one and the catalog can check it: the principal,
// the client's :path (*path) and the client's values of the headers a
// previous try may have changed. It returns the refusal of an invalid one.
//
// The request a try's fallback redirect recreates comes back to the
// router-level filter with the try's header map: after a retry that holds
// a provider's credential, so a token attempt (its token is the
// processor's own) also authenticates from the signed header it carries.
func (s *stream) readTryClient(ctx context.Context, path **corev3.HeaderValue) *translate.APIError {
	if s.try == nil || s.try.client == "" || !s.isTry() && s.att.N <= 1 {
		return nil
	}
	kl, ok := s.p.cat.(KeyLookup)
	if !ok {
		return nil
	}
	f, payload, mac, ok := parseClientHeader(s.try.client)
	if !ok || f.expires < s.p.now().Unix() || !hmac.Equal([]byte(clientMAC(s.p.retryKey, payload)), []byte(mac)) {
		return errClientHeader()
	}
	pr, err := kl.KeyByID(ctx, f.keyID)
	if err != nil || pr == nil {
		return errClientHeader()
	}
	s.principal, s.try.signed = pr, true
	*path = &corev3.HeaderValue{Key: ":path", RawValue: []byte(f.path)}
	s.customerHdr, s.anthropicVersion, s.try.beta = f.customer, f.version, f.beta
	s.report.ClientTraceparent = f.traceparent
	s.try.googleKey = f.googleKey
	return nil
}

// parseClientHeader splits a signed client header into its fields, its
// payload and its mac.
func parseClientHeader(v string) (f clientFields, payload, mac string, ok bool) {
	enc, mac, found := strings.Cut(v, ".")
	if !found || mac == "" {
		return f, "", "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return f, "", "", false
	}
	payload = string(raw)
	p := strings.Split(payload, "\x00")
	if len(p) != nClientFields || p[0] == "" || !strings.HasPrefix(p[2], "/") {
		return f, "", "", false
	}
	exp, err := strconv.ParseInt(p[1], 10, 64)
	if err != nil {
		return f, "", "", false
	}
	f = clientFields{
		keyID: p[0], expires: exp, path: p[2], customer: p[3], version: p[4], beta: p[5],
		traceparent: p[6], googleKey: p[7] == "g",
	}
	return f, payload, mac, true
}

// errClientHeader refuses a try whose signed client header does not check
// (forged, expired, or its key revoked since).
func errClientHeader() *translate.APIError {
	return &translate.APIError{
		Status: 401, Type: translate.TypeInvalidRequest, Code: translate.CodeInvalidAPIKey,
		Message: "Invalid API key: it is unknown, expired or revoked.",
	}
}

// authenticate is Catalog.Authenticate, or the principal a try's signed
// client header gave.
func (s *stream) authenticate(ctx context.Context, secret string) (*Principal, error) {
	if s.signedTry() {
		s.googleKey = s.try.googleKey
		return s.principal, nil
	}
	return s.p.cat.Authenticate(ctx, secret)
}

// signedTry reports whether a signed client header authenticated this try
// (or token attempt).
func (s *stream) signedTry() bool { return s.try != nil && s.try.signed }

// withoutQueryKey is path without its key query parameter (a Gemini
// client's secret must not travel in the client header).
func withoutQueryKey(path string) string {
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

// providerHeaders are every header a try may set for any provider kind
// (the translators' credentials and versions, the signers', the tracer's):
// a try removes them all before setting its own, since the header map it
// starts from may hold a previous try's (Envoy).
var providerHeaders = []string{
	translate.HdrAuthorization, translate.HdrXAPIKey, translate.HdrAPIKey, translate.HdrGoogAPIKey,
	translate.HdrAnthropicVersion, translate.HdrAnthropicBeta, hdrTraceparent,
	"x-amz-date", "x-amz-security-token", "x-amz-content-sha256",
}

// tryRequestHeaders makes an upstream try's request headers from scratch:
// every provider header removed, the client's :path (unless the translator
// set one), the client's anthropic-version, anthropic-beta and traceparent
// back unless the translator set or removed them, then the try's own (l).
// The request a try's fallback redirect recreates (a token attempt on a
// plain route) starts from the try's map too, and also loses the per-try
// headers (a try keeps them for the next try).
func (s *stream) tryRequestHeaders(l headerList, out *translate.Outbound, remove []string) (headerList, []string) {
	remove = append(slices.Clip(remove), providerHeaders...)
	if !s.isTry() {
		remove = append(remove, envoy.ReservedHeader, hdrClient)
	}
	if out.Path == "" || out.Path == s.path {
		l = l.add(":path", s.path)
	}
	for _, kv := range [...][2]string{
		{translate.HdrAnthropicVersion, s.anthropicVersion},
		{translate.HdrAnthropicBeta, s.clientBeta()},
		{hdrTraceparent, s.report.ClientTraceparent},
	} {
		if kv[1] != "" && !l.has(kv[0]) && !slices.Contains(out.Remove, kv[0]) {
			l = l.add(kv[0], kv[1])
		}
	}
	return l, remove
}

// has reports whether l sets key.
func (l headerList) has(key string) bool {
	return slices.ContainsFunc(l.kv, func(kv headerKV) bool { return kv.key == key })
}

// setClientHeader keeps the client header or the client's anthropic-beta.
func (t *tryState) setClientHeader(key, v string) {
	if key == hdrClient {
		t.client = v
	} else {
		t.beta = v
	}
}

// clientBeta is the client's anthropic-beta ("" for none).
func (s *stream) clientBeta() string {
	if s.try == nil {
		return ""
	}
	return s.try.beta
}
