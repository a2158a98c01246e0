package edge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/h1"
)

// responseHeaders is resp's head as the filter sees it: :status, the
// end-to-end fields (hop-by-hop and Connection-nominated ones dropped) and a
// content-length when the length is known, with room for the headers a
// processor adds (the stream keeps and extends this list: WithOwnedHeaders).
func responseHeaders(resp *http.Response) extprocfilter.Headers {
	// The HTTP/1 client hands the fields over in order (its Header is nil);
	// net/http's transport fills Header.
	var fields h1.Fields
	if b, ok := resp.Body.(*h1.Body); ok {
		fields = b.Fields()
	}
	h := make(extprocfilter.Headers, 0, len(fields)+len(resp.Header)+8)
	h = append(h, extprocfilter.Header{Key: ":status", Value: strconv.Itoa(resp.StatusCode)})
	conn := fields.ConnectionValues()
	if v := resp.Header["Connection"]; v != nil {
		conn = append(conn, v...)
	}
	for _, f := range fields {
		if !h1.HopByHop(f.Key) && !h1.Nominated(conn, f.Key) {
			h = append(h, extprocfilter.Header{Key: f.Key, Value: f.Value})
		}
	}
	for k, vs := range resp.Header {
		lk := h1.LowerKey(k)
		if h1.HopByHop(lk) || h1.Nominated(conn, lk) {
			continue
		}
		for _, v := range vs {
			h = append(h, extprocfilter.Header{Key: lk, Value: v})
		}
	}
	if resp.ContentLength >= 0 && !h.Has("content-length") && resp.Request != nil {
		h = append(h, extprocfilter.Header{Key: "content-length", Value: strconv.FormatInt(resp.ContentLength, 10)})
	}
	return h
}

// respond passes the response through the filter and downstream.
func (x *exchange) respond(resp *http.Response) {
	defer func() { _ = resp.Body.Close() }()
	h := responseHeaders(resp)
	noBody := resp.Body == http.NoBody || resp.ContentLength == 0 || x.fwd.Value(":method") == http.MethodHead
	// A body of known length that is not an event stream goes out when the
	// exchange ends (or whenever net/http's buffer fills): flushing the
	// headers and each read on their own would cost a write per piece.
	x.flushEach = resp.ContentLength < 0 || isEventStream(h.Value("content-type"))
	res, err := x.f.ResponseHeaders(h, noBody)
	if !x.onResponse(res, err, !noBody) || noBody {
		return
	}
	rd := newReader()
	defer rd.close()
	remaining := resp.ContentLength
	for {
		chunk, rerr := rd.read(resp.Body)
		n := len(chunk)
		x.touch()
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			x.upstreamFailed()
			return
		}
		if remaining > 0 {
			remaining -= int64(n)
		}
		eof := rerr != nil || remaining == 0
		if eof {
			if tr := trailers(resp.Trailer); tr != nil {
				if n > 0 {
					res, err := x.f.ResponseBody(chunk, false)
					if !x.onResponse(res, err, true) {
						return
					}
				}
				res, err := x.f.ResponseTrailers(tr)
				x.onResponse(res, err, false)
				return
			}
			res, err := x.f.ResponseBody(chunk, true)
			x.onResponse(res, err, false)
			return
		}
		if n == 0 {
			continue
		}
		res, err := x.f.ResponseBody(chunk, false)
		if !x.onResponse(res, err, true) {
			return
		}
	}
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(ct string) bool {
	const sse = "text/event-stream"
	return len(ct) >= len(sse) && strings.EqualFold(ct[:len(sse)], sse)
}

// upstreamFailed ends an exchange whose upstream body broke off.
func (x *exchange) upstreamFailed() {
	if x.ctx.Err() != nil {
		return // the client went away
	}
	if x.sentHeaders {
		if !x.endCutStream() { // stream_cut.go
			abort(x.w)
		}
		return
	}
	switch cause := context.Cause(x.upCtx); {
	case errors.Is(cause, errIdleTimeout):
		x.writeLocal(http.StatusRequestTimeout, nil, []byte(bodyIdleTimeout))
	case errors.Is(cause, errRouteTimeout):
		x.writeLocal(http.StatusGatewayTimeout, nil, []byte(bodyTimeout))
	default:
		x.writeLocal(http.StatusServiceUnavailable, nil, []byte(bodyConnectFailure+"connection termination"))
	}
}

// onResponse applies a response-direction result; more means the response
// continues (so what was written is flushed now). False ends the exchange.
func (x *exchange) onResponse(res *extprocfilter.Result, err error, more bool) bool {
	if err != nil {
		if x.ctx.Err() != nil {
			return false // the client went away
		}
		x.e.logger.Error("edge: ext_proc client", "error", err)
		if x.sentHeaders {
			abort(x.w)
		} else {
			x.writeLocal(http.StatusInternalServerError, nil, nil)
		}
		return false
	}
	if res.Reset || (res.LocalReply != nil && x.sentHeaders) {
		abort(x.w)
		return false
	}
	if res.LocalReply != nil {
		x.writeLocal(res.LocalReply.Status, res.LocalReply.Headers, res.LocalReply.Body)
		return false
	}
	wrote := false
	if res.Headers != nil {
		x.writeHeaders(res.Headers)
		wrote = true
	}
	if len(res.Body) > 0 {
		if _, err := x.w.Write(res.Body); err != nil {
			x.cancelUp(err)
			return false
		}
		wrote = true
	}
	if res.Trailers != nil {
		for _, kv := range res.Trailers {
			x.w.Header().Add(http.TrailerPrefix+kv.Key, kv.Value)
		}
	}
	if wrote && more && x.flushEach {
		if err := x.rc.Flush(); err != nil {
			x.cancelUp(err)
			return false
		}
		x.touch()
	}
	return true
}

func (x *exchange) writeHeaders(h extprocfilter.Headers) {
	status := http.StatusOK
	if rw, ok := x.w.(*h1.Response); ok {
		// HTTP/1: the list goes out in order, names lower-case as
		// Envoy's codec writes them.
		out := make(h1.Fields, 0, len(h))
		for _, kv := range h {
			switch {
			case kv.Key == ":status":
				if n, err := strconv.Atoi(kv.Value); err == nil {
					status = n
				}
			case !strings.HasPrefix(kv.Key, ":") && !h1.HopByHop(kv.Key):
				out = append(out, h1.Field{Key: kv.Key, Value: kv.Value})
			}
		}
		rw.SetHeaders(status, out)
		x.sentHeaders = true
		return
	}
	dst := x.w.Header()
	vals := make([]string, len(h)) // backing for the one-value lists
	for i, kv := range h {
		if kv.Key == ":status" {
			if n, err := strconv.Atoi(kv.Value); err == nil {
				status = n
			}
			continue
		}
		if strings.HasPrefix(kv.Key, ":") || h1.HopByHop(kv.Key) {
			continue
		}
		addHeader(dst, http.CanonicalHeaderKey(kv.Key), kv.Value, vals[i:i+1:i+1])
	}
	x.w.WriteHeader(status)
	x.sentHeaders = true
}

// addHeader adds v under the canonical key k; one is a one-element slice
// (capacity 1) to hold v when k is new, so a header costs no allocation of
// its own.
func addHeader(h http.Header, k, v string, one []string) {
	if old, ok := h[k]; ok {
		h[k] = append(old, v)
		return
	}
	one[0] = v
	h[k] = one
}

// writeLocal sends a local reply. h may carry :status and headers.
func (x *exchange) writeLocal(status int, h extprocfilter.Headers, body []byte) {
	if x.sentHeaders {
		abort(x.w)
		return
	}
	if rw, ok := x.w.(*h1.Response); ok {
		// HTTP/1: lower-case names in order, as for proxied responses.
		out := make(h1.Fields, 0, len(h)+2)
		hasType := false
		for _, kv := range h {
			if !strings.HasPrefix(kv.Key, ":") && !h1.HopByHop(kv.Key) && kv.Key != "content-length" {
				out = append(out, h1.Field{Key: kv.Key, Value: kv.Value})
				hasType = hasType || kv.Key == "content-type"
			}
		}
		if len(body) > 0 && !hasType {
			out = append(out, h1.Field{Key: "content-type", Value: "text/plain"})
		}
		out = append(out, h1.Field{Key: "content-length", Value: strconv.Itoa(len(body))})
		rw.SetHeaders(status, out)
	} else {
		dst := x.w.Header()
		for _, kv := range h {
			if strings.HasPrefix(kv.Key, ":") || h1.HopByHop(kv.Key) || kv.Key == "content-length" {
				continue
			}
			k := http.CanonicalHeaderKey(kv.Key)
			dst[k] = append(dst[k], kv.Value)
		}
		if len(body) > 0 && dst.Get("Content-Type") == "" {
			dst.Set("Content-Type", "text/plain")
		}
		dst.Set("Content-Length", strconv.Itoa(len(body)))
		x.w.WriteHeader(status)
	}
	x.sentHeaders = true
	_, _ = x.w.Write(body)
}

// abort ends the downstream stream without finishing it: the client sees a
// truncated body (HTTP/1.1) or a stream reset (HTTP/2), as after an Envoy
// stream reset.
func abort(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	// HTTP/2 cannot be hijacked; net/http documents ErrAbortHandler as the way
	// to reset the stream without logging.
	panic(http.ErrAbortHandler)
}
