package gateway

import (
	"context"
	"log/slog"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Pass-through routes (#34, extproc/passthrough.go): every provider is also
// a synthetic deployment, PassthroughDeployment(id), in the snapshot's
// Upstreams (so xDS gives it a route and cluster like any deployment), and
// a key may call the paths its own and its team's grants name.

// PassthroughDeployment is the deployment id (the x-tollgate-route value,
// cluster deployment_<id>) of provider id's pass-through routes.
func PassthroughDeployment(providerID string) string { return "passthrough." + providerID }

// passProvider is one provider as its pass-through routes need it.
type passProvider struct {
	target  *extproc.Target // Model, ProviderModel and Price set per request
	perCall kernel.Money
	ptype   store.ProviderType
}

// passGrant is one "PROVIDER_ID:PATH_GLOB" grant.
type passGrant struct{ provider, glob string }

// parsePassthroughGrants reads "PROVIDER_ID:PATH_GLOB" grants
// (store.ParsePassthroughGrant).
func parsePassthroughGrants(grants []string) ([]passGrant, error) {
	out := make([]passGrant, 0, len(grants))
	for _, g := range grants {
		id, glob, err := store.ParsePassthroughGrant(g)
		if err != nil {
			return nil, err
		}
		out = append(out, passGrant{provider: id, glob: glob})
	}
	return out, nil
}

// matches reports whether the grant covers p of provider.
func (g passGrant) matches(provider, p string) bool {
	return g.provider == provider && store.PassthroughGrantMatches(g.glob, p)
}

// buildPassthrough adds each provider's pass-through deployment and each
// key's grants (its own and its team's) to s.
func buildPassthrough(ctx context.Context, s *Snapshot, keys []store.Key, teams []store.Team, providers []store.Provider,
	used map[string]bool, sealer *secret.Sealer, prices map[string]kernel.Price, log *slog.Logger,
) {
	s.passProviders = make(map[string]*passProvider, len(providers))
	s.passPrices = prices
	for i := range providers {
		p := &providers[i]
		id := PassthroughDeployment(p.ID)
		if used[id] {
			log.Warn("a deployment is named as a provider's pass-through deployment: pass-through routes to this provider are off", "provider", p.ID)
			continue
		}
		t, up, err := target(ctx, store.ModelGroup{}, &store.Deployment{ID: id}, p, sealer, nil)
		if err != nil {
			log.Warn("provider's pass-through routes skipped", "provider", p.ID, "err", err)
			continue
		}
		s.passProviders[p.ID] = &passProvider{target: t, perCall: p.PricePerCall, ptype: p.Type}
		s.Upstreams = append(s.Upstreams, up)
	}
	teamGrants := make(map[string][]string, len(teams))
	for i := range teams {
		teamGrants[teams[i].ID] = teams[i].Passthrough
	}
	s.passGrants = make(map[string][]passGrant)
	for i := range keys {
		k := &keys[i]
		all := append(append([]string(nil), k.Passthrough...), teamGrants[k.TeamID]...)
		if len(all) == 0 || k.Revoked {
			continue
		}
		g, err := parsePassthroughGrants(all)
		if err != nil {
			log.Warn("key's pass-through grants ignored", "key", k.ID, "err", err)
			continue
		}
		s.passGrants[k.ID] = g
	}
}

// PassthroughGranted implements extproc.PassthroughCatalog.
func (c *Catalog) PassthroughGranted(_ context.Context, p *extproc.Principal, provider, reqPath string) error {
	s := c.snap.Load()
	if _, ok := s.passProviders[provider]; !ok {
		return extproc.ErrProviderNotFound
	}
	for _, g := range s.passGrants[p.KeyID] {
		if g.matches(provider, reqPath) {
			return nil
		}
	}
	return extproc.ErrPassthroughDenied
}

// PassthroughTarget implements extproc.PassthroughCatalog: the model's price
// under the provider's naming (kernel.LookupPrice), else the provider's
// price per call, else Unpriced.
func (c *Catalog) PassthroughTarget(_ context.Context, _ *extproc.Principal, provider, model string) (*extproc.Target, bool, error) {
	s := c.snap.Load()
	pp, ok := s.passProviders[provider]
	if !ok {
		return nil, false, extproc.ErrProviderNotFound
	}
	t := *pp.target
	t.Model, t.ProviderModel = model, model
	if model == "" {
		t.Model = PassthroughDeployment(provider)
	}
	if model != "" {
		if price, _, ok := kernel.LookupPrice(string(pp.ptype), model, func(n string) (kernel.Price, bool) {
			pr, ok := s.passPrices[n]
			return pr, ok
		}); ok {
			t.Price = price
			return &t, false, nil
		}
	}
	if pp.perCall > 0 { // one unit of Input at the price of a call
		t.Price = kernel.Price{Input: pp.perCall * 1_000_000}
		return &t, true, nil
	}
	t.Price = kernel.Price{Unpriced: true}
	return &t, false, nil
}
