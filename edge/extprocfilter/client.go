package extprocfilter

import (
	"context"
)

// Client plays one ext_proc filter instance: one configuration and one
// processor connection, shared by every request. It is safe for concurrent use.
type Client struct {
	t      Transport
	cfg    Config // never changed: streams share it
	cfgErr error  // cfg.Validate(), once
}

// NewClient returns a client that opens one processor stream per HTTP request
// over t ([GRPC] or [Sync]) with the filter configuration cfg (see
// DefaultConfig; cfg is copied). Streams of a client whose cfg does not
// Validate fail on their first call.
func NewClient(t Transport, cfg Config) *Client {
	c := &Client{t: t, cfg: cfg.clone()}
	c.cfgErr = c.cfg.Validate()
	return c
}

// Config returns a copy of the client's filter configuration.
func (c *Client) Config() Config { return c.cfg.clone() }

// Start begins the filter for one HTTP request. The gRPC stream is opened
// lazily, on the first message the filter has to send (R1.1). ctx is the HTTP
// request's: cancelling it is an HTTP stream reset. The caller must call Close.
func (c *Client) Start(ctx context.Context, opts ...StartOption) *Stream {
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	return newStream(ctx, c, o)
}

// Result is what Envoy's filter does after one event of the HTTP stream.
//
// When LocalReply is set the request ends there: the caller sends the local
// reply (or, with Reset, resets the downstream stream) and stops calling the
// Stream. Otherwise Continue tells whether the filter released the message:
// Headers (when non-nil) go on now, then Body, then Trailers (when non-nil).
// With Continue false the filter is holding the message (BUFFERED) and the
// caller keeps feeding it.
//
// A Result is valid until the Stream's next call, which may reuse it: take
// what it holds (its Headers, Body, Trailers and LocalReply are the caller's
// and stay valid) rather than keep the *Result.
type Result struct {
	// Continue: the headers are released (now or before) and the filter holds
	// no body data back. False while BUFFERED accumulates, even when the
	// headers already went on (header SKIP).
	Continue bool
	// Headers are the mutated headers, set on the event that released them:
	// request headers go upstream (with :path and routing headers), response
	// headers downstream.
	Headers Headers
	// Body is the (mutated) body bytes to forward now, possibly empty. The
	// caller may keep it but must not write into it: a replaced body is the
	// processor's reply's bytes (its capacity is its length, so appending
	// copies).
	Body []byte
	// Trailers are the (mutated) trailers, set on the event that released them.
	Trailers Headers
	// ClearRouteCache: the route must be matched again on the released
	// headers (R3.2). Only set on request-direction replies.
	ClearRouteCache bool
	// LocalReply is an immediate response or a local reply Envoy generated
	// (413, 500, 504, status_on_error). With Reset it is what Envoy would have
	// sent had the response not started; it is not sent.
	LocalReply *LocalReply
	// Reset: Envoy resets the HTTP stream (a local reply after the response
	// headers went downstream, R2.8, N4.3).
	Reset bool
	// Failure is the processor failure behind LocalReply, Reset or a fail-open
	// continue, wrapping one of the package's Err values; nil otherwise.
	Failure error
}

// LocalReply is a response Envoy generates itself.
type LocalReply struct {
	Status  int
	Headers Headers // :status first, then content-type/content-length, then the processor's headers
	Body    []byte
	// Details is %RESPONSE_CODE_DETAILS%, whitespace replaced by '_'.
	Details string
}
