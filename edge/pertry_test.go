package edge

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/xds"
)

// tryProc is a processor for per-try routes: the router-level stream
// routes to the x-pick header; a try's stream (it has the deployment
// attribute) records the deployment and attempt number, and marks the
// request it forwards with them.
type tryProc struct {
	mu       sync.Mutex
	tries    []string // "deployment/attempt"
	trailers []string // "deployment/x-checksum" of each stream's response trailers ("": router-level)
}

func (p *tryProc) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tries...)
}

func (p *tryProc) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	var dep, pick string
	return serveProcessor(stream, func(req *extprocv3.ProcessingRequest, cr *extprocv3.CommonResponse) {
		switch r := req.GetRequest().(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			dep = req.GetAttributes()["envoy.filters.http.ext_proc"].GetFields()[envoy.TryAttribute].GetStringValue()
			h := extprocfilter.HeadersFromProto(r.RequestHeaders.GetHeaders())
			pick = h.Value("x-pick")
			if dep != "" {
				p.mu.Lock()
				p.tries = append(p.tries, dep+"/"+h.Value(envoy.AttemptCountHeader))
				p.mu.Unlock()
			}
		case *extprocv3.ProcessingRequest_RequestBody:
			if dep == "" {
				cr.HeaderMutation, cr.ClearRouteCache = setRoute(pick), true
			} else {
				cr.HeaderMutation = &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{
					Header: &corev3.HeaderValue{Key: "x-try", RawValue: []byte(dep)},
				}}}
			}
		case *extprocv3.ProcessingRequest_ResponseTrailers:
			p.mu.Lock()
			p.trailers = append(p.trailers, dep+"/"+extprocfilter.HeadersFromProto(r.ResponseTrailers.GetTrailers()).Value("x-checksum"))
			p.mu.Unlock()
		}
	})
}

// TestPerTryRoutesOnTollgateXDS: the edge runs the per-try xDS Tollgate
// emits (no NACK): a request on the per-try route of (g, dead) is tried on
// dead, then retried (503 is retriable) on ok through a new upstream
// filter stream with ok's deployment attribute and attempt 2, with the
// deployment's Host; once dead's outlier detection ejected it, a try goes
// straight to ok. A plain deployment route is unchanged.
func TestPerTryRoutesOnTollgateXDS(t *testing.T) {
	var deadHits atomic.Int32
	dead := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		deadHits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	var hosts sync.Map
	ok := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts.Store(r.Host, r.Header.Get("x-try"))
		w.Header().Set("content-type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	in := loopbackInput(t, []xds.Group{{Name: "g", Deployments: []string{"dead", "ok"}, Retries: 2}}, [2]string{"dead", dead}, [2]string{"ok", ok})
	in.Upstreams[0].AllowedFails = 2

	proc := &tryProc{}
	e := runEdge(t, serveTollgateXDS(t, in).conn, proc)
	url := "http://" + e.Addr().String()
	c := client(t)

	resp, body := post(t, c, url+"/v1/chat/completions", envoy.TryKey("g", "dead", 0), `{"model":"g"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.JSONEq(t, `{"ok":true}`, body)
	require.Equal(t, []string{"dead/1", "ok/2"}, proc.list())
	v, found := hosts.Load(ok)
	require.True(t, found, "auto_host_rewrite: the deployment's own Host")
	require.Equal(t, "ok", v, "the request as the try's filter released it")

	resp, _ = post(t, c, url+"/v1/chat/completions", envoy.TryKey("g", "dead", 0), `{"model":"g"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.EqualValues(t, 2, deadHits.Load())
	resp, _ = post(t, c, url+"/v1/chat/completions", envoy.TryKey("g", "dead", 0), `{"model":"g"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.EqualValues(t, 2, deadHits.Load(), "ejected after allowed_fails consecutive 5xx: the try goes to ok first")
	tries := proc.list()
	require.Equal(t, "ok/1", tries[len(tries)-1])

	resp, _ = post(t, c, url+"/v1/chat/completions", "dead", `{"model":"g"}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the plain route is not retried elsewhere")
}
