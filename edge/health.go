package edge

import "net/http"

// WithHealth makes the data plane answer GET/HEAD requests for paths (exact,
// query string ignored) with h itself, before routing and before ext_proc:
// the gateway's /healthz and /readyz on the data-plane port, which on Envoy
// are routes xDS emits. Health requests carry no key and reach no upstream.
func WithHealth(h http.Handler, paths ...string) Option {
	return func(e *Edge) {
		e.health = h
		e.healthPaths = paths
	}
}

// serveHealth answers r when it is a health request; false otherwise.
func (e *Edge) serveHealth(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, p := range e.healthPaths {
		if r.URL.Path == p {
			e.health.ServeHTTP(w, r)
			return true
		}
	}
	return false
}
