package store

import "github.com/tollgate-ai/tollgate/kernel"

// Where a deployment's price comes from (DeploymentPrice).
const (
	PriceFromFree  = "free"  // the deployment is declared free
	PriceFromGroup = "group" // the price of the public model name
	PriceFromModel = "model" // the price of the provider's model, under one of its names
)

// PriceModel is the model name a deployment is priced by: its BaseModel when
// set, else its ProviderModel.
func (d *Deployment) PriceModel() string {
	if d.BaseModel != "" {
		return d.BaseModel
	}
	return d.ProviderModel
}

// DeploymentPrice is the price deployment d of a provider of type provider
// is charged at when it serves model group group ("" when it serves none), in
// this order: $0 when d is Free; the price of the group's name; the price of
// d.PriceModel() under the names the provider gives it
// (kernel.LookupPrice). find reads the price table. When none applies the
// price is unpriced (kernel.Price.Unpriced) and ok is false. from says which
// applied (PriceFromFree, PriceFromGroup, PriceFromModel), name the price
// table's name it was found under.
func DeploymentPrice(group string, d *Deployment, provider ProviderType, find func(string) (kernel.Price, bool)) (p kernel.Price, from, name string, ok bool) {
	if d.Free {
		return kernel.Price{}, PriceFromFree, "", true
	}
	if group != "" {
		if p, ok := find(group); ok {
			p.Unpriced = false // a stored price is a price
			return p, PriceFromGroup, group, true
		}
	}
	if p, name, ok := kernel.LookupPrice(string(provider), d.PriceModel(), find); ok {
		p.Unpriced = false
		return p, PriceFromModel, name, true
	}
	return kernel.Price{Unpriced: true}, "", "", false
}
