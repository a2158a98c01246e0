package store

import (
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
)

// KindMCPServer is the kind of an MCPServer.
const KindMCPServer Kind = "mcp_server"

// MCPServer is an upstream MCP server (Streamable HTTP) the gateway fronts on
// /mcp. Which of its tools a key may call is the key's MCPTools (SERVER/TOOL
// globs, deny by default) narrowed by its user's, team's and org's when they
// set any.
type MCPServer struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Credential is sent upstream as "Authorization: Bearer <credential>"
	// unless CredentialHeader names another header; sealed at rest by the
	// admin layer (AES-GCM) like a provider credential, never shown.
	Credential       []byte `json:"credential,omitempty"`
	CredentialHeader string `json:"credential_header,omitempty"`
	// Headers are sent on every upstream request (not secrets: shown).
	Headers map[string]string `json:"headers,omitempty"`
	// PricePerCall is charged for every tools/call that ran; ToolPrices
	// overrides it per tool (upstream names).
	PricePerCall kernel.Money            `json:"price_per_call,omitempty"`
	ToolPrices   map[string]kernel.Money `json:"tool_prices,omitempty"`
	// RPM bounds the calls to the server per minute, all keys together.
	RPM int64 `json:"rpm,omitempty"`
}

// MCP ledger rows: a tools/call is settled into the ledger as a row whose
// Model is "mcp:SERVER/TOOL" and Deployment "mcp:SERVER" (mcp.ModelName), so
// that spend by model and by deployment breaks down by tool and by server
// without a column of its own; its Usage is one input token when the tool
// ran (at the call's price), none when it did not (no charge).

// MCPPrefix starts the Model and Deployment of an MCP ledger row.
const MCPPrefix = "mcp:"

// MCPCall reports whether e is a tool call's row, and its server and tool.
func (e *LedgerEntry) MCPCall() (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(e.Model, MCPPrefix)
	if !ok || !strings.HasPrefix(e.Deployment, MCPPrefix) {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "/")
	return server, tool, ok
}
