package main

import (
	"context"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// demoMCP registers the mock provider's demo MCP server (internal/mockmcp,
// served by mockllm on /mcp) as MCP server `demo` at $0.001 a call, and lets
// the demo key call its tools.
func demoMCP(ctx context.Context, st store.Store, upstream string) error {
	srv := store.MCPServer{ID: "demo", URL: strings.TrimSuffix(upstream, "/") + "/mcp", PricePerCall: kernel.MicroUSD * 1000}
	if _, err := store.Put(ctx, st, srv.ID, &srv, -1); err != nil {
		return err
	}
	k, ver, err := store.Get[store.Key](ctx, st, "demo")
	if err != nil || len(k.MCPTools) > 0 {
		return err
	}
	k.MCPTools = []string{"demo/*"}
	_, err = store.Put(ctx, st, k.ID, &k, ver)
	return err
}
