package mcp

import (
	"context"
	"errors"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Errors.
var (
	// ErrUnauthorized: no key, or an unknown, expired or revoked one (HTTP 401).
	ErrUnauthorized = errors.New("mcp: invalid api key")
	// ErrUnknownServer: no MCP server of that id (HTTP 404 on /mcp/SERVER,
	// a JSON-RPC error on a SERVER__TOOL name).
	ErrUnknownServer = errors.New("mcp: unknown server")
	// ErrBadSession: a Mcp-Session-Id that is not a token this gateway sealed
	// for this key, or an expired one (HTTP 404: the client starts a new
	// session, 2025-11-25 transports §session management).
	ErrBadSession = errors.New("mcp: unknown or expired session")
)

// JSON-RPC error codes of the gateway's own refusals, in the
// implementation-defined server error range of JSON-RPC 2.0 §5.1 (-32000 to
// -32099) away from the codes the SDKs give meanings of their own (-32001 to
// -32005 in the Go SDK's jsonrpc2, where -32003 and -32004 close the
// client's connection; -32002 resource not found; -32020 to -32022).
const (
	CodeUnauthorized   = -32040 // no or bad key (with HTTP 401)
	CodeToolNotGranted = -32041 // the key's grants do not cover the tool
	CodeRateLimited    = -32042 // rpm or parallel limit of a scope
	CodeBudgetExceeded = -32043 // a budget of a scope
	CodeUpstream       = -32044 // the upstream server failed or cannot be reached
	CodeKeyExpired     = -32045 // the key has expired
	CodeNoSession      = -32046 // unknown or expired Mcp-Session-Id (with HTTP 404)
)

// Server is one upstream MCP server (Streamable HTTP) as the gateway uses it.
type Server struct {
	ID  string
	URL string
	// Headers are sent on every upstream request: the credential (already
	// opened, never logged) and any configured ones.
	Headers map[string]string
	// PricePerCall is what a tools/call costs when it ran; ToolPrices
	// overrides it per tool (upstream names).
	PricePerCall kernel.Money
	ToolPrices   map[string]kernel.Money
	// RPM bounds the calls to this server per minute across every key (0: no
	// limit), counted in a scope of its own shared by replicas.
	RPM int64
}

// Price is what one call of tool costs.
func (s *Server) Price(tool string) kernel.Money {
	if p, ok := s.ToolPrices[tool]; ok {
		return p
	}
	return s.PricePerCall
}

// Grant is the tool patterns one level of a key's hierarchy allows.
type Grant struct {
	// Level names the level for error messages: "key k1", "team eng", …
	Level string
	// Patterns are SERVER/TOOL globs (path.Match syntax).
	Patterns []string
}

// Caller is an authenticated key: who is charged and what it may call.
type Caller struct {
	KeyID, UserID, TeamID, OrgID string
	// Scopes in admission order, key first (the same as a model request's).
	Scopes []kernel.Scope
	// Grants: the key's own first, then its ancestors' that set any
	// (see Allowed).
	Grants []Grant
}

// Catalog is the gateway's view of configuration: served from memory, no
// I/O on the request path.
type Catalog interface {
	// Authenticate maps a key secret to its caller; ErrUnauthorized otherwise.
	Authenticate(ctx context.Context, secret string) (*Caller, error)
	// Servers lists the configured MCP servers, ordered by id.
	Servers() []*Server
}

// Call is what the gateway observed of one tools/call.
type Call struct {
	RequestID string
	Caller    *Caller
	Server    string
	Tool      string // the upstream's name
	// Admitted: the accountant admitted the call (else it was refused and
	// reached no upstream).
	Admitted bool
	// Ran: the upstream ran the tool (a result, even one with isError);
	// a call that did not run costs nothing.
	Ran    bool
	Status kernel.Status
	Code   int // JSON-RPC error code of a failed call, 0 otherwise
	// RunID is the run scope's id (kernel.RunScopeID) when the call belongs
	// to a run: the request's x-tollgate-run-id, else its 2025-11-25
	// session's (run "mcp-" + the session id). Its ledger row carries it.
	RunID string
	// Guardrail names the guardrail that refused the call's arguments
	// (Status kernel.StatusRefused, never admitted): see RefuseCall.
	Guardrail string
	ArgBytes  int
	StartedAt time.Time
	EndedAt   time.Time
}

// Accountant admits and settles tool calls: the one the processor uses.
type Accountant interface {
	// Admit checks and reserves on every scope at once.
	Admit(ctx context.Context, req *kernel.AdmitRequest) (kernel.Decision, error)
	// SettleCall charges a finished call (its reservation released) and
	// records it in the ledger; it returns the cost charged.
	SettleCall(ctx context.Context, c *Call) (kernel.Money, error)
	// RefuseCall records a call a guardrail refused before admission
	// (c.Guardrail, c.Status kernel.StatusRefused): a $0 ledger row whose
	// deployment is "guardrail:NAME", as for a refused model request; no
	// reservation was made, no counter is touched.
	RefuseCall(ctx context.Context, c *Call) error
}

// Observer hears about every finished tools/call and every other method
// (access log, metrics, traces). Implementations must not block.
type Observer interface {
	Observe(ctx context.Context, ev *Event)
}

// Event is one MCP request the gateway answered.
type Event struct {
	Method          string // mcp.method.name
	ProtocolVersion string
	Server          string // "" for methods that span servers
	Tool            string // gen_ai.tool.name (upstream name)
	Caller          *Caller
	Call            *Call        // tools/call only
	Cost            kernel.Money // tools/call only
	Err             error
	Duration        time.Duration
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, ev *Event)

// Observe implements Observer.
func (f ObserverFunc) Observe(ctx context.Context, ev *Event) { f(ctx, ev) }

// Sealer seals and opens session tokens (authenticated encryption: the
// gateway's secret.Sealer, under a key derived from the master key).
type Sealer interface {
	Seal(plaintext []byte) []byte
	Open(sealed []byte) ([]byte, error)
}
