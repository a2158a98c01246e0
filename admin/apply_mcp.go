package admin

import (
	"fmt"
	"maps"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// MCPServerDoc is an upstream MCP server; credential may be a ${ENV_VAR}
// reference, prices are dollars.
type MCPServerDoc struct {
	ID               string            `yaml:"id"`
	URL              string            `yaml:"url"`
	Credential       string            `yaml:"credential"`
	CredentialHeader string            `yaml:"credential_header"`
	Headers          map[string]string `yaml:"headers"`
	PricePerCall     string            `yaml:"price_per_call"`
	ToolPrices       map[string]string `yaml:"tool_prices"`
	RPM              int64             `yaml:"rpm"`
}

// mcpPlans are the plans of the document's MCP servers, after checking the
// mcp_tools grants every level declares.
func (a *applier) mcpPlans(d *Document) ([]plan, error) {
	grants := map[string][]string{}
	for i, k := range d.Keys {
		grants[fmt.Sprintf("keys[%d].mcp_tools", i)] = k.MCPTools
	}
	for i, t := range d.Teams {
		grants[fmt.Sprintf("teams[%d].mcp_tools", i)] = t.MCPTools
	}
	for i, u := range d.Users {
		grants[fmt.Sprintf("users[%d].mcp_tools", i)] = u.MCPTools
	}
	for i, o := range d.Orgs {
		grants[fmt.Sprintf("orgs[%d].mcp_tools", i)] = o.MCPTools
	}
	for f, g := range grants {
		if err := mcp.ValidatePatterns(g); err != nil {
			return nil, errorf(ErrInvalid, "%s: %v", f, err)
		}
	}
	if _, err := ids(d.MCPServers, func(m *MCPServerDoc) string { return m.ID }, "mcp_servers"); err != nil {
		return nil, err
	}
	var plans []plan
	for i, m := range d.MCPServers {
		f := fmt.Sprintf("mcp_servers[%d]", i)
		want := store.MCPServer{ID: m.ID, URL: m.URL, CredentialHeader: m.CredentialHeader, Headers: maps.Clone(m.Headers), RPM: m.RPM}
		var err error
		if want.PricePerCall, err = docDollars(f+".price_per_call", m.PricePerCall); err != nil {
			return nil, err
		}
		for t, usd := range m.ToolPrices {
			p, err := docDollars(f+".tool_prices."+t, usd)
			if err != nil {
				return nil, err
			}
			if want.ToolPrices == nil {
				want.ToolPrices = map[string]kernel.Money{}
			}
			want.ToolPrices[t] = p
		}
		if err := validateMCPServer(&want); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		cred, err := expandEnv(f+".credential", m.Credential, a.lookup)
		if err != nil {
			return nil, err
		}
		if cred != "" && a.sealer == nil {
			return nil, fmt.Errorf("%s.credential: %w", f, ErrNoSealer)
		}
		plans = append(plans, entityPlan(a, want.ID, func(cur *store.MCPServer, found bool) (store.MCPServer, error) {
			w := want
			w.Credential = a.credential(cur.Credential, found, cred)
			return w, nil
		}))
	}
	return plans, nil
}

// docDollars reads a dollar amount of the document ("" is zero).
func docDollars(field, s string) (kernel.Money, error) {
	if s == "" {
		return 0, nil
	}
	m, err := adminv1.DollarsMoney(s)
	if err != nil {
		return 0, errorf(ErrInvalid, "%s: %q is not a dollar amount: %v", field, s, err)
	}
	n, err := m.Nanos()
	if err != nil {
		return 0, errorf(ErrInvalid, "%s: %v", field, err)
	}
	return kernel.Money(n), nil
}
