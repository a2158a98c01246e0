package extproc

import (
	"context"
	"net/http"
	"strconv"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// A provider that refuses the gateway's credential (401, or 403 that is not
// a content-policy refusal) is the gateway's fault, not the client's: the
// client's key is fine. Passing the provider's 401 on would make SDKs report
// the client's own key as bad (and some stop retrying for good). The client
// gets 502 with type and code upstream_auth_error and a message naming the
// deployment (its id, which x-tollgate-deployment already shows; never the
// credential). For routing, it is a failed attempt like a 5xx: it is retried
// on another deployment of the group, or a fallback group, when there is one
// (classify), and a 401 counts towards the deployment's cooldown (allowed
// fails; Router.observe sees only the status, and a 403 may be a
// content-policy refusal).

// Error type and code of a provider refusing the gateway's credential.
const typeUpstreamAuth = "upstream_auth_error"

// upstreamAuthFailure reports whether an attempt's status says the provider
// refused the gateway's credential.
func upstreamAuthFailure(status int, body []byte) bool {
	return status == http.StatusUnauthorized ||
		status == http.StatusForbidden && routing.Classify(status, body) != routing.FailContentPolicy
}

// upstreamError is the client's error body for a failed attempt that
// answered s.status with body, and the status the client gets (0: the
// provider's).
func (s *stream) upstreamError(body []byte) ([]byte, int) {
	if !upstreamAuthFailure(s.status, body) {
		return s.tr.Error(s.status, body), 0
	}
	e := &translate.APIError{
		Status: http.StatusBadGateway, Type: typeUpstreamAuth, Code: typeUpstreamAuth,
		Message: "The provider of deployment `" + s.target.Deployment + "` rejected the gateway's credentials (HTTP " +
			strconv.Itoa(s.status) + "). Your API key is fine; the gateway's operator must fix this deployment's credential.",
	}
	return s.ep.errorBody(e), http.StatusBadGateway
}

// upstreamAuthNoBody turns a provider's 401/403 that has no body at all (its
// response headers end the stream: content-length 0, or an HTTP/2 HEADERS
// frame with END_STREAM) into the same 502 as one with a body: the reply to
// the response headers sets :status and content-type and adds the error body
// with CONTINUE_AND_REPLACE, which gives a message that had none a body
// (docs/extproc.md R2.3; Envoy buffers it and releases the headers without
// end of stream). Not an immediate response: in a per-try upstream filter a
// local reply is not retried, while a 502 is in the route's
// retriable_status_codes. x's other mutations and l's headers stay.
func (s *stream) upstreamAuthNoBody(x *replyParts, l headerList) headerList {
	if !upstreamAuthFailure(s.status, nil) {
		return l
	}
	out, status := s.upstreamError(nil)
	x.c.Status = extprocv3.CommonResponse_CONTINUE_AND_REPLACE
	x.c.BodyMutation = x.mutation(out)
	l = l.addInt(":status", int64(status))
	return l.add(hdrContentType, "application/json")
}

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
