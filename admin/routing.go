package admin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// The routing fields of deployments and model groups: conversions between
// the API and the store, and the checks that need the store.

// DeploymentState is the router's view of one deployment (see
// adminv1.DeploymentState).
type DeploymentState struct {
	CoolingUntil time.Time // zero: healthy
	ErrorRate    float64
	Latency      time.Duration
	InFlight     int64
}

// RoutingStates is the router's view of the deployments, when the admin
// server runs beside one (tollgate run, or a replica sharing Redis).
type RoutingStates interface {
	DeploymentStates(ctx context.Context) map[string]DeploymentState
}

// WithRoutingStates lets deployment list and get show each deployment's state.
func WithRoutingStates(rs RoutingStates) Option { return func(s *Server) { s.routing = rs } }

func durationOf(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}

func durationView(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

func deploymentPolicyOf(in *adminv1.Deployment) store.DeploymentPolicy {
	return store.DeploymentPolicy{
		Cooldown: durationOf(in.GetCooldown()), AllowedFails: in.GetAllowedFails(),
		Timeout: durationOf(in.GetTimeout()), FirstByteTimeout: durationOf(in.GetFirstByteTimeout()),
		ConnectTimeout: durationOf(in.GetConnectTimeout()),
	}
}

func deploymentPolicyView(out *adminv1.Deployment, p *store.DeploymentPolicy) *adminv1.Deployment {
	out.Cooldown, out.AllowedFails = durationView(p.Cooldown), p.AllowedFails
	out.Timeout, out.FirstByteTimeout = durationView(p.Timeout), durationView(p.FirstByteTimeout)
	out.ConnectTimeout = durationView(p.ConnectTimeout)
	return out
}

// updateDeploymentPolicy copies the masked routing fields of in into p.
func updateDeploymentPolicy(p *store.DeploymentPolicy, in *adminv1.Deployment, paths []string) error {
	src := deploymentPolicyOf(in)
	if hasPath(paths, "cooldown") {
		p.Cooldown = src.Cooldown
	}
	if hasPath(paths, "allowed_fails") {
		p.AllowedFails = src.AllowedFails
	}
	if hasPath(paths, "timeout") {
		p.Timeout = src.Timeout
	}
	if hasPath(paths, "first_byte_timeout") {
		p.FirstByteTimeout = src.FirstByteTimeout
	}
	if hasPath(paths, "connect_timeout") {
		p.ConnectTimeout = src.ConnectTimeout
	}
	return policyError(p.Validate())
}

func policyError(err error) error {
	if err != nil {
		return errorf(ErrInvalid, "deployment: %v", err)
	}
	return nil
}

// stateView fills out.State from the router's view.
func (s *Server) stateView(ctx context.Context, out []*adminv1.Deployment) {
	if s.routing == nil || len(out) == 0 {
		return
	}
	states := s.routing.DeploymentStates(ctx)
	for _, d := range out {
		st, ok := states[d.GetId()]
		if !ok {
			d.State = &adminv1.DeploymentState{Health: "healthy"}
			continue
		}
		v := &adminv1.DeploymentState{Health: "healthy", ErrorRate: st.ErrorRate, InFlight: st.InFlight, Latency: durationView(st.Latency)}
		if !st.CoolingUntil.IsZero() {
			v.Health, v.CooldownUntil = "cooling_down", timestamppb.New(st.CoolingUntil)
		}
		d.State = v
	}
}

func groupRoutingOf(in *adminv1.Model) store.GroupRouting {
	g := store.GroupRouting{
		Routing:                in.GetRouting(),
		Fallbacks:              slices.Clone(in.GetFallbacks()),
		ContextWindowFallbacks: slices.Clone(in.GetContextWindowFallbacks()),
		ContentPolicyFallbacks: slices.Clone(in.GetContentPolicyFallbacks()),
	}
	if in.Retries != nil {
		n := in.GetRetries()
		g.Retries = &n
	}
	return g
}

func groupRoutingView(out *adminv1.Model, g *store.GroupRouting) *adminv1.Model {
	out.Routing = g.Routing
	if g.Retries != nil {
		n := *g.Retries
		out.Retries = &n
	}
	out.Fallbacks = slices.Clone(g.Fallbacks)
	out.ContextWindowFallbacks = slices.Clone(g.ContextWindowFallbacks)
	out.ContentPolicyFallbacks = slices.Clone(g.ContentPolicyFallbacks)
	return out
}

// updateGroupRouting copies the masked routing fields of in into g.
func updateGroupRouting(g *store.GroupRouting, in *adminv1.Model, paths []string) {
	src := groupRoutingOf(in)
	if hasPath(paths, "routing") {
		g.Routing = src.Routing
	}
	if hasPath(paths, "retries") {
		g.Retries = src.Retries
	}
	if hasPath(paths, "fallbacks") {
		g.Fallbacks = src.Fallbacks
	}
	if hasPath(paths, "context_window_fallbacks") {
		g.ContextWindowFallbacks = src.ContextWindowFallbacks
	}
	if hasPath(paths, "content_policy_fallbacks") {
		g.ContentPolicyFallbacks = src.ContentPolicyFallbacks
	}
}

// checkFallbacks fails when a fallback names the group itself, twice, or a
// group that does not exist.
func (s *Server) checkFallbacks(ctx context.Context, id string, g *store.GroupRouting) error {
	if err := g.Validate(id); err != nil {
		return errorf(ErrInvalid, "model.%v", err)
	}
	for _, fb := range g.FallbackGroups() {
		if _, _, err := get[store.ModelGroup](ctx, s.st, fb); err != nil {
			return fmt.Errorf("model fallback %q: %w", fb, err)
		}
	}
	return nil
}

// DeploymentRoutingDoc is the routing policy of a deployment in YAML:
// durations as Go durations ("30s").
type DeploymentRoutingDoc struct {
	Cooldown         string `yaml:"cooldown"`
	AllowedFails     int32  `yaml:"allowed_fails"`
	Timeout          string `yaml:"timeout"`
	FirstByteTimeout string `yaml:"first_byte_timeout"`
	ConnectTimeout   string `yaml:"connect_timeout"`
}

func (d *DeploymentRoutingDoc) policy(f string) (store.DeploymentPolicy, error) {
	p := store.DeploymentPolicy{AllowedFails: d.AllowedFails}
	for _, x := range []struct {
		name string
		v    string
		dst  *time.Duration
	}{{"cooldown", d.Cooldown, &p.Cooldown}, {"timeout", d.Timeout, &p.Timeout}, {"first_byte_timeout", d.FirstByteTimeout, &p.FirstByteTimeout}, {"connect_timeout", d.ConnectTimeout, &p.ConnectTimeout}} {
		if x.v == "" {
			continue
		}
		v, err := time.ParseDuration(x.v)
		if err != nil {
			return p, errorf(ErrInvalid, "%s.%s: %q is not a duration (e.g. 30s)", f, x.name, x.v)
		}
		*x.dst = v
	}
	if err := p.Validate(); err != nil {
		return p, errorf(ErrInvalid, "%s: %v", f, err)
	}
	return p, nil
}

// ModelRoutingDoc is the routing of a model group in YAML.
type ModelRoutingDoc struct {
	Routing                string   `yaml:"routing"`
	Retries                *int32   `yaml:"retries"`
	Fallbacks              []string `yaml:"fallbacks"`
	ContextWindowFallbacks []string `yaml:"context_window_fallbacks"`
	ContentPolicyFallbacks []string `yaml:"content_policy_fallbacks"`
}

// routing checks the document's routing of model id: fallbacks must be in
// the document or stored.
func (a *applier) routing(ctx context.Context, f, id string, d *ModelRoutingDoc, declared map[string]bool) (store.GroupRouting, error) {
	g := store.GroupRouting{
		Routing: d.Routing, Retries: d.Retries, Fallbacks: slices.Clone(d.Fallbacks),
		ContextWindowFallbacks: slices.Clone(d.ContextWindowFallbacks), ContentPolicyFallbacks: slices.Clone(d.ContentPolicyFallbacks),
	}
	if err := g.Validate(id); err != nil {
		return g, errorf(ErrInvalid, "%s.%v", f, err)
	}
	for _, fb := range g.FallbackGroups() {
		if err := a.ref(ctx, f+".fallbacks", store.KindModel, fb, declared); err != nil {
			return g, err
		}
	}
	return g, nil
}
