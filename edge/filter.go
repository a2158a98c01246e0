package edge

import "github.com/tollgate-ai/tollgate/extproc/envoytest"

// filter is the HTTP filter chain of one request in front of the router: the
// ext_proc stream, or passthrough when ext_proc is off for the route.
type filter interface {
	RequestHeaders(h envoytest.Headers, endOfStream bool) (*envoytest.Result, error)
	RequestBody(chunk []byte, endOfStream bool) (*envoytest.Result, error)
	RequestTrailers(h envoytest.Headers) (*envoytest.Result, error)
	ResponseHeaders(h envoytest.Headers, endOfStream bool) (*envoytest.Result, error)
	ResponseBody(chunk []byte, endOfStream bool) (*envoytest.Result, error)
	ResponseTrailers(h envoytest.Headers) (*envoytest.Result, error)
	Close()
}

var (
	_ filter = (*envoytest.Stream)(nil)
	_ filter = passthrough{}
)

// passthrough releases everything at once, unchanged.
type passthrough struct{}

func (passthrough) RequestHeaders(h envoytest.Headers, _ bool) (*envoytest.Result, error) {
	return &envoytest.Result{Continue: true, Headers: h}, nil
}

func (passthrough) RequestBody(b []byte, _ bool) (*envoytest.Result, error) {
	return &envoytest.Result{Continue: true, Body: b}, nil
}

func (passthrough) RequestTrailers(h envoytest.Headers) (*envoytest.Result, error) {
	return &envoytest.Result{Continue: true, Trailers: h}, nil
}

func (passthrough) ResponseHeaders(h envoytest.Headers, _ bool) (*envoytest.Result, error) {
	return &envoytest.Result{Continue: true, Headers: h}, nil
}

func (passthrough) ResponseBody(b []byte, _ bool) (*envoytest.Result, error) {
	return &envoytest.Result{Continue: true, Body: b}, nil
}

func (passthrough) ResponseTrailers(h envoytest.Headers) (*envoytest.Result, error) {
	return &envoytest.Result{Continue: true, Trailers: h}, nil
}

func (passthrough) Close() {}
