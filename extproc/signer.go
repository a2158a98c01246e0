package extproc

import (
	"context"
)

// RequestSigner adds the credentials that depend on the final upstream
// request: AWS SigV4 (which signs the body) or a fresh OAuth2 access token.
// The processor calls it after the translator has built the request and
// before replying to Envoy, so the signature covers the body Envoy sends.
// Implementations cache what they can (credentials, tokens) and must not
// log or return secrets in errors.
type RequestSigner interface {
	SignRequest(ctx context.Context, r *UpstreamRequest) ([][2]string, error)
}

// UpstreamRequest is what a RequestSigner signs.
type UpstreamRequest struct {
	Method string
	Host   string // the deployment's host (Target.Host)
	Path   string // the escaped :path, query included
	Body   []byte
}

// RequestSignerFunc adapts a function to RequestSigner.
type RequestSignerFunc func(ctx context.Context, r *UpstreamRequest) ([][2]string, error)

// SignRequest calls f.
func (f RequestSignerFunc) SignRequest(ctx context.Context, r *UpstreamRequest) ([][2]string, error) {
	return f(ctx, r)
}

// signOutbound adds the signer's headers to out (its body, else the client's).
func (s *stream) signOutbound(ctx context.Context, out *Outbound) error {
	body := out.Body
	if body == nil {
		body = s.in.Body
	}
	path := out.Path
	if path == "" {
		path = s.path
	}
	h, err := s.target.Signer.SignRequest(ctx, &UpstreamRequest{Method: s.method, Host: s.target.Host, Path: path, Body: body})
	if err != nil {
		return err
	}
	out.Headers = append(out.Headers, h...)
	return nil
}
