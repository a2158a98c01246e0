package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-ai/tollgate/kernel"
)

// listTools answers tools/list: every tool of the request's servers that
// the caller may call, named SERVER__TOOL on /mcp. On /mcp a server that
// fails is left out (and logged) so that the others still serve; on
// /mcp/SERVER its failure is the answer.
func (h *Handler) listTools(ctx context.Context, rc *reqCtx) (*sdk.ListToolsResult, error) {
	usable := usable(rc.caller, rc.servers)
	lists := make([][]*sdk.Tool, len(usable))
	errs := make([]error, len(usable))
	var wg sync.WaitGroup
	for i, s := range usable {
		wg.Go(func() { lists[i], errs[i] = h.upstreamTools(ctx, s, rc.token) })
	}
	wg.Wait()
	out := &sdk.ListToolsResult{Tools: []*sdk.Tool{}}
	for i, s := range usable {
		if errs[i] != nil {
			if rc.single != nil {
				return nil, upstreamError(s.ID, errs[i])
			}
			h.log.Warn("mcp tools/list: upstream left out", "server", s.ID, "err", errs[i])
			continue
		}
		for _, t := range lists[i] {
			if ok, _ := rc.caller.Allowed(s.ID, t.Name); !ok {
				continue
			}
			if rc.single == nil {
				c := *t
				c.Name = s.ID + Separator + t.Name
				t = &c
			}
			out.Tools = append(out.Tools, t)
		}
	}
	return out, nil
}

// upstreamTools is every tool of one server, all pages.
func (h *Handler) upstreamTools(ctx context.Context, s *Server, tok *sessionToken) ([]*sdk.Tool, error) {
	var tools []*sdk.Tool
	err := h.up.do(ctx, s, tok, func(ctx context.Context, cs *sdk.ClientSession) error {
		tools = tools[:0]
		params := &sdk.ListToolsParams{}
		for {
			res, err := cs.ListTools(ctx, params)
			if err != nil {
				return err
			}
			tools = append(tools, res.Tools...)
			if res.NextCursor == "" {
				return nil
			}
			params.Cursor = res.NextCursor
		}
	})
	return tools, err
}

// callTool answers tools/call: grant check, admission, the upstream call,
// settlement.
func (h *Handler) callTool(ctx context.Context, rc *reqCtx, req sdk.Request, ev *Event) (sdk.Result, error) {
	params, ok := req.GetParams().(*sdk.CallToolParamsRaw)
	if !ok || params == nil || params.Name == "" {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "tools/call: params.name is required", nil)
	}
	srv, tool, err := h.resolve(rc, params.Name)
	if err != nil {
		return nil, err
	}
	ev.Server, ev.Tool = srv.ID, tool
	if ok, missing := rc.caller.Allowed(srv.ID, tool); !ok {
		grant := srv.ID + "/" + tool
		return nil, rpcError(CodeToolNotGranted,
			fmt.Sprintf("tool %q is not granted: %s has no mcp-tools grant matching %q", params.Name, missing, grant),
			map[string]any{"missing_grant": grant, "level": missing})
	}

	call := &Call{
		RequestID: newRequestID(), Caller: rc.caller, Server: srv.ID, Tool: tool,
		ArgBytes: len(params.Arguments), StartedAt: h.now(),
	}
	ev.Call = call
	d, err := h.acct.Admit(ctx, admitRequest(call.RequestID, rc.caller, srv, tool))
	if err != nil {
		return nil, rpcError(jsonrpc.CodeInternalError, "admission failed", nil)
	}
	if !d.Admitted {
		return nil, refusal(d)
	}
	call.Admitted = true

	var res *sdk.CallToolResult
	err = h.up.do(ctx, srv, rc.token, func(ctx context.Context, cs *sdk.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: params.Arguments})
		return err
	})
	call.EndedAt = h.now()
	var wire *jsonrpc.Error
	switch {
	case err == nil:
		call.Ran, call.Status = true, kernel.StatusCompleted
	case ctx.Err() != nil:
		// The client went away: the upstream may have run the tool.
		call.Ran, call.Status = true, kernel.StatusAborted
	case errors.As(err, &wire):
		// The upstream refused the call (unknown tool, invalid arguments):
		// it did not run.
		call.Status, call.Code = kernel.StatusFailed, int(wire.Code)
	default:
		call.Status, call.Code = kernel.StatusFailed, CodeUpstream
	}
	ev.Cost = h.settle(ctx, call)
	if err != nil {
		if wire != nil {
			return nil, wire
		}
		return nil, upstreamError(srv.ID, err)
	}
	return res, nil
}

// resolve maps a tools/call name to its server and upstream tool name.
func (h *Handler) resolve(rc *reqCtx, name string) (*Server, string, error) {
	if rc.single != nil {
		return rc.single, name, nil
	}
	id, tool, ok := splitName(name)
	if !ok {
		return nil, "", rpcError(jsonrpc.CodeInvalidParams,
			fmt.Sprintf("unknown tool %q: tools on /mcp are named SERVER%sTOOL", name, Separator), nil)
	}
	for _, s := range rc.servers {
		if s.ID == id {
			return s, tool, nil
		}
	}
	return nil, "", rpcError(jsonrpc.CodeInvalidParams, fmt.Sprintf("unknown tool %q: no MCP server %q", name, id), nil)
}

func upstreamError(server string, err error) error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return wire
	}
	return rpcError(CodeUpstream, fmt.Sprintf("MCP server %s failed: %v", server, err), map[string]any{"server": server})
}

// usable is the servers of which c may call some tool.
func usable(c *Caller, servers []*Server) []*Server {
	var out []*Server
	for _, s := range servers {
		if c.MayUse(s.ID) {
			out = append(out, s)
		}
	}
	return out
}
