package edge

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/h1"
	"github.com/tollgate-ai/tollgate/envoy"
)

// Per-try routing, as Envoy runs the per-try xDS (docs/envoy.md, "Retries
// across deployments"): a route whose cluster is an envoy.clusters.aggregate
// sends each try to the next of its clusters not tried yet (retry_priority
// previous_priorities; a cluster whose host outlier detection ejected is
// passed over while another is left), through the aggregate's upstream
// ext_proc filter (one stream per try, with the picked host's deployment as
// its request attribute and x-envoy-attempt-count), and retries on the
// route's retry_on / retriable_status_codes with its backoff, a reset
// header (retry-after) honoured up to the rate-limited max_interval. Only a
// response whose headers have not gone downstream is retried; a try's local
// reply goes downstream, not retried (Envoy's
// UpstreamFilterManager::sendLocalReply). The edge keeps the body the
// router-level filter released: the router needs a buffered copy for
// retries, as Envoy's does.

// tryCluster is what per-try routing reads of a cluster.
type tryCluster struct {
	// An aggregate: its clusters in priority order and its upstream
	// ext_proc filter (nil: none).
	members  []string
	extProc  *extprocfilterv3.ExternalProcessor
	withAttr bool // the filter asks for envoy.TryAttribute

	// A deployment cluster: its endpoint's deployment and hostname, and
	// outlier detection (consecutive 5xx ejects for the base time).
	deployment, hostname string
	maxFails             int32 // 0: no outlier detection
	ejection             time.Duration
	fails                atomic.Int32
	ejectedUntil         atomic.Int64 // h1.MonoNow
}

// compileAggregate compiles an envoy.clusters.aggregate cluster with its
// upstream filters (ext_proc, then upstream_codec).
func compileAggregate(c *clusterv3.Cluster) (*cluster, error) {
	ct := c.GetClusterType()
	var agg aggregatev3.ClusterConfig
	if ct.GetName() != "envoy.clusters.aggregate" || ct.GetTypedConfig().UnmarshalTo(&agg) != nil {
		return nil, fmt.Errorf("cluster %q: cluster type %q is not supported", c.GetName(), ct.GetName())
	}
	cl := &cluster{name: c.GetName(), src: c, maxReqs: defaultCircuitMax}
	cl.try.members = agg.GetClusters()
	if a, ok := c.GetTypedExtensionProtocolOptions()[httpOptionsKey]; ok {
		var o httpv3.HttpProtocolOptions
		if err := a.UnmarshalTo(&o); err != nil {
			return nil, fmt.Errorf("cluster %q: http protocol options: %w", c.GetName(), err)
		}
		for i, f := range o.GetHttpFilters() {
			msg, err := f.GetTypedConfig().UnmarshalNew()
			if err != nil {
				return nil, fmt.Errorf("cluster %q: upstream filter %q: %w", c.GetName(), f.GetName(), err)
			}
			switch m := msg.(type) {
			case *extprocfilterv3.ExternalProcessor:
				if cl.try.extProc != nil {
					return nil, fmt.Errorf("cluster %q: only one upstream ext_proc filter is supported", c.GetName())
				}
				cl.try.extProc = m
				for _, a := range m.GetRequestAttributes() {
					switch a {
					case envoy.TryAttribute:
						cl.try.withAttr = true
					default:
						return nil, fmt.Errorf("cluster %q: request attribute %q is not supported", c.GetName(), a)
					}
				}
			case *upstreamcodecv3.UpstreamCodec:
				if i != len(o.GetHttpFilters())-1 {
					return nil, fmt.Errorf("cluster %q: upstream_codec must be the last upstream filter", c.GetName())
				}
			default:
				return nil, fmt.Errorf("cluster %q: upstream filter %q is not supported", c.GetName(), f.GetName())
			}
		}
	}
	return cl, nil
}

// readTry reads a deployment cluster's endpoint metadata and hostname and
// its outlier detection.
func (cl *cluster) readTry(c *clusterv3.Cluster) {
	for _, le := range c.GetLoadAssignment().GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			if cl.try.deployment == "" {
				cl.try.deployment = lb.GetMetadata().GetFilterMetadata()[envoy.MetadataNamespace].GetFields()[envoy.TryMetadataKey].GetStringValue()
				cl.try.hostname = lb.GetEndpoint().GetHostname()
			}
		}
	}
	if od := c.GetOutlierDetection(); od != nil {
		cl.try.maxFails = 5 // Envoy's default consecutive_5xx
		if v := od.GetConsecutive_5Xx(); v != nil {
			cl.try.maxFails = int32(v.GetValue())
		}
		cl.try.ejection = 30 * time.Second // Envoy's default base_ejection_time
		if d := od.GetBaseEjectionTime(); d != nil {
			cl.try.ejection = d.AsDuration()
		}
	}
}

// outcome feeds outlier detection with a try's status (5xx, the router's
// local 503/504 included, counts as a failure).
func (cl *cluster) outcome(status int) {
	if cl.try.maxFails <= 0 {
		return
	}
	if status < 500 {
		cl.try.fails.Store(0)
		return
	}
	if cl.try.fails.Add(1) >= cl.try.maxFails {
		cl.try.fails.Store(0)
		cl.try.ejectedUntil.Store(h1.MonoNow() + int64(cl.try.ejection))
	}
}

func (cl *cluster) ejected(now int64) bool { return cl.try.ejectedUntil.Load() > now }

// routeTry is a route's per-try part.
type routeTry struct {
	autoHost     bool // auto_host_rewrite: the endpoint's hostname
	attemptCount bool // the virtual host's include_request_attempt_count
	reset        bool // retry_on reset
	statuses     []int
	base, max    time.Duration // retry_back_off
	resetHeaders []string      // rate_limited_retry_back_off, SECONDS
	rlMax        time.Duration
}

// read reads the retry policy's per-try fields.
func (t *routeTry) read(rp *routev3.RetryPolicy) error {
	for _, on := range strings.Split(rp.GetRetryOn(), ",") {
		switch strings.TrimSpace(on) {
		case "reset":
			t.reset = true
		case "retriable-status-codes":
			for _, c := range rp.GetRetriableStatusCodes() {
				t.statuses = append(t.statuses, int(c))
			}
		}
	}
	if p := rp.GetRetryPriority(); p != nil && p.GetName() != "envoy.retry_priorities.previous_priorities" {
		return fmt.Errorf("retry_priority %q is not supported", p.GetName())
	}
	for _, p := range rp.GetRetryHostPredicate() {
		if p.GetName() != "envoy.retry_host_predicates.previous_hosts" {
			return fmt.Errorf("retry_host_predicate %q is not supported", p.GetName())
		}
	}
	t.base, t.max = 25*time.Millisecond, 250*time.Millisecond // Envoy's defaults
	if b := rp.GetRetryBackOff(); b != nil {
		t.base = b.GetBaseInterval().AsDuration()
		t.max = 10 * t.base
		if m := b.GetMaxInterval(); m != nil {
			t.max = m.AsDuration()
		}
	}
	if rl := rp.GetRateLimitedRetryBackOff(); rl != nil {
		for _, h := range rl.GetResetHeaders() {
			if h.GetFormat() != routev3.RetryPolicy_SECONDS {
				return errors.New("only SECONDS reset headers are supported")
			}
			t.resetHeaders = append(t.resetHeaders, strings.ToLower(h.GetName()))
		}
		t.rlMax = 300 * time.Second
		if m := rl.GetMaxInterval(); m != nil {
			t.rlMax = m.AsDuration()
		}
	}
	return nil
}

// retriable reports whether a try that ended with status is retried
// (local: the router's own reply, a connect failure, reset or timeout).
func (t *routeTry) retriable(status int, local bool) bool {
	return slices.Contains(t.statuses, status) || local && t.reset && status >= 500
}

// wait is the backoff before retry n (1: the first): fully jittered
// exponential, or a reset header's interval when it is within rlMax.
func (t *routeTry) wait(n int, h http.Header) time.Duration {
	for _, name := range t.resetHeaders {
		if s, err := strconv.Atoi(strings.TrimSpace(h.Get(name))); err == nil && s >= 0 {
			if d := time.Duration(s) * time.Second; d <= t.rlMax {
				return d
			}
		}
	}
	upper := min(t.base<<min(n-1, 16), t.max)
	if upper <= 0 {
		return 0
	}
	return rand.N(upper)
}

// tryFilters makes the upstream ext_proc client of every aggregate.
func (e *Edge) tryFilters(clusters map[string]*cluster, lc *listenerConf) (map[string]*extprocfilter.Client, error) {
	var out map[string]*extprocfilter.Client
	for name, cl := range clusters {
		if cl.try.extProc == nil {
			continue
		}
		cfg, err := extProcConfig(cl.try.extProc, e.base, lc)
		if err != nil {
			return nil, fmt.Errorf("cluster %q: upstream ext_proc: %w", name, err)
		}
		if out == nil {
			out = map[string]*extprocfilter.Client{}
		}
		out[name] = extprocfilter.NewClient(e.proc, cfg)
	}
	return out, nil
}

// tries runs the request on an aggregate's clusters, try after try, and
// returns the response that goes downstream (through the router-level
// filter), or nil when the client went away.
func (x *exchange) tries(rt *route, agg *cluster, body []byte) *http.Response {
	var tried []*cluster
	for n := 1; ; n++ {
		cl := x.pickTry(agg, tried)
		if cl == nil {
			return localResponse(http.StatusServiceUnavailable, nil, []byte("no healthy upstream"))
		}
		tried = append(tried, cl)
		resp, local := x.try(rt, agg, cl, body, n)
		if resp == nil {
			return nil
		}
		if local || n > rt.retries || len(tried) == len(agg.try.members) || !rt.try.retriable(resp.StatusCode, resp.Request == nil) || x.upstreamDone() {
			return resp
		}
		wait := rt.try.wait(n, resp.Header)
		_ = resp.Body.Close()
		if x.deadline > 0 && h1.MonoNow()+int64(wait) >= x.deadline || !x.newTry() || wait > 0 && !sleepCtx(x.upCtx, wait) {
			return nil
		}
	}
}

// pickTry is the aggregate's next cluster not tried, in priority order; an
// ejected one only when every one left is ejected (Envoy's panic routing).
func (x *exchange) pickTry(agg *cluster, tried []*cluster) *cluster {
	now := h1.MonoNow()
	var ejected *cluster
	for _, name := range agg.try.members {
		cl := x.st.clusters[name]
		if cl == nil || cl.try.members != nil || slices.Contains(tried, cl) {
			continue
		}
		if !cl.ejected(now) {
			return cl
		}
		if ejected == nil {
			ejected = cl
		}
	}
	return ejected
}

// releaseTry ends the running try's filter (upstream filters), if any: it is
// released for good, and the exchange forgets it.
func (x *exchange) releaseTry() {
	if x.tryF != nil {
		x.tryF.Release()
		x.tryF = nil
	}
}

// try sends one try to cl through the aggregate's upstream filter. local
// reports a reply of that filter (it goes downstream, not retried).
func (x *exchange) try(rt *route, agg *cluster, cl *cluster, body []byte, n int) (resp *http.Response, local bool) {
	fwd, out := x.fwd, body
	x.releaseTry()
	if c := x.st.tryFilters[agg.name]; c != nil {
		opts := []extprocfilter.StartOption{extprocfilter.WithOwnedHeaders()}
		if agg.try.withAttr {
			opts = append(opts, extprocfilter.WithRequestAttributes(map[string]any{envoy.TryAttribute: cl.try.deployment}))
		}
		x.tryF = c.Start(x.ctx, opts...)
		// As Envoy's tries (UpstreamRequest::acceptHeadersFromRouter runs
		// the upstream filters on the router's own header map, which
		// Filter::doRetry does not restore), a try starts from the headers
		// the previous try released; the body is the router's copy.
		held := x.fwd
		if x.tryFwd != nil {
			held = x.tryFwd
		}
		h := make(extprocfilter.Headers, 0, len(held)+12)
		for _, kv := range held {
			if kv.Key != envoy.AttemptCountHeader { // set again below (Envoy overwrites it)
				h = append(h, kv)
			}
		}
		if rt.try.attemptCount {
			h = append(h, extprocfilter.Header{Key: envoy.AttemptCountHeader, Value: strconv.Itoa(n)})
		}
		var lr *extprocfilter.LocalReply
		if fwd, out, lr = x.tryRequest(h, body); lr != nil {
			return localResponse(lr.Status, headerOps(lr.Headers), lr.Body), true
		}
		if fwd == nil {
			return localResponse(http.StatusInternalServerError, nil, nil), true
		}
	}
	if x.release != nil {
		x.release()
		x.release = nil
	}
	one := *rt
	one.cluster, one.retryOnConn = cl.name, false
	if rt.try.autoHost && cl.try.hostname != "" {
		one.hostRewrite = cl.try.hostname
	}
	saved := x.fwd
	x.fwd, x.tryFwd = fwd, fwd
	resp = x.roundTrip(&one, upstreamBody{whole: out}) //nolint:bodyclose // tries or respond closes it
	x.fwd = saved
	if resp == nil {
		return nil, false
	}
	if x.tryF == nil || resp.Request == nil {
		// The router's own reply (connect failure, reset, per-try
		// timeout): upstream filters do not see it, as in Envoy, whose
		// router resets the try (its filter stream ends with no response).
		x.releaseTry()
		cl.outcome(resp.StatusCode)
		return resp, false
	}
	resp, local = x.tryResponse(resp)
	if resp != nil && !local {
		cl.outcome(resp.StatusCode)
	}
	return resp, local
}

// tryRequest passes the request through the try's filter: the released
// headers and body, or its local reply.
func (x *exchange) tryRequest(h extprocfilter.Headers, body []byte) (extprocfilter.Headers, []byte, *extprocfilter.LocalReply) {
	var fwd extprocfilter.Headers
	var out []byte
	take := func(res *extprocfilter.Result, err error) *extprocfilter.LocalReply {
		if err != nil {
			return &extprocfilter.LocalReply{Status: http.StatusInternalServerError}
		}
		if res.LocalReply != nil {
			return res.LocalReply
		}
		if res.Headers != nil {
			fwd = res.Headers
		}
		out = append(out, res.Body...)
		return nil
	}
	if lr := take(x.tryF.RequestHeaders(h, len(body) == 0)); lr != nil {
		return nil, nil, lr
	}
	if len(body) > 0 {
		if lr := take(x.tryF.RequestBody(body, true)); lr != nil {
			return nil, nil, lr
		}
	}
	return fwd, out, nil
}

// tryResponse passes a try's response through its filter: a held (BUFFERED)
// response is read whole; a released one (STREAMED, or no body) streams
// through it as the router-level filter and the client read it.
func (x *exchange) tryResponse(resp *http.Response) (*http.Response, bool) {
	h := responseHeaders(resp) // respond.go
	noBody := resp.Body == http.NoBody || resp.ContentLength == 0
	res, err := x.tryF.ResponseHeaders(h, noBody)
	if err != nil {
		_ = resp.Body.Close()
		return localResponse(http.StatusInternalServerError, nil, nil), true
	}
	if res.LocalReply != nil {
		_ = resp.Body.Close()
		return localResponse(res.LocalReply.Status, headerOps(res.LocalReply.Headers), res.LocalReply.Body), true
	}
	if res.Headers != nil {
		out := synthetic(resp, res.Headers, nil)
		if out.Body = http.NoBody; out.ContentLength != 0 {
			out.Body = &filteredBody{f: x.tryF, up: resp.Body, upResp: resp, trailer: out.Trailer, rd: newReader(), pending: res.Body, done: noBody}
		}
		return out, false
	}
	all, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if rerr != nil {
		return localResponse(http.StatusServiceUnavailable, nil, []byte(bodyConnectFailure+"connection termination")), false
	}
	res, err = bodyThenTrailers(x.tryF, all, true, trailers(resp.Trailer))
	if err != nil || res.Headers == nil && res.LocalReply == nil {
		return localResponse(http.StatusInternalServerError, nil, nil), true
	}
	if res.LocalReply != nil {
		return localResponse(res.LocalReply.Status, headerOps(res.LocalReply.Headers), res.LocalReply.Body), true
	}
	out := synthetic(resp, res.Headers, io.NopCloser(strings.NewReader(string(res.Body))))
	addTrailers(out.Trailer, res.Trailers)
	return out, false
}

// bodyThenTrailers hands the try's filter a body chunk and, at the end of a
// response that has trailers, the trailers that end it (as the router-level
// filter gets them, respond.go): one result, in the order the filter
// released them. A try's trailers go through its filter and on downstream.
func bodyThenTrailers(f *extprocfilter.Stream, chunk []byte, eof bool, tr extprocfilter.Headers) (*extprocfilter.Result, error) {
	res, err := f.ResponseBody(chunk, eof && tr == nil)
	if err != nil || tr == nil || res.LocalReply != nil || res.Reset {
		return res, err
	}
	out := *res // the next call reuses *res (extprocfilter.Result)
	more, err := f.ResponseTrailers(tr)
	if err != nil || more.LocalReply != nil || more.Reset {
		return more, err
	}
	if out.Headers == nil {
		out.Headers = more.Headers
	}
	out.Body = append(append([]byte(nil), out.Body...), more.Body...)
	out.Trailers = more.Trailers
	if out.Trailers == nil {
		out.Trailers = tr
	}
	return &out, nil
}

// addTrailers sets a response's trailers.
func addTrailers(dst http.Header, tr extprocfilter.Headers) {
	for _, kv := range tr {
		dst.Add(kv.Key, kv.Value)
	}
}

// synthetic is the response the try's filter released: headers h, body.
func synthetic(up *http.Response, h extprocfilter.Headers, body io.ReadCloser) *http.Response {
	out := &http.Response{StatusCode: up.StatusCode, Header: http.Header{}, Trailer: http.Header{}, Body: body, ContentLength: -1, Request: up.Request}
	for _, kv := range h {
		switch {
		case kv.Key == ":status":
			if n, err := strconv.Atoi(kv.Value); err == nil {
				out.StatusCode = n
			}
		case strings.HasPrefix(kv.Key, ":"):
		default:
			out.Header.Add(kv.Key, kv.Value)
			if kv.Key == "content-length" {
				out.ContentLength, _ = strconv.ParseInt(kv.Value, 10, 64)
			}
		}
	}
	if out.ContentLength == 0 && body != nil {
		out.Body = http.NoBody
	}
	return out
}

// headerOps are a local reply's headers as a router local reply takes them.
func headerOps(h extprocfilter.Headers) []headerOp {
	out := make([]headerOp, 0, len(h))
	for _, kv := range h {
		if !strings.HasPrefix(kv.Key, ":") && kv.Key != "content-length" {
			out = append(out, headerOp{key: kv.Key, value: kv.Value, add: true})
		}
	}
	return out
}

// filteredBody is a try's response body through the try's filter; the
// upstream trailers go through it at the end, into trailer (the response's
// Trailer, read once the body is done).
type filteredBody struct {
	f       *extprocfilter.Stream
	up      io.ReadCloser
	upResp  *http.Response
	trailer http.Header
	rd      *reader
	pending []byte
	done    bool // the filter saw the end of the body
}

func (b *filteredBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.done {
			return 0, io.EOF
		}
		chunk, err := b.rd.read(b.up)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		eof := err != nil
		if len(chunk) == 0 && !eof {
			continue
		}
		var tr extprocfilter.Headers
		if eof {
			tr = trailers(b.upResp.Trailer)
		}
		res, ferr := bodyThenTrailers(b.f, chunk, eof, tr)
		if ferr != nil || res.Reset || res.LocalReply != nil {
			return 0, errors.New("edge: upstream filter ended the response")
		}
		b.pending, b.done = res.Body, eof
		addTrailers(b.trailer, res.Trailers)
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func (b *filteredBody) Close() error {
	b.rd.close()
	return b.up.Close()
}

// forward sends the released request: through the aggregate's tries on a
// per-try route, else to the route's cluster.
func (x *exchange) forward(rt *route) *http.Response {
	if rt != nil && rt.direct == nil {
		if agg := x.st.clusters[rt.cluster]; agg != nil && agg.try.members != nil {
			return x.tries(rt, agg, x.body)
		}
	}
	return x.roundTrip(rt, upstreamBody{whole: x.body})
}

// forwardStream is forward for a body streamed upstream: a per-try route
// keeps the whole body first (a retry sends it again).
func (x *exchange) forwardStream(rt *route, body *io.PipeReader) *http.Response {
	if rt != nil && rt.direct == nil {
		if agg := x.st.clusters[rt.cluster]; agg != nil && agg.try.members != nil {
			all, err := io.ReadAll(body)
			if err != nil {
				return nil
			}
			return x.tries(rt, agg, all)
		}
	}
	return x.roundTripStream(rt, body)
}
