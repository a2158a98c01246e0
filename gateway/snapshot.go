package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/internal/modelpattern"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Snapshot is an immutable view of the configuration at one store revision.
// The request path reads only snapshots: no I/O, no locks.
type Snapshot struct {
	Revision  int64
	Built     time.Time
	keys      map[string]*keyEntry // by secret hash
	keyHashes map[string][]string  // key id → its secret hashes (catalog_keys.go)
	models    map[string]*modelEntry
	// patterns are the glob aliases ("claude-*"), most specific first: a
	// name found in models (a group or a plain alias) never reaches them.
	patterns  []aliasPattern
	served    []*modelEntry // the models with a deployment, by name (GET /v1/models)
	customers map[string]kernel.Scope
	tags      map[string]kernel.Scope // tags with limits, by "name=value" (tags.go)
	// Upstreams lists every deployment that a model group uses, for xDS.
	Upstreams []Upstream
	// Budgeted lists every scope with budget windows, for seeding counters.
	Budgeted []kernel.Scope
	guards   *guardPolicy // guard.go (nil: no guardrails)
	// Pass-through routes (passthrough.go): providers by id, grants by key
	// id, the price table.
	passProviders map[string]*passProvider
	passGrants    map[string][]passGrant
	passPrices    map[string]kernel.Price
}

// Upstream is where a deployment's requests go.
type Upstream struct {
	Deployment string
	Scheme     string
	Host       string
	Port       uint32
	// ConnectTimeout is the deployment's own (0: the gateway's default).
	ConnectTimeout time.Duration
	// Timeout and FirstByteTimeout bound one attempt (0: the gateway's).
	Timeout, FirstByteTimeout time.Duration
	// AllowedFails and Cooldown: outlier detection on per-try routes.
	AllowedFails int
	Cooldown     time.Duration
}

type keyEntry struct {
	principal  extproc.Principal
	validUntil time.Time // zero: no limit (rotation grace or expiry)
}

type modelEntry struct {
	info    extproc.ModelInfo
	targets []*extproc.Target
	weights []int          // cumulative
	group   *extproc.Group // the same deployments, for the router (routing.go)
	// pass is set for a pass-the-name group (passname.go).
	pass  *passName
	cache *groupCache // the group's response cache (cache.go; nil: none)
}

// buildSnapshot reads the whole configuration from the store.
func buildSnapshot(ctx context.Context, cfg store.Config, sealer *secret.Sealer, log *slog.Logger, now time.Time) (*Snapshot, error) {
	rev, err := cfg.Revision(ctx)
	if err != nil {
		return nil, fmt.Errorf("gateway: read revision: %w", err)
	}
	keys, err := store.List[store.Key](ctx, cfg)
	if err != nil {
		return nil, err
	}
	users, err := store.List[store.User](ctx, cfg)
	if err != nil {
		return nil, err
	}
	teams, err := store.List[store.Team](ctx, cfg)
	if err != nil {
		return nil, err
	}
	orgs, err := store.List[store.Org](ctx, cfg)
	if err != nil {
		return nil, err
	}
	customers, err := store.List[store.Customer](ctx, cfg)
	if err != nil {
		return nil, err
	}
	providers, err := store.List[store.Provider](ctx, cfg)
	if err != nil {
		return nil, err
	}
	deployments, err := store.List[store.Deployment](ctx, cfg)
	if err != nil {
		return nil, err
	}
	groups, err := store.List[store.ModelGroup](ctx, cfg)
	if err != nil {
		return nil, err
	}
	prices, err := store.List[store.ModelPrice](ctx, cfg)
	if err != nil {
		return nil, err
	}
	globals, err := store.List[store.Global](ctx, cfg)
	if err != nil {
		return nil, err
	}
	tagBudgets, err := store.List[store.TagBudget](ctx, cfg)
	if err != nil {
		return nil, err
	}

	s := &Snapshot{
		Revision:  rev,
		Built:     now,
		keys:      make(map[string]*keyEntry, len(keys)),
		keyHashes: make(map[string][]string, len(keys)),
		models:    make(map[string]*modelEntry, len(groups)),
		customers: make(map[string]kernel.Scope, len(customers)),
	}
	budgeted := func(sc kernel.Scope) kernel.Scope {
		if sc.Limits != nil && len(sc.Limits.Budgets) > 0 {
			s.Budgeted = append(s.Budgeted, sc)
		}
		return sc
	}

	global := budgeted(kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeGlobal}})
	for i := range globals {
		global.Limits = &globals[i].Limits
		global = budgeted(global)
	}
	userScopes := scopesByID(users, kernel.ScopeUser, func(u *store.User) (string, *kernel.Limits) { return u.ID, &u.Limits }, budgeted)
	teamScopes := scopesByID(teams, kernel.ScopeTeam, func(t *store.Team) (string, *kernel.Limits) { return t.ID, &t.Limits }, budgeted)
	orgScopes := scopesByID(orgs, kernel.ScopeOrg, func(o *store.Org) (string, *kernel.Limits) { return o.ID, &o.Limits }, budgeted)
	for id, sc := range scopesByID(customers, kernel.ScopeCustomer, func(c *store.Customer) (string, *kernel.Limits) { return c.ID, &c.Limits }, budgeted) {
		s.customers[id] = sc
	}
	s.tags = scopesByID(tagBudgets, kernel.ScopeTag, func(t *store.TagBudget) (string, *kernel.Limits) { return t.ID, &t.Limits }, budgeted)

	teamOrg := make(map[string]string, len(teams))
	for i := range teams {
		teamOrg[teams[i].ID] = teams[i].OrgID
	}
	for i := range keys {
		k := &keys[i]
		if k.Revoked {
			continue
		}
		scopes := []kernel.Scope{budgeted(kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: k.ID}, Limits: &k.Limits})}
		orgID := k.OrgID
		if sc, ok := userScopes[k.UserID]; ok {
			scopes = append(scopes, sc)
		}
		if sc, ok := teamScopes[k.TeamID]; ok {
			scopes = append(scopes, sc)
			if orgID == "" {
				orgID = teamOrg[k.TeamID]
			}
		}
		if sc, ok := orgScopes[orgID]; ok {
			scopes = append(scopes, sc)
		}
		scopes = append(scopes, global)
		tags, err := kernel.TagsOf(k.Tags)
		if err != nil {
			log.Warn("key's default tags skipped", "key", k.ID, "err", err)
		}
		for _, h := range k.Hashes {
			validUntil := h.ValidUntil
			if !k.Limits.ExpiresAt.IsZero() && (validUntil.IsZero() || k.Limits.ExpiresAt.Before(validUntil)) {
				validUntil = k.Limits.ExpiresAt
			}
			s.keyHashes[k.ID] = append(s.keyHashes[k.ID], h.Hash)
			s.keys[h.Hash] = &keyEntry{
				principal: extproc.Principal{
					KeyID: k.ID, KeyAlias: k.Alias, UserID: k.UserID, TeamID: k.TeamID, OrgID: orgID, Scopes: scopes, Tags: tags,
				},
				validUntil: validUntil,
			}
		}
	}

	provByID := make(map[string]*store.Provider, len(providers))
	for i := range providers {
		provByID[providers[i].ID] = &providers[i]
	}
	depByID := make(map[string]*store.Deployment, len(deployments))
	for i := range deployments {
		depByID[deployments[i].ID] = &deployments[i]
	}
	priceByID := make(map[string]kernel.Price, len(prices))
	for _, p := range prices {
		priceByID[p.ID] = p.Price
	}
	used := map[string]bool{}
	for _, g := range groups {
		m := &modelEntry{info: extproc.ModelInfo{ID: g.ID, OwnedBy: "tollgate", Created: time.Unix(0, 0)}}
		if g.UpstreamModelFromRequest {
			m.pass = &passName{prices: priceByID}
		}
		total := 0
		for _, depID := range g.Deployments {
			d, ok := depByID[depID]
			if !ok {
				log.Warn("model group names an unknown deployment", "model", g.ID, "deployment", depID)
				continue
			}
			p, ok := provByID[d.Provider]
			if !ok {
				log.Warn("deployment names an unknown provider", "deployment", d.ID, "provider", d.Provider)
				continue
			}
			t, up, err := target(ctx, g, d, p, sealer, priceByID)
			if err != nil {
				log.Warn("deployment skipped", "deployment", d.ID, "err", err)
				continue
			}
			if t.Price.Unpriced {
				log.Warn("deployment has no price: refused under strict budgets, unpriced in the ledger otherwise (tollgate price missing)",
					"model", g.ID, "deployment", d.ID, "provider_model", d.ProviderModel)
			}
			w := d.Weight
			if w <= 0 {
				w = 1
			}
			total += w
			m.targets = append(m.targets, t)
			m.weights = append(m.weights, total)
			if m.pass != nil {
				m.pass.providers = append(m.pass.providers, p.Type)
				m.pass.free = append(m.pass.free, d.Free)
			}
			if !used[d.ID] {
				used[d.ID] = true
				s.Upstreams = append(s.Upstreams, up)
			}
		}
		m.group = routedGroup(&g, m.targets, depByID)
		m.cache = groupCacheOf(g.ID, g.Cache, log)
		s.models[g.ID] = m
		if len(m.targets) > 0 {
			s.served = append(s.served, m)
		}
	}
	slices.SortFunc(s.served, func(a, b *modelEntry) int { return strings.Compare(a.info.ID, b.info.ID) })
	addAliases(s, groups, log)
	if s.guards, err = buildGuards(ctx, cfg, provByID, sealer, log); err != nil { // guard.go
		return nil, err
	}
	for _, d := range deployments {
		used[d.ID] = true
	}
	buildPassthrough(ctx, s, keys, teams, providers, used, sealer, priceByID, log)
	return s, nil
}

func scopesByID[T any](items []T, kind kernel.ScopeKind, get func(*T) (string, *kernel.Limits), note func(kernel.Scope) kernel.Scope) map[string]kernel.Scope {
	out := make(map[string]kernel.Scope, len(items))
	for i := range items {
		id, lim := get(&items[i])
		out[id] = note(kernel.Scope{Ref: kernel.ScopeRef{Kind: kind, ID: id}, Limits: lim})
	}
	return out
}

// target resolves one deployment of a model group.
func target(ctx context.Context, g store.ModelGroup, d *store.Deployment, p *store.Provider, sealer *secret.Sealer, prices map[string]kernel.Price) (*extproc.Target, Upstream, error) {
	u, err := url.Parse(p.BaseURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, Upstream{}, fmt.Errorf("provider %q: base URL %q must be http(s)://host[:port][/path]", p.ID, p.BaseURL)
	}
	host := u.Hostname()
	port := uint32(443)
	if u.Scheme == "http" {
		port = 80
	}
	if ps := u.Port(); ps != "" {
		n, err := strconv.ParseUint(ps, 10, 16)
		if err != nil {
			return nil, Upstream{}, fmt.Errorf("provider %q: bad port %q", p.ID, ps)
		}
		port = uint32(n)
	}
	var apiKey string
	if len(p.Credential) > 0 {
		if sealer == nil {
			return nil, Upstream{}, fmt.Errorf("provider %q: credential present but no master key", p.ID)
		}
		b, err := sealer.Open(p.Credential)
		if err != nil {
			return nil, Upstream{}, fmt.Errorf("provider %q: %w", p.ID, err)
		}
		apiKey = string(b)
	}
	// A model nobody priced is marked so (kernel.Price.Unpriced): refused
	// under strict budgets, marked in the ledger otherwise; never a silent $0.
	price, _, _, _ := store.DeploymentPrice(g.ID, d, p.Type, func(name string) (kernel.Price, bool) {
		pr, ok := prices[name]
		return pr, ok
	})
	t := &extproc.Target{
		Model:            g.ID,
		Deployment:       d.ID,
		Provider:         extproc.ProviderType(p.Type),
		BasePath:         strings.TrimSuffix(u.Path, "/"),
		Host:             u.Host,
		APIKey:           apiKey,
		APIVersion:       p.APIVersion,
		ProviderModel:    d.ProviderModel,
		Price:            price,
		DefaultMaxTokens: g.DefaultMaxTokens,
		NativeResponses:  p.ResponsesAPI,
	}
	if p.Type == store.ProviderBedrock { // bedrock.go: SigV4 instead of a key header
		sig, err := newBedrockSigner(ctx, apiKey, p.APIVersion, upstreamHostHeader(u.Scheme, host, port))
		if err != nil {
			return nil, Upstream{}, fmt.Errorf("provider %q: %w", p.ID, err)
		}
		t.Signer, t.APIKey = sig, ""
	}
	if p.Type == store.ProviderVertex { // vertex.go: an OAuth2 access token
		sig, err := newVertexSigner(ctx, apiKey)
		if err != nil {
			return nil, Upstream{}, fmt.Errorf("provider %q: %w", p.ID, err)
		}
		t.Signer, t.APIKey = sig, ""
	}
	pol := d.WithDefaults() // timeout 600s, first_byte_timeout 60s (docs/admin-api.md)
	return t, Upstream{
		Deployment: d.ID, Scheme: u.Scheme, Host: host, Port: port, ConnectTimeout: d.ConnectTimeout, Timeout: pol.Timeout, FirstByteTimeout: pol.FirstByteTimeout,
		AllowedFails: int(pol.AllowedFails), Cooldown: pol.Cooldown,
	}, nil
}

// aliasPattern is a glob alias of a model group.
type aliasPattern struct {
	pattern string
	model   *modelEntry
}

// lookup finds the model group a client's name means: a group's own name or
// a plain alias first, then the most specific pattern (ties: the first group
// listing one; the admin API refuses them, modelpattern.Overlap).
func (s *Snapshot) lookup(name string) (*modelEntry, bool) {
	if m, ok := s.models[name]; ok {
		return m, true
	}
	for _, p := range s.patterns { // most specific first
		if modelpattern.Match(p.pattern, name) {
			return p.model, true
		}
	}
	return nil, false
}

// addAliases makes each group's aliases resolve to the group: a key allowed
// the group may ask for any of its names. A group's own name wins over an
// alias of another group, and the first group listing an alias wins; glob
// aliases go to s.patterns, most specific first.
func addAliases(s *Snapshot, groups []store.ModelGroup, log *slog.Logger) {
	for _, g := range groups {
		m := s.models[g.ID]
		for _, a := range g.Aliases {
			if modelpattern.IsPattern(a) {
				s.patterns = append(s.patterns, aliasPattern{pattern: a, model: m})
				continue
			}
			if other, taken := s.models[a]; taken {
				if other != m {
					log.Warn("model alias already names another group", "model", g.ID, "alias", a, "group", other.info.ID)
				}
				continue
			}
			s.models[a] = m
		}
	}
	slices.SortStableFunc(s.patterns, func(a, b aliasPattern) int {
		return modelpattern.Specificity(b.pattern) - modelpattern.Specificity(a.pattern)
	})
}
