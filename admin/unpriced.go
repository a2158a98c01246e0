package admin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// priceTable reads every stored price once, for lookups by name.
type priceTable map[string]kernel.Price

func (t priceTable) find(name string) (kernel.Price, bool) {
	p, ok := t[name]
	return p, ok
}

func (s *Server) priceTable(ctx context.Context) (priceTable, error) {
	ps, err := store.List[store.ModelPrice](ctx, s.st)
	if err != nil {
		return nil, err
	}
	t := make(priceTable, len(ps))
	for _, p := range ps {
		t[p.ID] = p.Price
	}
	return t, nil
}

// missingPrices lists, for every model group and each of its deployments
// (and each deployment no group uses), those whose model has no price and
// that are not declared free — as the gateway prices them
// (store.DeploymentPrice) — by deployment, then model group.
func (s *Server) missingPrices(ctx context.Context) ([]*adminv1.MissingPrice, error) {
	prices, err := s.priceTable(ctx)
	if err != nil {
		return nil, err
	}
	provs, err := store.List[store.Provider](ctx, s.st)
	if err != nil {
		return nil, err
	}
	deps, err := store.List[store.Deployment](ctx, s.st)
	if err != nil {
		return nil, err
	}
	groups, err := store.List[store.ModelGroup](ctx, s.st)
	if err != nil {
		return nil, err
	}
	provType := make(map[string]store.ProviderType, len(provs))
	for _, p := range provs {
		provType[p.ID] = p.Type
	}
	usedBy := map[string][]string{}
	for _, g := range groups {
		for _, id := range g.Deployments {
			usedBy[id] = append(usedBy[id], g.ID)
		}
	}
	var out []*adminv1.MissingPrice
	for i := range deps {
		d := &deps[i]
		gs := usedBy[d.ID]
		if len(gs) == 0 {
			gs = []string{""}
		}
		slices.Sort(gs)
		for _, g := range slices.Compact(gs) {
			if m := missingPrice(g, d, provType[d.Provider], prices); m != nil {
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b *adminv1.MissingPrice) int {
		if c := strings.Compare(a.GetDeployment(), b.GetDeployment()); c != 0 {
			return c
		}
		return strings.Compare(a.GetModel(), b.GetModel())
	})
	return out, nil
}

// missingPrice describes deployment d as group g uses it when it has no
// price; nil when it has one.
func missingPrice(g string, d *store.Deployment, typ store.ProviderType, prices priceTable) *adminv1.MissingPrice {
	if _, _, _, ok := store.DeploymentPrice(g, d, typ, prices.find); ok {
		return nil
	}
	var tried []string
	if g != "" {
		tried = append(tried, g)
	}
	for _, n := range kernel.PriceNames(string(typ), d.PriceModel()) {
		if !slices.Contains(tried, n) {
			tried = append(tried, n)
		}
	}
	return &adminv1.MissingPrice{
		Deployment: d.ID, Model: g, Provider: d.Provider, ProviderType: providerTypesOut[typ],
		ProviderModel: d.ProviderModel, BaseModel: d.BaseModel, NamesTried: tried,
	}
}

// ListMissingPrices lists the deployments whose model has no price.
func (s *Server) ListMissingPrices(ctx context.Context, _ *adminv1.ListMissingPricesRequest) (*adminv1.ListMissingPricesResponse, error) {
	out, err := s.missingPrices(ctx)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.ListMissingPricesResponse{Missing: out}, nil
}

// priceWarnings are the warnings of a created or updated deployment (only;
// every deployment when only is ""): one per model group (or one when no
// group uses it) for which it has no price. A failure to read the
// configuration is no warning: the write succeeded.
func (s *Server) priceWarnings(ctx context.Context, only string) []string {
	missing, err := s.missingPrices(ctx)
	if err != nil {
		s.log.Warn("checking deployment prices failed", "deployment", only, "err", err)
		return nil
	}
	var out []string
	for _, m := range missing {
		if only != "" && m.GetDeployment() != only {
			continue
		}
		where := ""
		if m.GetModel() != "" {
			where = fmt.Sprintf(" (model group %q)", m.GetModel())
		}
		model := m.GetBaseModel()
		if model == "" {
			model = m.GetProviderModel()
		}
		out = append(out, fmt.Sprintf("deployment %q%s: no price for model %q (looked up as %s): "+
			"its requests are refused under strict budgets and recorded unpriced otherwise; "+
			"set one with `tollgate price set %s --input … --output …` (a model charged per unit: --per-image, --per-second, "+
			"--per-character or --per-search-unit), name its base model (--base-model) or declare it free (--free)",
			m.GetDeployment(), where, model, strings.Join(m.GetNamesTried(), ", "), model))
	}
	return out
}
