package edge

import (
	"context"
	"strconv"
	"time"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/h1"
	"github.com/tollgate-ai/tollgate/envoy"
)

// Retries the processor asks for (docs/envoy.md, "Retries"). The processor
// decides whether a failed attempt is retried, after how long and where; the
// edge only carries it out: when a response's headers, as the filter
// releases them, carry envoy.RetryHeader and nothing has gone downstream
// yet, it drops that response, waits envoy.RetryDelayHeader milliseconds and
// sends the client's request through a new ext_proc stream, with the token
// as a request header. The route timeout still bounds the whole request.

// maxEdgeRetries bounds the retries of one request whatever the processor
// says (it bounds them by the model group's retries, at most 10).
const maxEdgeRetries = 10

// maxRetryBody bounds the copy of a request body kept for a retry: a larger
// request is not retried (its failure reaches the client), so that memory
// per request stays about one body.
const maxRetryBody = 8 << 20

// retryOrder is the processor's order to send the request again.
type retryOrder struct {
	token string
	delay time.Duration
	done  int // retries made
}

// keepForRetry keeps the client's request headers (the filter extends the
// list it is given) so the request can be sent again; requestBody keeps the
// body beside them.
func (x *exchange) keepForRetry(h extprocfilter.Headers) {
	x.orig = h.Clone()
}

// retryAsked reports whether res (response headers released by the filter)
// orders a retry that can run; the response is then dropped. One that
// cannot run (the response started, the body was streamed upstream, the
// client left, the route timeout passed, too many retries) goes to the
// client without the retry headers.
func (x *exchange) retryAsked(res *extprocfilter.Result) bool {
	tok := res.Headers.Value(envoy.RetryHeader)
	if tok == "" {
		return false
	}
	delayMS, _ := strconv.ParseInt(res.Headers.Value(envoy.RetryDelayHeader), 10, 64)
	if x.sentHeaders || x.orig == nil || x.async != nil || x.retry.done >= maxEdgeRetries ||
		x.deadline > 0 && monoNow()+delayMS*int64(time.Millisecond) >= x.deadline || x.upstreamDone() {
		out := res.Headers[:0:0]
		for _, kv := range res.Headers {
			if kv.Key != envoy.RetryHeader && kv.Key != envoy.RetryDelayHeader {
				out = append(out, kv)
			}
		}
		res.Headers = out
		return false
	}
	x.retry.token, x.retry.delay = tok, time.Duration(max(delayMS, 0))*time.Millisecond
	return true
}

// upstreamDone reports whether the upstream side ended for good (the client
// left, the route timeout fired, the exchange is over).
func (x *exchange) upstreamDone() bool {
	x.upMu.Lock()
	defer x.upMu.Unlock()
	return x.upDone
}

// again sends the request once more, as the processor ordered: the failed
// attempt's stream ends (the processor settled it), and a new stream gets
// the client's request with the token. False when the exchange ends
// (the client left, or the filter answered locally).
func (x *exchange) again() bool {
	o := x.retry
	x.retry.token = ""
	x.retry.done++
	x.f.Close()
	x.f = passthrough{}
	if x.release != nil {
		x.release()
		x.release = nil
	}
	if !x.newTry() || o.delay > 0 && !sleepCtx(x.upCtx, o.delay) {
		return false
	}
	x.fwd, x.body, x.clearRoute, x.rerouted, x.rematched = nil, nil, false, nil, false
	x.attemptDeadline.Store(0)
	h := make(extprocfilter.Headers, 0, len(x.orig)+13)
	h = append(h, x.orig...)
	h = append(h, extprocfilter.Header{Key: envoy.RetryHeader, Value: o.token})
	x.f = x.first.filter.Start(x.ctx, extprocfilter.WithOwnedHeaders())
	noBody := len(x.origBody) == 0
	res, err := x.f.RequestHeaders(h, noBody)
	if !x.onRequest(res, err, noBody) {
		return false
	}
	if !noBody {
		res, err = x.f.RequestBody(x.origBody, true)
		if !x.onRequest(res, err, true) {
			return false
		}
	}
	return true
}

// newTry readies the upstream context for another attempt: a per-try
// timeout cancelled the last one (and cut its connection), which leaves the
// request itself alive. False when the upstream side ended for good.
func (x *exchange) newTry() bool {
	x.upMu.Lock()
	defer x.upMu.Unlock()
	if x.upDone {
		return false
	}
	if x.upCtx.Err() != nil {
		x.upCtx, x.upCancel = context.WithCancelCause(context.WithoutCancel(x.ctx))
		x.upAbort = new(h1.Abort)
	}
	return true
}
