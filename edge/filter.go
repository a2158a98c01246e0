package edge

import "github.com/tollgate-ai/tollgate/edge/extprocfilter"

// filter is the HTTP filter chain of one request in front of the router: the
// ext_proc stream, or passthrough when ext_proc is off for the route.
type filter interface {
	RequestHeaders(h extprocfilter.Headers, endOfStream bool) (*extprocfilter.Result, error)
	RequestBody(chunk []byte, endOfStream bool) (*extprocfilter.Result, error)
	RequestTrailers(h extprocfilter.Headers) (*extprocfilter.Result, error)
	ResponseHeaders(h extprocfilter.Headers, endOfStream bool) (*extprocfilter.Result, error)
	ResponseBody(chunk []byte, endOfStream bool) (*extprocfilter.Result, error)
	ResponseTrailers(h extprocfilter.Headers) (*extprocfilter.Result, error)
	// Release ends the filter for good: the exchange touches it no more
	// (a Stream is reused by a later request).
	Release()
}

var (
	_ filter = (*extprocfilter.Stream)(nil)
	_ filter = passthrough{}
)

// passthrough releases everything at once, unchanged.
type passthrough struct{}

func (passthrough) RequestHeaders(h extprocfilter.Headers, _ bool) (*extprocfilter.Result, error) {
	return &extprocfilter.Result{Continue: true, Headers: h}, nil
}

func (passthrough) RequestBody(b []byte, _ bool) (*extprocfilter.Result, error) {
	return &extprocfilter.Result{Continue: true, Body: b}, nil
}

func (passthrough) RequestTrailers(h extprocfilter.Headers) (*extprocfilter.Result, error) {
	return &extprocfilter.Result{Continue: true, Trailers: h}, nil
}

func (passthrough) ResponseHeaders(h extprocfilter.Headers, _ bool) (*extprocfilter.Result, error) {
	return &extprocfilter.Result{Continue: true, Headers: h}, nil
}

func (passthrough) ResponseBody(b []byte, _ bool) (*extprocfilter.Result, error) {
	return &extprocfilter.Result{Continue: true, Body: b}, nil
}

func (passthrough) ResponseTrailers(h extprocfilter.Headers) (*extprocfilter.Result, error) {
	return &extprocfilter.Result{Continue: true, Trailers: h}, nil
}

func (passthrough) Release() {}
