// Package mcp is the MCP gateway: it serves the Model Context Protocol over
// Streamable HTTP to agents (both protocol versions, 2026-07-28 stateless and
// 2025-11-25 with sessions) in front of upstream MCP servers, under the same
// virtual keys, limits, budgets, ledger and audit as model calls.
//
// It owns:
//   - the HTTP handler (handler.go): key authentication (401 with
//     WWW-Authenticate), /mcp (every server the key may use, tools named
//     SERVER__TOOL) and /mcp/SERVER (one server, its own names);
//   - tools (tools.go), resources and prompts (resources.go): relayed,
//     filtered by grants, named per server on /mcp;
//   - session tokens (token.go): a 2025-11-25 session is a sealed token the
//     client carries in Mcp-Session-Id, so any replica serves its next request
//     without sticky sessions or a session store;
//   - grants (grants.go): SERVER/TOOL globs, deny by default, the key's
//     grants intersected with its ancestors';
//   - upstream sessions (upstream.go): official-SDK client sessions,
//     negotiated per server (2026-07-28 through server/discover, else the
//     2025-11-25 initialize handshake): one shared per server and replica,
//     and for each 2025-11-25 agent one of its own per server that keeps
//     sessions, carried in its token and resumed by any replica;
//   - metering (meter.go): every tools/call admitted through the same
//     Accountant as model requests and settled into the ledger as an MCP row;
//   - the relay of a call's stream (stream.go): the upstream's notifications
//     and requests during a 2025-11-25 agent's tools/call, on an SSE reply,
//     and the agent's answers back to the upstream session that asked;
//     logging/setLevel and resource subscriptions (subscribe.go); a
//     2025-11-25 agent's server stream (GET, serverstream.go): what its
//     upstream sessions send outside calls (resource updates among them);
//   - DNS-rebinding protection (origin.go): Host and Origin checked against
//     an allow-list before anything else.
//
// The protocol itself is the official Go SDK's
// (github.com/modelcontextprotocol/go-sdk): the downstream side is a
// stateless StreamableHTTPHandler whose per-request Server answers tools/list
// and tools/call through a receiving middleware; the upstream side is the
// SDK's Client over StreamableClientTransport. Nothing here frames JSON-RPC
// by hand except the Mcp-Session-Id header of an initialize reply (the SDK's
// stateless handler sets none), reading the method of a request body to
// know it is an initialize, the handshake of a resumed upstream session
// (resumeTransport: the SDK's client cannot resume a session), and the
// relay of what an upstream sends during a 2025-11-25 agent's tools/call
// (stream.go, with the SDK's jsonrpc encoder: notifications and the
// upstream's requests on an SSE reply, the agent's answers routed back to
// the upstream session that asked, from any replica).
//
// It imports the MCP SDK, kernel (scopes, money, admission types) and the
// standard library. It must not import extproc, gateway, store, accounting,
// admin or the data planes: the gateway wires it in through the small
// interfaces declared in config.go.
package mcp
