package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/edge"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
	"github.com/tollgate-ai/tollgate/observe"
	"github.com/tollgate-ai/tollgate/store"
)

// mcpView is the MCP side of one configuration: the upstream servers with
// their credentials opened, and the mcp_tools grants of every level.
type mcpView struct {
	servers                  []*mcp.Server
	keys, users, teams, orgs map[string][]string
}

// buildMCPView reads the MCP servers and the grants from the store.
func buildMCPView(ctx context.Context, cfg store.Config, sealer *secret.Sealer, log *slog.Logger) (*mcpView, error) {
	servers, err := store.List[store.MCPServer](ctx, cfg)
	if err != nil {
		return nil, err
	}
	v := &mcpView{keys: map[string][]string{}, users: map[string][]string{}, teams: map[string][]string{}, orgs: map[string][]string{}}
	for i := range servers {
		s, err := mcpServer(&servers[i], sealer)
		if err != nil {
			log.Warn("MCP server left out", "server", servers[i].ID, "err", err)
			continue
		}
		v.servers = append(v.servers, s)
	}
	if err := grantsOf(ctx, cfg, v.keys, func(k *store.Key) (string, []string) { return k.ID, k.MCPTools }); err != nil {
		return nil, err
	}
	if err := grantsOf(ctx, cfg, v.users, func(u *store.User) (string, []string) { return u.ID, u.MCPTools }); err != nil {
		return nil, err
	}
	if err := grantsOf(ctx, cfg, v.teams, func(t *store.Team) (string, []string) { return t.ID, t.MCPTools }); err != nil {
		return nil, err
	}
	if err := grantsOf(ctx, cfg, v.orgs, func(o *store.Org) (string, []string) { return o.ID, o.MCPTools }); err != nil {
		return nil, err
	}
	return v, nil
}

func grantsOf[T store.Entity](ctx context.Context, cfg store.Config, into map[string][]string, f func(*T) (string, []string)) error {
	all, err := store.List[T](ctx, cfg)
	if err != nil {
		return err
	}
	for i := range all {
		if id, g := f(&all[i]); len(g) > 0 {
			into[id] = g
		}
	}
	return nil
}

// mcpServer is a stored server as the MCP gateway uses it: credential
// opened into its header.
func mcpServer(s *store.MCPServer, sealer *secret.Sealer) (*mcp.Server, error) {
	out := &mcp.Server{ID: s.ID, URL: s.URL, PricePerCall: s.PricePerCall, ToolPrices: s.ToolPrices, RPM: s.RPM, Headers: map[string]string{}}
	for k, v := range s.Headers {
		out.Headers[k] = v
	}
	if len(s.Credential) > 0 {
		cred, err := sealer.Open(s.Credential)
		if err != nil {
			return nil, fmt.Errorf("open credential: %w", err)
		}
		if s.CredentialHeader != "" {
			out.Headers[s.CredentialHeader] = string(cred)
		} else {
			out.Headers["Authorization"] = "Bearer " + string(cred)
		}
	}
	return out, nil
}

// mcpCatalog serves mcp.Catalog: keys from the processor's snapshot, MCP
// servers and grants from the current mcpView.
type mcpCatalog struct {
	cat  *Catalog
	view atomic.Pointer[mcpView]
}

var _ mcp.Catalog = (*mcpCatalog)(nil)

// Authenticate implements mcp.Catalog.
func (c *mcpCatalog) Authenticate(ctx context.Context, key string) (*mcp.Caller, error) {
	p, err := c.cat.Authenticate(ctx, key)
	if err != nil {
		return nil, mcp.ErrUnauthorized
	}
	v := c.view.Load()
	if v == nil {
		v = &mcpView{}
	}
	caller := &mcp.Caller{KeyID: p.KeyID, UserID: p.UserID, TeamID: p.TeamID, OrgID: p.OrgID, Scopes: p.Scopes}
	caller.Grants = append(caller.Grants, mcp.Grant{Level: "key " + p.KeyID, Patterns: v.keys[p.KeyID]})
	for _, l := range [...]struct {
		kind, id string
		m        map[string][]string
	}{{"user", p.UserID, v.users}, {"team", p.TeamID, v.teams}, {"org", p.OrgID, v.orgs}} {
		if g := l.m[l.id]; l.id != "" && len(g) > 0 {
			caller.Grants = append(caller.Grants, mcp.Grant{Level: l.kind + " " + l.id, Patterns: g})
		}
	}
	return caller, nil
}

// Servers implements mcp.Catalog.
func (c *mcpCatalog) Servers() []*mcp.Server {
	if v := c.view.Load(); v != nil {
		return v.servers
	}
	return nil
}

// mcpAccountant settles tool calls through the processor's accountant: the
// same counters, budgets and ledger.
type mcpAccountant struct{ *accounting.Accountant }

var _ mcp.Accountant = mcpAccountant{}

// SettleCall implements mcp.Accountant.
func (a mcpAccountant) SettleCall(ctx context.Context, c *mcp.Call) (kernel.Money, error) {
	return a.Settle(ctx, mcpLedgerEntry(c))
}

// RefuseCall implements mcp.Accountant: the $0 row of a call a guardrail
// refused, deployment "guardrail:NAME" like a refused model request's.
func (a mcpAccountant) RefuseCall(ctx context.Context, c *mcp.Call) error {
	e := mcpLedgerEntry(c)
	e.Deployment, e.HTTPStatus = "guardrail:"+c.Guardrail, http.StatusBadRequest
	return a.RecordRefused(ctx, e)
}

// mcpLedgerEntry is the ledger row of a tool call (store/mcp.go).
func mcpLedgerEntry(c *mcp.Call) store.LedgerEntry {
	status := http.StatusOK
	if !c.Ran {
		status = http.StatusBadGateway
	}
	e := store.LedgerEntry{
		RequestID:  c.RequestID,
		Model:      mcp.ModelName(c.Server, c.Tool),
		Deployment: mcp.ServerScopeID(c.Server),
		Usage:      mcp.CallUsage(c.Ran),
		Status:     c.Status,
		HTTPStatus: status,
		StartedAt:  c.StartedAt,
		EndedAt:    c.EndedAt,
		RunID:      c.RunID,
	}
	if p := c.Caller; p != nil {
		e.KeyID, e.UserID, e.TeamID, e.OrgID = p.KeyID, p.UserID, p.TeamID, p.OrgID
	}
	return e
}

// mcpSessionKey derives the key that seals MCP session tokens from the
// master key, so that a token and a sealed credential never share a key.
func mcpSessionKey(master []byte) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("tollgate mcp session tokens v1"))
	return m.Sum(nil)
}

// startMCP makes the MCP gateway handler (served on the data plane's /mcp).
func (g *Gateway) startMCP(ctx context.Context) error {
	sealer, err := secret.NewSealer(mcpSessionKey(g.Config.MasterKey))
	if err != nil {
		return err
	}
	g.mcpShared(ctx)
	if err := g.refreshMCP(ctx); err != nil {
		return err
	}
	g.mcp = mcp.New(g.mcpCat, mcpAccountant{g.Accountant}, sealer,
		mcp.WithLogger(g.log), mcp.WithClock(g.now), mcp.WithObserver(g.mcpObs),
		mcp.WithGuard(mcpGuard{g.Catalog}), // mcp_guard.go
		mcp.WithAllowedHosts(g.mcpAllowedHosts()))
	return g.serveMCP()
}

// mcpShared makes, once, what the MCP service and the processor's edge
// check share: the catalog and the observer (one set of metrics).
func (g *Gateway) mcpShared(ctx context.Context) {
	if g.mcpCat != nil {
		return
	}
	g.mcpCat = &mcpCatalog{cat: g.Catalog}
	var tr *observe.Tracing
	var m *observe.Metrics
	if g.obs != nil {
		tr, m = g.obs.tracing, g.obs.metrics
	}
	g.mcpObs = observe.NewMCP(ctx, g.log, m, tr)
}

// mcpEdgeOption makes the processor authorize /mcp on Envoy (the route runs
// ext_proc on its headers: xds/mcp.go) with the MCP service's catalog, so
// that a refusal happens at the edge; the service still admits and settles.
func (g *Gateway) mcpEdgeOption(ctx context.Context) extproc.Option {
	g.mcpShared(ctx)
	return extproc.WithMCP(mcp.NewEdgeAuthorizer(g.mcpCat, g.mcpObs, mcp.WithAllowedHosts(g.mcpAllowedHosts())))
}

// mcpAllowedHosts is the allow-list of /mcp's Host and Origin headers.
func (g *Gateway) mcpAllowedHosts() []string {
	if g.Config.MCPAllowedHosts != nil {
		return g.Config.MCPAllowedHosts
	}
	return mcp.DefaultAllowedHosts(g.Config.Listen)
}

// serveMCP serves the MCP gateway on Config.MCPAddr for Envoy's /mcp route
// (the built-in data plane calls the handler in process).
func (g *Gateway) serveMCP() error {
	addr := g.Config.MCPAddr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := listen(addr)
	if err != nil {
		return err
	}
	g.MCPAddr = addrString(lis)
	g.mcpSrv = &http.Server{Handler: g.servicesHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	g.serve("MCP service", func() error {
		if err := g.mcpSrv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return nil
}

// refreshMCP rebuilds the MCP view from the store.
func (g *Gateway) refreshMCP(ctx context.Context) error {
	if g.mcpCat == nil {
		return nil
	}
	v, err := buildMCPView(ctx, g.Store, g.Sealer, g.log)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	g.mcpCat.view.Store(v)
	return nil
}

// mcpEdge serves /mcp on the built-in data plane.
func (g *Gateway) mcpEdge() edge.Option {
	return edge.WithService(mcp.Path, g.mcp)
}

// MCPHandler is the MCP gateway (nil before start).
func (g *Gateway) MCPHandler() http.Handler {
	if g.mcp == nil {
		return nil
	}
	return g.mcp
}
