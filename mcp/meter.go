package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/tollgate-ai/tollgate/kernel"
)

// ModelName is the ledger's model column of a tool call: "mcp:SERVER/TOOL".
// With Deployment "mcp:SERVER" it makes the MCP row kind (store.LedgerEntry
// documents it), so spend reports by model and deployment break down by
// tool and by server.
func ModelName(server, tool string) string { return "mcp:" + server + "/" + tool }

// ServerScopeID is the id of a server's own rpm scope (kernel.ScopeDeployment,
// shared by replicas through the counters) and the ledger's deployment column.
func ServerScopeID(server string) string { return "mcp:" + server }

// callPrice is a per-call price as a kernel.Price: one input token at
// price×1e6 per million tokens costs exactly price, and a strict budget
// reserves exactly price (a prompt of one byte, no output price).
func callPrice(price kernel.Money) kernel.Price {
	return kernel.Price{Input: price * 1_000_000}
}

// MaxCallPrice is the largest per-call price callPrice can carry.
const MaxCallPrice = kernel.Money(1<<63-1) / 1_000_000

// CallUsage is the usage a call settles with: one "token" (at the call's
// price) when it ran, none otherwise.
func CallUsage(ran bool) kernel.Usage {
	if ran {
		return kernel.Usage{Input: 1}
	}
	return kernel.Usage{}
}

// admitRequest is the admission of one call of tool on srv by c: the key's
// and its ancestors' scopes (their model allow-lists do not apply to tools),
// the run's right after the key when the call names one (kernel.WithRun: the
// same level as a model request of that run, so a run budget covers both),
// plus the server's rpm scope when it has one. It returns the run scope's
// id ("" without a run).
func admitRequest(id string, c *Caller, srv *Server, tool, run string) (*kernel.AdmitRequest, string) {
	scopes := make([]kernel.Scope, 0, len(c.Scopes)+1)
	for _, s := range c.Scopes {
		if s.Limits != nil && len(s.Limits.Models) > 0 {
			l := *s.Limits
			l.Models = nil
			s.Limits = &l
		}
		scopes = append(scopes, s)
	}
	scopes, runID := kernel.WithRun(scopes, run)
	if srv.RPM > 0 {
		scopes = append(scopes, kernel.Scope{
			Ref:    kernel.ScopeRef{Kind: kernel.ScopeDeployment, ID: ServerScopeID(srv.ID)},
			Limits: &kernel.Limits{RPM: srv.RPM},
		})
	}
	return &kernel.AdmitRequest{
		ID:          id,
		Scopes:      scopes,
		Model:       ModelName(srv.ID, tool),
		PromptBytes: 1,
		MaxTokens:   1,
		Price:       callPrice(srv.Price(tool)),
	}, runID
}

// refusal is the JSON-RPC error of a refused admission.
func refusal(d kernel.Decision) error {
	scope := scopeName(d.Scope)
	switch d.Reason {
	case kernel.ReasonRequestLimit, kernel.ReasonParallelLimit, kernel.ReasonTokenLimit:
		what := map[kernel.Reason]string{
			kernel.ReasonRequestLimit:  "requests per minute",
			kernel.ReasonParallelLimit: "parallel requests",
			kernel.ReasonTokenLimit:    "tokens per minute",
		}[d.Reason]
		return rpcError(CodeRateLimited, fmt.Sprintf("rate limited: %s limit of %s reached", what, scope),
			map[string]any{"scope": scope, "retry_after_ms": d.RetryAfter.Milliseconds()})
	case kernel.ReasonBudgetExceeded:
		return rpcError(CodeBudgetExceeded, "budget exceeded: the budget of "+scope+" cannot cover this call",
			map[string]any{"scope": scope})
	case kernel.ReasonKeyExpired:
		return rpcError(CodeKeyExpired, "the key has expired", nil)
	default:
		return rpcError(CodeRateLimited, "refused by "+scope, map[string]any{"scope": scope})
	}
}

func scopeName(r kernel.ScopeRef) string {
	names := map[kernel.ScopeKind]string{
		kernel.ScopeGlobal: "global", kernel.ScopeOrg: "org", kernel.ScopeTeam: "team",
		kernel.ScopeUser: "user", kernel.ScopeCustomer: "customer", kernel.ScopeKey: "key",
		kernel.ScopeDeployment: "server", kernel.ScopeRun: "run", kernel.ScopeTag: "tag",
	}
	if r.Kind == kernel.ScopeGlobal {
		return "global"
	}
	id := r.ID
	if r.Kind == kernel.ScopeDeployment && len(id) > 4 && id[:4] == "mcp:" {
		id = id[4:]
	}
	return names[r.Kind] + " " + id
}

func rpcError(code int64, msg string, data any) *jsonrpc.Error {
	e := &jsonrpc.Error{Code: code, Message: msg}
	if data != nil {
		e.Data, _ = json.Marshal(data)
	}
	return e
}

// settle charges a finished call on a context that outlives the request:
// the charge is recorded whatever happens to the client.
func (h *Handler) settle(ctx context.Context, c *Call) kernel.Money {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	cost, err := h.acct.SettleCall(ctx, c)
	if err != nil {
		h.log.Error("mcp settle failed", "request_id", c.RequestID, "err", err)
	}
	return cost
}
