package admin

import (
	"context"
	"maps"
	"net/url"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// MCP servers and tool grants (MCPService).

func mcpServerView(m *store.MCPServer) *adminv1.MCPServer {
	out := &adminv1.MCPServer{
		Id: m.ID, Url: m.URL, CredentialHeader: m.CredentialHeader, Headers: m.Headers,
		PricePerCall: moneyOut(m.PricePerCall), Rpm: m.RPM, HasCredential: len(m.Credential) > 0,
	}
	if len(m.ToolPrices) > 0 {
		out.ToolPrices = make(map[string]*adminv1.Money, len(m.ToolPrices))
		for t, p := range m.ToolPrices {
			out.ToolPrices[t] = moneyOut(p)
		}
	}
	return out
}

// mcpServerAudit is what the audit log keeps of a server: never the credential.
func mcpServerAudit(m *store.MCPServer) any {
	return map[string]any{
		"url": m.URL, "credential_header": m.CredentialHeader, "headers": m.Headers, "price_per_call": m.PricePerCall.String(),
		"tool_prices": len(m.ToolPrices), "rpm": m.RPM, "has_credential": len(m.Credential) > 0,
	}
}

// mcpServerFields copies the fields of in named by paths (all when paths is
// nil) into m and validates the result.
func mcpServerFields(m *store.MCPServer, in *adminv1.MCPServer, paths []string) error {
	all := paths == nil
	if all || hasPath(paths, "url") {
		m.URL = in.GetUrl()
	}
	if all || hasPath(paths, "credential_header") {
		m.CredentialHeader = in.GetCredentialHeader()
	}
	if all || hasPath(paths, "headers") {
		m.Headers = maps.Clone(in.GetHeaders())
	}
	if all || hasPath(paths, "rpm") {
		m.RPM = in.GetRpm()
	}
	if all || hasPath(paths, "price_per_call") {
		p, err := moneyIn("server.price_per_call", in.GetPricePerCall())
		if err != nil {
			return err
		}
		m.PricePerCall = p
	}
	if all || hasPath(paths, "tool_prices") {
		m.ToolPrices = nil
		for t, pm := range in.GetToolPrices() {
			p, err := moneyIn("server.tool_prices["+t+"]", pm)
			if err != nil {
				return err
			}
			if m.ToolPrices == nil {
				m.ToolPrices = map[string]kernel.Money{}
			}
			m.ToolPrices[t] = p
		}
	}
	return validateMCPServer(m)
}

// validateMCPServer checks a server before it is stored.
func validateMCPServer(m *store.MCPServer) error {
	if err := mcp.ValidateServerID(m.ID); err != nil {
		return errorf(ErrInvalid, "server.id: %v", err)
	}
	u, err := url.Parse(m.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errorf(ErrInvalid, "server.url: %q is not an http(s) URL", m.URL)
	}
	if m.RPM < 0 {
		return errorf(ErrInvalid, "server.rpm: must not be negative")
	}
	for t, p := range m.ToolPrices {
		if p < 0 || p > mcp.MaxCallPrice {
			return errorf(ErrInvalid, "server.tool_prices[%s]: must be between 0 and %s", t, mcp.MaxCallPrice)
		}
	}
	if m.PricePerCall < 0 || m.PricePerCall > mcp.MaxCallPrice {
		return errorf(ErrInvalid, "server.price_per_call: must be between 0 and %s", mcp.MaxCallPrice)
	}
	return nil
}

// CreateMCPServer creates an MCP server, sealing its credential.
func (s *Server) CreateMCPServer(ctx context.Context, req *adminv1.CreateMCPServerRequest) (*adminv1.CreateMCPServerResponse, error) {
	m := store.MCPServer{ID: req.GetServer().GetId()}
	err := mcpServerFields(&m, req.GetServer(), nil)
	if err == nil {
		m.Credential, err = s.seal(req.GetCredential())
	}
	if err == nil {
		err = create(ctx, s.st, m.ID, &m)
	}
	if err == nil {
		err = s.record(ctx, "mcp_server.create", store.KindMCPServer, m.ID, mcpServerAudit(&m))
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateMCPServerResponse{Server: mcpServerView(&m)}, nil
}

// GetMCPServer returns an MCP server, without its credential.
func (s *Server) GetMCPServer(ctx context.Context, req *adminv1.GetMCPServerRequest) (*adminv1.GetMCPServerResponse, error) {
	m, _, err := get[store.MCPServer](ctx, s.st, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetMCPServerResponse{Server: mcpServerView(&m)}, nil
}

// ListMCPServers lists MCP servers, without their credentials.
func (s *Server) ListMCPServers(ctx context.Context, req *adminv1.ListMCPServersRequest) (*adminv1.ListMCPServersResponse, error) {
	ms, next, err := listPage[store.MCPServer](ctx, s.st, req.GetPageToken(), req.GetPageSize(), nil)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListMCPServersResponse{NextPageToken: next}
	for i := range ms {
		out.Servers = append(out.Servers, mcpServerView(&ms[i]))
	}
	return out, nil
}

// UpdateMCPServer changes the fields named by the update mask.
func (s *Server) UpdateMCPServer(ctx context.Context, req *adminv1.UpdateMCPServerRequest) (*adminv1.UpdateMCPServerResponse, error) {
	in, paths := req.GetServer(), req.GetUpdateMask().GetPaths()
	if paths == nil {
		paths = []string{}
	}
	var sealed []byte
	var err error
	if hasPath(paths, "credential") {
		sealed, err = s.seal(req.GetCredential())
	}
	var m store.MCPServer
	if err == nil {
		m, err = update(ctx, s.st, in.GetId(), func(m *store.MCPServer) error {
			if hasPath(paths, "credential") {
				m.Credential = sealed
			}
			return mcpServerFields(m, in, paths)
		})
	}
	if err == nil {
		err = s.record(ctx, "mcp_server.update", store.KindMCPServer, m.ID, map[string]any{"fields": paths, "server": mcpServerAudit(&m)})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateMCPServerResponse{Server: mcpServerView(&m)}, nil
}

// DeleteMCPServer deletes an MCP server.
func (s *Server) DeleteMCPServer(ctx context.Context, req *adminv1.DeleteMCPServerRequest) (*adminv1.DeleteMCPServerResponse, error) {
	err := remove[store.MCPServer](ctx, s.st, req.GetId())
	if err == nil {
		err = s.record(ctx, "mcp_server.delete", store.KindMCPServer, req.GetId(), nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteMCPServerResponse{}, nil
}

// SetMCPTools replaces the tool grants of a key, user, team or org.
func (s *Server) SetMCPTools(ctx context.Context, req *adminv1.SetMCPToolsRequest) (*adminv1.SetMCPToolsResponse, error) {
	patterns := req.GetPatterns()
	if err := mcp.ValidatePatterns(patterns); err != nil {
		return nil, s.toStatus(ctx, errorf(ErrInvalid, "patterns: %v", err))
	}
	if len(patterns) == 0 {
		patterns = nil
	}
	set := func(p *[]string) error { *p = patterns; return nil }
	var kind store.Kind
	var err error
	id := req.GetId()
	switch req.GetOwner() {
	case adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_KEY:
		kind = store.KindKey
		_, err = update(ctx, s.st, id, func(k *store.Key) error { return set(&k.MCPTools) })
	case adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_USER:
		kind = store.KindUser
		_, err = update(ctx, s.st, id, func(u *store.User) error { return set(&u.MCPTools) })
	case adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_TEAM:
		kind = store.KindTeam
		_, err = update(ctx, s.st, id, func(t *store.Team) error { return set(&t.MCPTools) })
	case adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_ORG:
		kind = store.KindOrg
		_, err = update(ctx, s.st, id, func(o *store.Org) error { return set(&o.MCPTools) })
	default:
		err = errorf(ErrInvalid, "owner: is required (key, user, team or org)")
	}
	if err == nil {
		err = s.record(ctx, string(kind)+".mcp_tools", kind, id, map[string]any{"mcp_tools": patterns})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.SetMCPToolsResponse{Patterns: patterns}, nil
}

// GetMCPTools returns the tool grants of a key, user, team or org.
func (s *Server) GetMCPTools(ctx context.Context, req *adminv1.GetMCPToolsRequest) (*adminv1.GetMCPToolsResponse, error) {
	var patterns []string
	var err error
	id := req.GetId()
	switch req.GetOwner() {
	case adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_KEY:
		var k store.Key
		k, _, err = get[store.Key](ctx, s.st, id)
		patterns = k.MCPTools
	case adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_USER:
		var u store.User
		u, _, err = get[store.User](ctx, s.st, id)
		patterns = u.MCPTools
	case adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_TEAM:
		var t store.Team
		t, _, err = get[store.Team](ctx, s.st, id)
		patterns = t.MCPTools
	case adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_ORG:
		var o store.Org
		o, _, err = get[store.Org](ctx, s.st, id)
		patterns = o.MCPTools
	default:
		err = errorf(ErrInvalid, "owner: is required (key, user, team or org)")
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetMCPToolsResponse{Patterns: patterns}, nil
}
