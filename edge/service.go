package edge

import (
	"net/http"
	"strings"

	"github.com/tollgate-ai/tollgate/edge/h1"
)

// service is a path prefix the gateway serves itself (WithService).
type service struct {
	prefix string
	h      http.Handler
}

// WithService makes the data plane hand every request for prefix, or a path
// under prefix+"/", to h itself, before routing and before ext_proc: one of
// the gateway's own services on the data-plane port (the MCP gateway on
// /mcp), which on Envoy is a route xDS emits to the service's cluster. h
// authenticates and meters its requests itself; the data plane only carries
// them, as it does health requests (WithHealth).
func WithService(prefix string, h http.Handler) Option {
	return func(e *Edge) { e.services = append(e.services, service{prefix: prefix, h: h}) }
}

// serveService answers r when its path belongs to a service; false otherwise.
func (e *Edge) serveService(w http.ResponseWriter, r *http.Request) bool {
	for _, s := range e.services {
		if rest, ok := strings.CutPrefix(r.URL.Path, s.prefix); ok && (rest == "" || rest[0] == '/') {
			if rw, ok := w.(*h1.Response); ok && r.Header == nil {
				// h1 hands the fields beside the request (edge/h1's
				// Response.Fields); a net/http handler reads r.Header.
				r.Header = make(http.Header, len(rw.Fields()))
				for _, f := range rw.Fields() {
					k := http.CanonicalHeaderKey(f.Key)
					r.Header[k] = append(r.Header[k], f.Value)
				}
			}
			s.h.ServeHTTP(w, r)
			return true
		}
	}
	return false
}
