package extproc

import (
	"context"
	"slices"
	"strconv"
	"strings"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
)

// Per-try routing (docs/envoy.md, "Retries across deployments"): the
// processor runs at two places of the data plane.
//
//   - The router-level filter's stream authenticates, parses, picks the
//     group's first deployment (cooldowns, strategy, deployment quotas) and
//     admits the request on it, as for any request; but it does not
//     translate. It routes to the per-try route of (group, deployment),
//     whose aggregate cluster lists the deployments to try in order, and
//     hands its reservation to the first try (envoy.ReservedHeader).
//   - The upstream filter's stream, one per try, learns the deployment the
//     try landed on from envoy.TryAttribute. It is an ordinary attempt
//     stream on that deployment: it authenticates again, admits (or, for
//     the first try on the deployment admitted above, adopts that
//     reservation), translates the body for the deployment, and handles the
//     response: a failed try is settled at $0 (the data plane retries it on
//     the next deployment when its retry policy says so), the serving one
//     is translated back and settled at its deployment's price. A try that
//     lands on a deployment cooling down or at its quota, or that a strict
//     budget cannot cover, is answered with a local reply.
//
// Nothing ties the two streams together but the request's headers, so
// they may reach different processors.

// WithPerTry makes the processor route groups that retry per try (the data
// plane has the per-try xDS: xds.Input.Groups). Without it, retries use
// the retry token (retry.go).
func WithPerTry() Option { return func(p *Processor) { p.perTry = true } }

// tryState is a stream's part in per-try routing.
type tryState struct {
	router bool   // the router-level stream of a per-try group
	owned  bool   // router: a try answered the request (it settled)
	dep    string // upstream: the deployment this try landed on
	// upstream: the reservation the router-level stream made, when this
	// try adopts it.
	resID, resDep        string
	resMax               int64
	resClamped, resValid bool
}

// readTryAttribute reads the deployment of an upstream try from the first
// request message's attributes.
func (s *stream) readTryAttribute(req *extprocv3.ProcessingRequest) {
	if len(req.GetAttributes()) == 0 {
		return
	}
	v := req.GetAttributes()["envoy.filters.http.ext_proc"].GetFields()[envoy.TryAttribute]
	if dep := v.GetStringValue(); dep != "" {
		s.try.dep = dep
	}
}

// tryHeader reads the per-try request headers of an upstream try.
func (s *stream) tryHeader(key, v string) {
	if s.try.dep == "" {
		return
	}
	switch key {
	case envoy.AttemptCountHeader:
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n <= maxAttempts {
			s.att.n = n
		}
	case envoy.ReservedHeader:
		f := strings.Split(v, ";")
		if len(f) != 4 || f[0] == "" {
			return
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return
		}
		s.try.resID, s.try.resDep, s.try.resMax, s.try.resClamped, s.try.resValid = f[0], f[1], n, f[3] == "1", true
	}
}

// tryID names an upstream try: the first try on the deployment the router
// admitted takes the router's reservation and id; the others are
// "ID-N-x" like retries (retry.go).
func (s *stream) tryID() {
	if !s.try.resValid {
		return
	}
	if s.att.n <= 1 {
		s.id = s.try.resID
		return
	}
	s.id = s.try.resID + "-" + strconv.Itoa(s.att.n) + "-" + s.id[strings.LastIndexByte(s.id, '-')+1:]
}

// adopts reports whether this try takes over the router's reservation.
func (s *stream) adopts() bool {
	return s.try.resValid && s.att.n <= 1 && s.try.resDep == s.try.dep
}

// resolveTry is resolve for an upstream try: the deployment it landed on,
// found in the group the client asked for or in its fallback chain.
func (s *stream) resolveTry(ctx context.Context, gc GroupCatalog, model string) (*Target, error) {
	g, err := gc.ResolveGroup(ctx, s.principal, model)
	if err != nil || g == nil {
		return nil, err
	}
	byName := map[string]*Group{g.Name: g}
	chain := envoy.GroupChain(g.Name, func(name string) []string {
		fg, ok := byName[name]
		if !ok {
			if fg, _ = gc.ResolveGroup(ctx, s.principal, name); fg == nil {
				return nil
			}
			byName[name] = fg
		}
		return fg.Fallbacks
	})
	s.rtState = route{groups: s.rtState.first[:0]}
	s.rt = &s.rtState
	for _, name := range chain {
		cg := byName[name]
		if cg == nil {
			continue
		}
		s.rt.groups = append(s.rt.groups, cg)
		i := slices.IndexFunc(cg.Deployments, func(d *Deployment) bool { return d.Target.Deployment == s.try.dep })
		if i < 0 {
			continue
		}
		d := cg.Deployments[i]
		now := s.p.now()
		if !s.adopts() && len(g.Deployments) > 1 && s.p.router.cooling(d.Target.Deployment, now) {
			// Cooling down since the router-level stream chose: not called.
			return nil, &unavailableError{retryAfter: s.p.router.soonest(cg, now)}
		}
		s.rt.cands = []*Deployment{d}
		return d.Target, nil
	}
	// The data plane's xDS and this processor's catalog disagree (an
	// update between the two): not a deployment of this request.
	return nil, &unavailableError{}
}

// adopt is admit for the try that takes over the router's reservation.
func (s *stream) adopt() kernel.Decision {
	dep := s.rt.cands[0]
	s.rt.current, s.rt.last, s.rt.sentAt = dep, dep, s.p.now()
	s.p.router.start(dep)
	return kernel.Decision{Admitted: true, MaxTokens: s.try.resMax, Clamped: s.try.resClamped}
}

// routeTry ends the router-level stream's request phase: the request goes,
// untranslated, to the per-try route of its group and first deployment,
// with the reservation for the first try. The client's credentials stay:
// each try authenticates them again and removes them.
func (s *stream) routeTry(d kernel.Decision) *extprocv3.ProcessingResponse {
	dep := s.rt.current
	s.rt.current = nil
	s.p.router.finish(dep, 0) // in flight on the try, not here
	pr, x := newRequestBodyReply()
	x.c.ClearRouteCache = true
	var kvs [2]headerKV
	var vals [256]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	l = l.add(RouteHeader, envoy.TryKey(s.rt.groups[len(s.rt.groups)-1].Name, s.target.Deployment))
	clamped := "0"
	if d.Clamped {
		clamped = "1"
	}
	l = l.add(envoy.ReservedHeader, s.id+";"+s.target.Deployment+";"+strconv.FormatInt(d.MaxTokens, 10)+";"+clamped)
	x.hm.SetHeaders = l.options()
	x.hm.RemoveHeaders = routerRemoved
	s.mark(&s.report.Forwarded)
	return pr
}

// routerRemoved: a client's retry token never reaches a try (the
// reservation header is overwritten; Envoy removes a client's x-envoy-*
// headers at the edge, and ext_proc may not touch them).
var routerRemoved = []string{hdrRetry}

// tryRemoved is what an upstream try removes besides the client's
// credentials.
var tryRemoved = []string{envoy.ReservedHeader}

// tryResponse is the router-level stream's response headers: a try's
// response (it carries the attempts header a try sets) was handled by that
// try, which settled it; anything else (the data plane's own reply: no
// host, overflow) ends the reservation here.
func (s *stream) tryResponse(h *extprocv3.HttpHeaders) *extprocv3.ProcessingResponse {
	for _, hv := range h.GetHeaders().GetHeaders() {
		if hv.GetKey() == hdrAttempts {
			s.try.owned, s.settled, s.admitted = true, true, false
			pr, _ := newResponseHeadersReply()
			pr.ModeOverride = modeBodyNone
			return pr
		}
	}
	return nil
}

// modeBodyNone stops the response body from reaching the router-level
// stream once a try handles the response (shared: read-only).
var modeBodyNone = &extprocfilterv3.ProcessingMode{
	RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED,
	ResponseBodyMode: extprocfilterv3.ProcessingMode_NONE,
}

// routesPerTry reports whether this (router-level) stream routes per try:
// the processor does, the request is a first attempt, and the group it was
// admitted in retries elsewhere (envoy.PerTry, as the xDS emits it).
func (s *stream) routesPerTry() bool {
	if !s.p.perTry || s.rt == nil || s.try.dep != "" || s.att.n != 0 {
		return false
	}
	g := s.rt.groups[len(s.rt.groups)-1]
	s.try.router = envoy.PerTry(g.Retries, len(g.Deployments), len(g.Fallbacks))
	return s.try.router
}
