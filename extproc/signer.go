package extproc

import (
	"context"

	"github.com/tollgate-ai/tollgate/translate"
)

// signOutbound adds the signer's headers to out (its body, else the client's).
func (s *stream) signOutbound(ctx context.Context, out *translate.Outbound) error {
	body := out.Body
	if body == nil {
		body = s.in.Body
	}
	path := out.Path
	if path == "" {
		path = s.path
	}
	h, err := s.target.Signer.SignRequest(ctx, &translate.UpstreamRequest{Method: s.method, Host: s.target.Host, Path: path, Body: body})
	if err != nil {
		return err
	}
	out.Headers = append(out.Headers, h...)
	return nil
}
