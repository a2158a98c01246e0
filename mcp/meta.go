package mcp

import (
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// reservedMeta prefixes the _meta keys that belong to the protocol itself:
// from 2026-07-28 a request carries its protocol version, client info and
// capabilities there (io.modelcontextprotocol/protocolVersion, …).
const reservedMeta = "io.modelcontextprotocol/"

// forwardMeta is the _meta of a request the gateway relays upstream: the
// agent's, less its reserved keys, in a new map (the SDK's client adds its
// own to the map it is given). The gateway negotiates each side apart: the
// agent's keys describe the agent's session with the gateway, not the
// gateway's with the upstream, which its client session fills in itself; a
// stateful 2025-11-25 upstream refuses a request whose _meta names
// 2026-07-28. Other keys (progressToken, vendor keys) go on; nil when none
// is left.
func forwardMeta(m sdk.Meta) sdk.Meta {
	var out sdk.Meta
	for k, v := range m {
		if strings.HasPrefix(k, reservedMeta) {
			continue
		}
		if out == nil {
			out = sdk.Meta{}
		}
		out[k] = v
	}
	return out
}
