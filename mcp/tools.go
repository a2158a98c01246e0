package mcp

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tollgate-ai/tollgate/kernel"
)

// listTools answers tools/list: every tool of the request's servers that
// the caller may call, named SERVER__TOOL on /mcp.
func (h *Handler) listTools(ctx context.Context, rc *reqCtx) (*sdk.ListToolsResult, error) {
	ts, err := relayed(ctx, h, rc, capTools, func(ctx context.Context, cs *sdk.ClientSession) iter.Seq2[*sdk.Tool, error] {
		return cs.Tools(ctx, nil)
	}, func(t *sdk.Tool) string { return t.Name }, func(server string, t *sdk.Tool) {
		t.Name = server + Separator + t.Name
	})
	if err != nil {
		return nil, err
	}
	return &sdk.ListToolsResult{Tools: ts, Cacheable: perKey()}, nil
}

// callTool answers tools/call: grant check, admission, the upstream call,
// settlement.
func (h *Handler) callTool(ctx context.Context, rc *reqCtx, req sdk.Request, ev *Event) (sdk.Result, error) {
	params, _ := req.GetParams().(*sdk.CallToolParamsRaw)
	return h.call(ctx, rc, params, ev, nil)
}

// call runs a tools/call. With relay (a downstream 2025-11-25 client that
// reads SSE: stream.go) the upstream's notifications and requests during the
// call are handed to relay as they come, and its final result (the one the
// call is metered on) is returned; without, they are dropped.
func (h *Handler) call(ctx context.Context, rc *reqCtx, params *sdk.CallToolParamsRaw, ev *Event, relay relayFunc) (sdk.Result, error) {
	if params == nil || params.Name == "" {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "tools/call: params.name is required", nil)
	}
	srv, tool, err := rc.checkGrant(grantTool, params.Name)
	if srv != nil {
		ev.Server, ev.Tool = srv.ID, tool
	}
	if err != nil {
		return nil, err
	}

	start := h.now()
	args, blocker, err := h.guardArgs(ctx, rc, params.Name, params.Arguments) // guard.go
	if err != nil {
		if blocker != "" {
			ev.Call = &Call{
				RequestID: newRequestID(), Caller: rc.caller, Server: srv.ID, Tool: tool,
				ArgBytes: len(params.Arguments), StartedAt: start, EndedAt: h.now(),
				Status: kernel.StatusRefused, Code: CodeGuardrailBlocked, Guardrail: blocker,
			}
			h.refused(ctx, ev.Call)
		}
		return nil, err
	}
	call := &Call{
		RequestID: newRequestID(), Caller: rc.caller, Server: srv.ID, Tool: tool,
		ArgBytes: len(args), StartedAt: start,
	}
	ev.Call = call
	req2, runID := admitRequest(call.RequestID, rc.caller, srv, tool, rc.run)
	call.RunID = runID
	d, err := h.acct.Admit(ctx, req2)
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
		if relay != nil && cs.InitializeResult().ProtocolVersion < newProtocol {
			res, err = h.up.callStream(ctx, srv, cs, &sdk.CallToolParamsRaw{Meta: forwardMeta(params.Meta), Name: tool, Arguments: args}, relay)
			return err
		}
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
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
	if rc.single == nil {
		for _, c := range res.Content {
			wrapContent(srv.ID, c)
		}
	}
	return h.guardResult(ctx, rc, params.Name, res)
}

// resolveName maps the name of a tool or prompt (kind) to its server and
// upstream name.
func resolveName(rc *reqCtx, name, kind string) (*Server, string, error) {
	if rc.single != nil {
		return rc.single, name, nil
	}
	id, upstream, ok := splitName(name)
	if !ok {
		return nil, "", rpcError(jsonrpc.CodeInvalidParams,
			fmt.Sprintf("unknown %s %q: %ss on /mcp are named SERVER%s%s", kind, name, kind, Separator, strings.ToUpper(kind)), nil)
	}
	if s := findServer(rc.servers, id); s != nil {
		return s, upstream, nil
	}
	return nil, "", rpcError(jsonrpc.CodeInvalidParams, fmt.Sprintf("unknown %s %q: no MCP server %q", kind, name, id), nil)
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
