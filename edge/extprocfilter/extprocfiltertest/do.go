package extprocfiltertest

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
)

// Request is a whole HTTP request for Do.
type Request struct {
	// Headers include the pseudo-headers :method, :path, :authority, :scheme.
	Headers extprocfilter.Headers
	// Body is the body in chunks, as the codec would deliver them; nil or
	// empty means no body (the headers end the request).
	Body [][]byte
	// Trailers, when non-nil, end the request after the body.
	Trailers extprocfilter.Headers
	// AbortAfterChunks, when > 0, makes the downstream client go away after
	// that many response body calls: the HTTP stream is reset and Envoy closes
	// the ext_proc stream (R1.8d).
	AbortAfterChunks int
}

// ForwardedRequest is what Envoy sends upstream after the filter.
type ForwardedRequest struct {
	Headers  extprocfilter.Headers
	Body     []byte
	Trailers extprocfilter.Headers
	// ClearRouteCache: some reply asked for the route to be re-matched (R3.2).
	ClearRouteCache bool
}

// UpstreamResponse is what a fake upstream answers.
type UpstreamResponse struct {
	Status  int
	Headers extprocfilter.Headers // without :status
	// Chunks of the body, delivered one ResponseBody call each.
	Chunks [][]byte
	// Trailers, when non-nil, end the response after the body.
	Trailers extprocfilter.Headers
	// Reset: the upstream resets the stream after sending Chunks, without an
	// end of stream; Envoy resets the downstream stream too.
	Reset bool
	// EdgeReset: with Reset, the built-in data plane's handling instead
	// (Stream.ResponseReset): what the processor answers ends the response,
	// which is reset only when it answered nothing.
	EdgeReset bool
	// Abandoned: the router drops the stream before any response reaches
	// the filter, as after an internal redirect (Envoy's router recreates
	// the stream; the old one's filters are destroyed): the filter's
	// stream closes with no response, and Do returns no status.
	Abandoned bool
}

// Upstream is a fake upstream: it receives the forwarded request.
type Upstream func(req *ForwardedRequest) *UpstreamResponse

// Response is what the downstream client received.
type Response struct {
	Status   int
	Headers  extprocfilter.Headers
	Body     []byte   // the whole body received
	Chunks   [][]byte // the non-empty body pieces in the order they were forwarded
	Trailers extprocfilter.Headers
	// Forwarded is what went upstream; nil when the request never got there.
	Forwarded *ForwardedRequest
	// LocalReply is set when the filter answered (immediate response or an
	// Envoy-generated reply); Status, Headers and Body are then the reply's.
	LocalReply *extprocfilter.LocalReply
	// Reset: the downstream stream was reset (LocalReply, if set, was not sent).
	Reset bool
	// Aborted: the downstream client went away (Request.AbortAfterChunks).
	Aborted bool
	// Failures are the processor failures reported along the way (fail-open
	// continues, R1.9 closes, the reason of a local reply).
	Failures []error
}

// Do runs one whole request through the processor and upstream, as Envoy
// would: request headers, body chunks and trailers through the filter, the
// forwarded request to upstream, then its response back through the filter.
// A nil upstream answers 200 with no body.
func Do(ctx context.Context, c *extprocfilter.Client, req *Request, upstream Upstream) (*Response, error) {
	return DoWith(ctx, c, req, upstream)
}

// DoWith is Do with options for the filter's stream (request attributes:
// an upstream filter's try learns its host from them).
func DoWith(ctx context.Context, c *extprocfilter.Client, req *Request, upstream Upstream, opts ...extprocfilter.StartOption) (*Response, error) {
	s := c.Start(ctx, opts...)
	defer s.Release()
	out := &Response{}
	fwd := &ForwardedRequest{}

	// stop reports whether r ended the exchange.
	stop := func(r *extprocfilter.Result) bool {
		if r.Failure != nil {
			out.Failures = append(out.Failures, r.Failure)
		}
		if r.LocalReply == nil && !r.Reset {
			return false
		}
		out.LocalReply = r.LocalReply
		out.Reset = r.Reset
		if !r.Reset && r.LocalReply != nil {
			out.Status = r.LocalReply.Status
			out.Headers = r.LocalReply.Headers
			out.Body = r.LocalReply.Body
			out.Chunks = nil
			out.Trailers = nil
		}
		return true
	}
	forward := func(r *extprocfilter.Result) {
		if r.Headers != nil {
			fwd.Headers = r.Headers
		}
		fwd.Body = append(fwd.Body, r.Body...)
		if r.Trailers != nil {
			fwd.Trailers = r.Trailers
		}
		fwd.ClearRouteCache = fwd.ClearRouteCache || r.ClearRouteCache
	}

	body := req.Body
	if len(body) == 0 && req.Trailers == nil {
		body = nil
	}
	r, err := s.RequestHeaders(req.Headers, body == nil && req.Trailers == nil)
	if err != nil {
		return nil, err
	}
	if stop(r) {
		return out, nil
	}
	forward(r)
	for i, ch := range body {
		r, err := s.RequestBody(ch, i == len(body)-1 && req.Trailers == nil)
		if err != nil {
			return nil, err
		}
		if stop(r) {
			return out, nil
		}
		forward(r)
	}
	if req.Trailers != nil {
		r, err := s.RequestTrailers(req.Trailers)
		if err != nil {
			return nil, err
		}
		if stop(r) {
			return out, nil
		}
		forward(r)
	}
	if fwd.Headers == nil {
		return nil, fmt.Errorf("extprocfilter: the filter never released the request headers")
	}
	out.Forwarded = fwd

	var up *UpstreamResponse
	if upstream != nil {
		up = upstream(fwd)
	}
	if up == nil {
		up = &UpstreamResponse{Status: 200}
	}
	if up.Abandoned {
		return out, nil // the deferred Close ends the filter's stream
	}
	h := append(extprocfilter.Headers{{Key: ":status", Value: strconv.Itoa(up.Status)}}, up.Headers.Clone()...)
	chunks := up.Chunks
	noBody := len(chunks) == 0 && up.Trailers == nil && !up.Reset
	emit := func(r *extprocfilter.Result) {
		if r.Headers != nil {
			out.Headers = r.Headers
			out.Status, _ = strconv.Atoi(r.Headers.Value(":status"))
		}
		if len(r.Body) > 0 {
			out.Body = append(out.Body, r.Body...)
			out.Chunks = append(out.Chunks, r.Body)
		}
		if r.Trailers != nil {
			out.Trailers = r.Trailers
		}
	}
	r, err = s.ResponseHeaders(h, noBody)
	if err != nil {
		return nil, err
	}
	if stop(r) {
		return out, nil
	}
	emit(r)
	for i, ch := range chunks {
		if req.AbortAfterChunks > 0 && i == req.AbortAfterChunks {
			out.Aborted = true
			return out, nil // the deferred Close is the reset
		}
		last := i == len(chunks)-1 && up.Trailers == nil && !up.Reset
		r, err := s.ResponseBody(ch, last)
		if err != nil {
			return nil, err
		}
		if stop(r) {
			return out, nil
		}
		emit(r)
	}
	if up.Reset && up.EdgeReset {
		r, err := s.ResponseReset(extprocfilter.DetailsUpstreamReset)
		if err != nil {
			return nil, err
		}
		if len(r.Body) > 0 {
			emit(r)
			return out, nil
		}
	}
	if up.Reset {
		// The upstream reset: Envoy resets downstream and closes the ext_proc
		// stream (R1.8d).
		out.Reset = true
		return out, nil
	}
	if up.Trailers != nil {
		r, err := s.ResponseTrailers(up.Trailers)
		if err != nil {
			return nil, err
		}
		if stop(r) {
			return out, nil
		}
		emit(r)
	}
	return out, nil
}
