package mcp

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// subscribe relays resources/subscribe (on) or resources/unsubscribe to the
// server of the resource, under the grant of its resources, in the client
// session that serves the agent: for a 2025-11-25 agent its own upstream
// session, so the subscription is the agent's. The upstream's
// notifications/resources/updated are not relayed (the gateway has no
// server stream: GET answers 405).
func (h *Handler) subscribe(ctx context.Context, rc *reqCtx, uri string, on bool) error {
	if uri == "" {
		return rpcError(jsonrpc.CodeInvalidParams, "params.uri is required", nil)
	}
	srv, orig, err := rc.checkGrant(grantResource, uri)
	if err != nil {
		return err
	}
	err = h.up.do(ctx, srv, rc.token, func(ctx context.Context, cs *sdk.ClientSession) error {
		if c := cs.InitializeResult().Capabilities; c == nil || c.Resources == nil || !c.Resources.Subscribe {
			return rpcError(jsonrpc.CodeMethodNotFound, "MCP server "+srv.ID+" does not offer resource subscriptions", nil)
		}
		if on {
			return cs.Subscribe(ctx, &sdk.SubscribeParams{URI: orig})
		}
		return cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: orig})
	})
	if err != nil {
		return upstreamError(srv.ID, err)
	}
	return nil
}

// setLevel relays logging/setLevel to every server of the request the
// caller may use that offers logging, in the client sessions that serve the
// agent: the log messages they then send during a call reach the agent
// (stream.go). A server that fails is logged and left out.
func (h *Handler) setLevel(ctx context.Context, rc *reqCtx, req sdk.Request) {
	params, ok := req.GetParams().(*sdk.SetLoggingLevelParams)
	if !ok || params == nil {
		return
	}
	var wg sync.WaitGroup
	for _, s := range usable(rc.caller, rc.servers) {
		wg.Go(func() {
			err := h.up.do(ctx, s, rc.token, func(ctx context.Context, cs *sdk.ClientSession) error {
				if c := cs.InitializeResult().Capabilities; c == nil || c.Logging == nil {
					return nil
				}
				return cs.SetLoggingLevel(ctx, params)
			})
			if err != nil {
				h.log.Warn("mcp logging/setLevel not relayed", "server", s.ID, "err", err)
			}
		})
	}
	wg.Wait()
}
