package edge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/tollgate-ai/tollgate/edge/h1"
)

// Envoy's local reply bodies.
const (
	bodyConnectFailure = "upstream connect error or disconnect/reset before headers. reset reason: "
	bodyTimeout        = "upstream request timeout"
	bodyIdleTimeout    = "stream timeout"
)

// upstreamBody is the request body that goes upstream: the whole body the
// filter released (buffered), or the pipe the filter's streamed chunks are
// written into.
type upstreamBody struct {
	whole  []byte
	stream *io.PipeReader // nil: whole
}

func (b upstreamBody) buffered() bool { return b.stream == nil }

func (x *exchange) roundTripStream(rt *route, body *io.PipeReader) *http.Response {
	resp := x.roundTrip(rt, upstreamBody{stream: body})
	if resp != nil && resp.Request == nil {
		// A local reply: nobody reads the body.
		_ = body.CloseWithError(errors.New("edge: request not forwarded"))
	}
	return resp
}

// roundTrip routes and forwards the request. It returns the upstream
// response or a local reply of the router (a response with no Request), or
// nil when the client went away.
func (x *exchange) roundTrip(rt *route, body upstreamBody) *http.Response {
	if rt == nil {
		return localResponse(http.StatusNotFound, nil, nil)
	}
	if rt.direct != nil {
		return localResponse(rt.direct.status, rt.direct.headers, rt.direct.body)
	}
	cl := x.st.clusters[rt.cluster]
	if cl == nil {
		return localResponse(http.StatusServiceUnavailable, nil, nil)
	}
	if !cl.acquire() {
		return localResponse(http.StatusServiceUnavailable, nil, []byte(bodyConnectFailure+"overflow"))
	}
	x.release = cl.release
	x.startTimers(rt)
	var (
		req  *http.Request
		wire *bytes.Buffer // the request serialised for the HTTP/1.1 fast path
		err  error
	)
	if b := body.whole; body.buffered() && cl.h1 != nil && len(b) <= h1.MaxSerialised {
		wire = h1.GetRequestBuffer()
		defer h1.PutRequestBuffer(wire)
		if !x.wireRequest(wire, rt, cl, b) {
			return localResponse(http.StatusBadRequest, nil, nil)
		}
		// The serialised request holds the body now: the request waiting
		// for its upstream keeps no other copy, unless an internal redirect
		// may send it again (redirect.go).
		body.whole = nil
		if rt.redirect == nil {
			x.body = nil
		}
		req = h1.MethodRequest(x.fwd.Value(":method"))
	} else if req, err = x.upstreamRequest(rt, cl, body); err != nil {
		return localResponse(http.StatusBadRequest, nil, nil)
	}
	attempts := 1
	if rt.retryOnConn && body.buffered() {
		attempts += rt.retries
	}
	// An attempt is bounded by per_try_timeout (the deployment's
	// first-byte timeout), else per_try_idle_timeout, until its response
	// starts: Envoy's router ignores a per-try timeout once it started the
	// downstream response, which it does on the upstream response headers
	// (UpstreamRequest::onPerTryTimeout); later stalls are the route idle
	// timeout's, the whole request the route timeout's.
	perTryD := firstPositive(rt.perTry, rt.perTryIdle)
	for attempt := 0; ; attempt++ {
		// Every attempt runs on the request's upstream context: a per-try
		// timeout cancels that context, from the exchange's one timer, and
		// the attempt ends in a 504, which the processor may have retried
		// on another deployment (retry.go); a failed attempt leaves nothing
		// running to cancel before a retry.
		if perTryD > 0 {
			x.armAttempt(perTryD)
		}
		var resp *http.Response
		if wire != nil {
			resp, err = cl.h1.Do(x.upCtx, req, wire.Bytes(), x.upAbort)
		} else {
			x.leaveGate() // no hook tells when http.Transport has written it
			resp, err = cl.transport.RoundTrip(req.WithContext(x.upCtx))
		}
		x.attemptDeadline.Store(0) // the response started, or the attempt failed
		if err == nil {
			x.touch()
			return resp
		}
		cause := context.Cause(x.upCtx)
		switch {
		case x.ctx.Err() != nil:
			return nil
		case errors.Is(cause, errPerTry), errors.Is(cause, errRouteTimeout):
			return localResponse(http.StatusGatewayTimeout, nil, []byte(bodyTimeout))
		case errors.Is(cause, errIdleTimeout):
			return localResponse(http.StatusRequestTimeout, nil, []byte(bodyIdleTimeout))
		}
		reason := "connection termination"
		if isConnectFailure(err) {
			reason = "remote connection failure"
			if attempt+1 < attempts {
				if !sleepCtx(x.upCtx, 25*time.Millisecond<<attempt) {
					return nil
				}
				if wire == nil {
					req, _ = x.upstreamRequest(rt, cl, body)
				}
				continue
			}
		}
		x.e.logger.Debug("edge: upstream request failed", "cluster", cl.name, "error", err)
		return localResponse(http.StatusServiceUnavailable, nil, []byte(bodyConnectFailure+reason))
	}
}

func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

func isConnectFailure(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// wireRequest writes the HTTP/1.1 request sent to cl from the released
// headers and the whole body b into buf, with lower-case header names as
// Envoy sends them. False when :path is not a request target.
func (x *exchange) wireRequest(buf *bytes.Buffer, rt *route, cl *cluster, b []byte) bool {
	method, path := x.fwd.Value(":method"), x.fwd.Value(":path")
	if !validTarget(path) || !httpguts.ValidHeaderFieldName(method) {
		return false
	}
	buf.WriteString(method)
	buf.WriteByte(' ')
	buf.WriteString(path)
	buf.WriteString(" HTTP/1.1\r\n")
	h1.WriteField(buf, "host", x.upstreamHost(rt, cl))
	for _, kv := range x.fwd {
		if forwarded(kv.Key) && httpguts.ValidHeaderFieldName(kv.Key) {
			h1.WriteField(buf, kv.Key, kv.Value)
		}
	}
	if len(b) > 0 || (method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions && method != http.MethodDelete) {
		var n [20]byte
		buf.WriteString("content-length: ")
		buf.Write(strconv.AppendInt(n[:0], int64(len(b)), 10))
		buf.WriteString("\r\n")
	}
	buf.WriteString("\r\n")
	buf.Write(b)
	return true
}

// upstreamHost is the Host of the upstream request: the route's
// host_rewrite_literal, else the :authority the filter released, else the
// cluster's address.
func (x *exchange) upstreamHost(rt *route, cl *cluster) string {
	if rt.hostRewrite != "" {
		return rt.hostRewrite
	}
	if a := x.fwd.Value(":authority"); a != "" {
		return a
	}
	return cl.urlHost
}

// forwarded reports whether a released header goes upstream as it is: the
// pseudo-headers, hop-by-hop headers, host and content-length are written
// by whoever writes the request, and Expect was answered downstream.
func forwarded(k string) bool {
	return !strings.HasPrefix(k, ":") && !h1.HopByHop(k) && k != "host" && k != "content-length" && k != "expect"
}

// validTarget reports whether p is an origin-form request target (or "*").
func validTarget(p string) bool {
	if p == "*" {
		return true
	}
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// upstreamRequest builds the request sent to cl from the released headers.
func (x *exchange) upstreamRequest(rt *route, cl *cluster, body upstreamBody) (*http.Request, error) {
	u, err := url.ParseRequestURI(x.fwd.Value(":path"))
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = cl.scheme, cl.urlHost
	req := &http.Request{
		Method: x.fwd.Value(":method"),
		URL:    u,
		Header: make(http.Header, len(x.fwd)),
		Host:   x.upstreamHost(rt, cl),
	}
	vals := make([]string, len(x.fwd)) // backing for the one-value lists
	for i, kv := range x.fwd {
		if !forwarded(kv.Key) {
			continue
		}
		addHeader(req.Header, http.CanonicalHeaderKey(kv.Key), kv.Value, vals[i:i+1:i+1])
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // Go would add its own
	}
	if body.buffered() {
		b := body.whole
		req.ContentLength = int64(len(b))
		if len(b) == 0 {
			req.Body = http.NoBody
		} else {
			req.Body = &wholeBody{b: b}
		}
		return req, nil
	}
	req.Body = body.stream
	req.ContentLength = -1
	if v, ok := x.fwd.Get("content-length"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			req.ContentLength = n
		}
	}
	return req, nil
}

// localResponse is a router local reply, passed through the response
// direction of the filter like an upstream response.
func localResponse(status int, headers []headerOp, body []byte) *http.Response {
	h := http.Header{}
	for _, op := range headers {
		k := http.CanonicalHeaderKey(op.key)
		if op.add {
			h.Add(k, op.value)
		} else {
			h.Set(k, op.value)
		}
	}
	if len(body) > 0 && h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/plain")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	var rb io.ReadCloser = http.NoBody
	if len(body) > 0 {
		rb = io.NopCloser(bytes.NewReader(body))
	}
	return &http.Response{StatusCode: status, Header: h, Body: rb, ContentLength: int64(len(body))}
}
