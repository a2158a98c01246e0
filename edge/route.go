package edge

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
)

// routeTable is a compiled route configuration.
type routeTable struct {
	name   string
	vhosts []*vhost
}

type vhost struct {
	name    string
	domains []string
	routes  []*route
}

type headerMatcher struct {
	name    string
	present bool // present_match: only presence matters
	kind    int  // string_match kind
	value   string
	fold    bool
	invert  bool
}

const (
	matchExact = iota
	matchPrefix
	matchSuffix
	matchContains
)

type route struct {
	name string
	// path match
	prefix, path, sepPrefix string
	kind                    int // 0 prefix, 1 path, 2 path_separated_prefix
	foldPath                bool
	headers                 []headerMatcher

	// action: cluster, or direct response
	cluster     string
	hostRewrite string
	timeout     time.Duration // 0: none
	idle        time.Duration // -1: unset (the HCM's)
	retries     int
	retryOnConn bool
	perTry      time.Duration
	perTryIdle  time.Duration
	direct      *directResponse
	try         routeTry        // per-try retry policy and host rewrite (pertry.go)
	redirect    *redirectPolicy // internal_redirect_policy, nil: none (redirect.go)

	// filter is the ext_proc client of requests that first match this route
	// (its request buffer limit), nil when ext_proc is off.
	filter *extprocfilter.Client
}

type directResponse struct {
	status  int
	body    []byte
	headers []headerOp
}

type headerOp struct {
	key, value string
	add        bool // append instead of overwrite
}

// compileRoutes compiles rc for listener lc; newClient makes the ext_proc
// client for a request buffer limit.
func compileRoutes(rc *routev3.RouteConfiguration, lc *listenerConf, newClient func(limit int) *extprocfilter.Client) (*routeTable, error) {
	if err := rc.ValidateAll(); err != nil {
		return nil, err
	}
	t := &routeTable{name: rc.GetName()}
	clients := map[int]*extprocfilter.Client{}
	clientFor := func(limit int) *extprocfilter.Client {
		if lc.extProc == nil {
			return nil
		}
		if c, ok := clients[limit]; ok {
			return c
		}
		c := newClient(limit)
		clients[limit] = c
		return c
	}
	for _, vh := range rc.GetVirtualHosts() {
		v := &vhost{name: vh.GetName()}
		for _, d := range vh.GetDomains() {
			v.domains = append(v.domains, strings.ToLower(d))
		}
		vhLimit := lc.bufferLimit
		if l := vh.GetRequestBodyBufferLimit(); l != nil {
			vhLimit = int(min(l.GetValue(), 1<<31-1))
		}
		for _, r := range vh.GetRoutes() {
			cr, err := compileRoute(r)
			if err != nil {
				return nil, fmt.Errorf("route %q: %w", r.GetName(), err)
			}
			limit := vhLimit
			if l := r.GetRequestBodyBufferLimit(); l != nil {
				limit = int(min(l.GetValue(), 1<<31-1))
			}
			cr.try.attemptCount = vh.GetIncludeRequestAttemptCount()
			if !extProcDisabled(r.GetTypedPerFilterConfig()) && !extProcDisabled(vh.GetTypedPerFilterConfig()) {
				cr.filter = clientFor(limit)
			}
			v.routes = append(v.routes, cr)
		}
		t.vhosts = append(t.vhosts, v)
	}
	return t, nil
}

// extProcDisabled reports an ExtProcPerRoute{disabled: true} in a per-filter
// config map.
func extProcDisabled(m map[string]*anypb.Any) bool {
	for _, a := range m {
		var per extprocfilterv3.ExtProcPerRoute
		if a.MessageIs(&per) && a.UnmarshalTo(&per) == nil && per.GetDisabled() {
			return true
		}
	}
	return false
}

func compileRoute(r *routev3.Route) (*route, error) {
	m := r.GetMatch()
	cr := &route{name: r.GetName(), idle: -1, foldPath: m.GetCaseSensitive() != nil && !m.GetCaseSensitive().GetValue()}
	switch p := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		cr.kind, cr.prefix = 0, p.Prefix
	case *routev3.RouteMatch_Path:
		cr.kind, cr.path = 1, p.Path
	case *routev3.RouteMatch_PathSeparatedPrefix:
		cr.kind, cr.sepPrefix = 2, p.PathSeparatedPrefix
	default:
		return nil, errors.New("only prefix, path and path_separated_prefix matches are supported")
	}
	if len(m.GetQueryParameters()) > 0 || m.GetGrpc() != nil || m.GetRuntimeFraction() != nil || m.GetTlsContext() != nil {
		return nil, errors.New("unsupported route match")
	}
	for _, h := range m.GetHeaders() {
		hm, err := compileHeaderMatcher(h)
		if err != nil {
			return nil, err
		}
		cr.headers = append(cr.headers, hm)
	}
	switch a := r.GetAction().(type) {
	case *routev3.Route_Route:
		if err := cr.readAction(a.Route); err != nil {
			return nil, err
		}
	case *routev3.Route_DirectResponse:
		d := &directResponse{status: int(a.DirectResponse.GetStatus())}
		body, err := dataSource(a.DirectResponse.GetBody())
		if err != nil {
			return nil, err
		}
		d.body = body
		for _, h := range r.GetResponseHeadersToAdd() {
			d.headers = append(d.headers, headerOption(h))
		}
		cr.direct = d
	default:
		return nil, errors.New("only route and direct_response actions are supported")
	}
	return cr, nil
}

func (cr *route) readAction(a *routev3.RouteAction) error {
	c, ok := a.GetClusterSpecifier().(*routev3.RouteAction_Cluster)
	if !ok {
		return errors.New("only the cluster specifier is supported")
	}
	cr.cluster = c.Cluster
	switch h := a.GetHostRewriteSpecifier().(type) {
	case nil:
	case *routev3.RouteAction_HostRewriteLiteral:
		cr.hostRewrite = h.HostRewriteLiteral
	case *routev3.RouteAction_AutoHostRewrite:
		cr.try.autoHost = h.AutoHostRewrite.GetValue()
	default:
		return errors.New("only host_rewrite_literal is supported")
	}
	cr.timeout = 15 * time.Second // Envoy's default route timeout
	if d := a.GetTimeout(); d != nil {
		cr.timeout = d.AsDuration()
	}
	if d := a.GetIdleTimeout(); d != nil {
		cr.idle = d.AsDuration()
	}
	if p := a.GetInternalRedirectPolicy(); p != nil {
		rp, err := compileRedirect(p)
		if err != nil {
			return err
		}
		cr.redirect = rp
	}
	if rp := a.GetRetryPolicy(); rp != nil {
		cr.retries = 1 // Envoy's default num_retries
		if n := rp.GetNumRetries(); n != nil {
			cr.retries = int(n.GetValue())
		}
		for _, on := range strings.Split(rp.GetRetryOn(), ",") {
			switch strings.TrimSpace(on) {
			case "connect-failure":
				cr.retryOnConn = true
			case "refused-stream", "":
				// HTTP/2 refused streams are retried by the transport.
			case "reset", "retriable-status-codes":
				// Per-try routes' (pertry.go).
			default:
				return fmt.Errorf("retry_on %q is not supported", on)
			}
		}
		if d := rp.GetPerTryTimeout(); d != nil {
			cr.perTry = d.AsDuration()
		}
		if d := rp.GetPerTryIdleTimeout(); d != nil {
			cr.perTryIdle = d.AsDuration()
		}
		if err := cr.try.read(rp); err != nil {
			return err
		}
	}
	return nil
}

func compileHeaderMatcher(h *routev3.HeaderMatcher) (headerMatcher, error) {
	hm := headerMatcher{name: strings.ToLower(h.GetName()), invert: h.GetInvertMatch()}
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_PresentMatch:
		hm.present = true
		if !s.PresentMatch {
			hm.invert = !hm.invert
		}
	case *routev3.HeaderMatcher_StringMatch:
		sm := s.StringMatch
		hm.fold = sm.GetIgnoreCase()
		switch p := sm.GetMatchPattern().(type) {
		case *matcherv3.StringMatcher_Exact:
			hm.kind, hm.value = matchExact, p.Exact
		case *matcherv3.StringMatcher_Prefix:
			hm.kind, hm.value = matchPrefix, p.Prefix
		case *matcherv3.StringMatcher_Suffix:
			hm.kind, hm.value = matchSuffix, p.Suffix
		case *matcherv3.StringMatcher_Contains:
			hm.kind, hm.value = matchContains, p.Contains
		default:
			return hm, errors.New("only exact, prefix, suffix and contains string matches are supported")
		}
	default:
		return hm, errors.New("only string_match and present_match header matchers are supported")
	}
	return hm, nil
}

// headerOption reads a HeaderValueOption (append_action).
func headerOption(h *corev3.HeaderValueOption) headerOp {
	op := headerOp{key: strings.ToLower(h.GetHeader().GetKey()), value: h.GetHeader().GetValue()}
	if len(h.GetHeader().GetRawValue()) > 0 {
		op.value = string(h.GetHeader().GetRawValue())
	}
	op.add = h.GetAppendAction() == corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
	return op
}

func dataSource(d *corev3.DataSource) ([]byte, error) {
	switch s := d.GetSpecifier().(type) {
	case nil:
		return nil, nil
	case *corev3.DataSource_InlineString:
		return []byte(s.InlineString), nil
	case *corev3.DataSource_InlineBytes:
		return s.InlineBytes, nil
	case *corev3.DataSource_Filename:
		return readFile(s.Filename)
	}
	return nil, errors.New("unsupported data source")
}

// vhostFor picks the virtual host of authority like Envoy: exact domain, then
// the longest "*.suffix"/"*suffix", then the longest "prefix*", then "*".
func (t *routeTable) vhostFor(authority string) *vhost {
	host := strings.ToLower(authority)
	var best *vhost
	bestRank, bestLen := 4, -1
	for _, v := range t.vhosts {
		for _, d := range v.domains {
			rank, n := domainMatch(d, host)
			if rank < 0 {
				continue
			}
			if rank < bestRank || (rank == bestRank && n > bestLen) {
				best, bestRank, bestLen = v, rank, n
			}
		}
	}
	return best
}

// domainMatch ranks a domain pattern against host: 0 exact, 1 suffix
// wildcard, 2 prefix wildcard, 3 "*", -1 no match; n is the pattern length.
func domainMatch(d, host string) (rank, n int) {
	switch {
	case d == "*":
		return 3, 0
	case d == host:
		return 0, len(d)
	case strings.HasPrefix(d, "*") && strings.HasSuffix(host, d[1:]) && len(host) > len(d)-1:
		return 1, len(d)
	case strings.HasSuffix(d, "*") && strings.HasPrefix(host, d[:len(d)-1]) && len(host) > len(d)-1:
		return 2, len(d)
	}
	// Envoy also matches the host without its port.
	if i := strings.LastIndexByte(host, ':'); i > 0 && !strings.Contains(host[i:], "]") {
		return domainMatch(d, host[:i])
	}
	return -1, 0
}

// match returns the first route of the table matching h, or nil.
func (t *routeTable) match(h extprocfilter.Headers) *route {
	v := t.vhostFor(h.Value(":authority"))
	if v == nil {
		return nil
	}
	path := h.Value(":path")
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	for _, r := range v.routes {
		if r.matches(path, h) {
			return r
		}
	}
	return nil
}

func (r *route) matches(path string, h extprocfilter.Headers) bool {
	p := path
	switch r.kind {
	case 0:
		if r.foldPath {
			if len(p) < len(r.prefix) || !strings.EqualFold(p[:len(r.prefix)], r.prefix) {
				return false
			}
		} else if !strings.HasPrefix(p, r.prefix) {
			return false
		}
	case 1:
		if r.foldPath {
			if !strings.EqualFold(p, r.path) {
				return false
			}
		} else if p != r.path {
			return false
		}
	case 2:
		if !strings.HasPrefix(p, r.sepPrefix) || (len(p) > len(r.sepPrefix) && p[len(r.sepPrefix)] != '/') {
			return false
		}
	}
	for i := range r.headers {
		if !r.headers[i].matches(h) {
			return false
		}
	}
	return true
}

func (m *headerMatcher) matches(h extprocfilter.Headers) bool {
	vals := h.Values(m.name)
	var ok bool
	if m.present {
		ok = len(vals) > 0
	} else if len(vals) > 0 {
		v := strings.Join(vals, ",")
		want := m.value
		if m.fold {
			v, want = strings.ToLower(v), strings.ToLower(want)
		}
		switch m.kind {
		case matchExact:
			ok = v == want
		case matchPrefix:
			ok = strings.HasPrefix(v, want)
		case matchSuffix:
			ok = strings.HasSuffix(v, want)
		case matchContains:
			ok = strings.Contains(v, want)
		}
	} else {
		// A missing header never matches a string matcher, inverted or not.
		return false
	}
	return ok != m.invert
}
