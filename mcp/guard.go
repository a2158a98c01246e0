package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Guardrails on tool calls (issue 32): the guardrails attached to the
// caller's key, team and org apply to a tools/call's arguments before it is
// admitted (pre) and to its result before the client sees it (post). The
// checks are the gateway's (guard/, wired in through ToolGuard); this file
// only feeds them the JSON documents and acts on the verdict:
//
//   - arguments blocked: JSON-RPC error CodeGuardrailBlocked, nothing
//     admitted, the upstream never called, nothing charged;
//   - arguments redacted: the upstream receives the rewritten arguments;
//   - result blocked: the error replaces the result (the call ran and was
//     charged, as a model reply blocked after the fact is);
//   - result redacted: the client receives the rewritten result.
//
// Only string values of the documents are inspected and rewritten (tool
// names, keys and numbers are not), as for model requests.

// CodeGuardrailBlocked: a guardrail refused a tool call's arguments or result.
const CodeGuardrailBlocked = -32047

// ToolStage is where a tool guardrail runs.
type ToolStage uint8

// Tool stages.
const (
	// ToolArguments: a tools/call's arguments, before admission.
	ToolArguments ToolStage = iota + 1
	// ToolResult: a tools/call's result, before the client sees it.
	ToolResult
)

// ToolGuard runs a caller's guardrails on a tool call's JSON document.
// Implementations must be safe for concurrent use.
type ToolGuard interface {
	CheckTool(ctx context.Context, caller *Caller, stage ToolStage, doc []byte) ToolVerdict
}

// ToolVerdict is a ToolGuard's outcome.
type ToolVerdict struct {
	// Applied names the guardrails that ran (for logs).
	Applied []string
	// Blocked: Message says which guardrail refused and why (never the
	// matched text), Guardrail names it.
	Blocked   bool
	Message   string
	Guardrail string
	// Doc is the rewritten document when a guardrail redacted it; nil when
	// unchanged.
	Doc []byte
}

// WithGuard sets the guardrails of tool calls (none by default).
func WithGuard(g ToolGuard) Option { return func(h *Handler) { h.guard = g } }

// guardArgs checks a call's arguments; it returns those to send upstream, or
// the error that refuses the call and the guardrail that did.
func (h *Handler) guardArgs(ctx context.Context, rc *reqCtx, call string, args json.RawMessage) (json.RawMessage, string, error) {
	if h.guard == nil || len(args) == 0 {
		return args, "", nil
	}
	v := h.guard.CheckTool(ctx, rc.caller, ToolArguments, args)
	if err := h.guardVerdict(rc, call, "arguments", v); err != nil {
		return nil, v.Guardrail, err
	}
	if v.Doc != nil {
		return json.RawMessage(v.Doc), "", nil
	}
	return args, "", nil
}

// refused records a call whose arguments guardrail refused: its $0 row
// (the reason a refused call is not free of trace: spend logs show what was
// refused and by which guardrail, as for model requests).
func (h *Handler) refused(ctx context.Context, c *Call) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := h.acct.RefuseCall(ctx, c); err != nil {
		h.log.Warn("recording a refused tool call failed", "request_id", c.RequestID, "guardrail", c.Guardrail, "err", err)
	}
}

// guardResult checks a call's result; it returns the result to send, or the
// error that replaces it.
func (h *Handler) guardResult(ctx context.Context, rc *reqCtx, call string, res *sdk.CallToolResult) (*sdk.CallToolResult, error) {
	if h.guard == nil || res == nil {
		return res, nil
	}
	doc, err := json.Marshal(res)
	if err != nil {
		return res, nil //nolint:nilerr // a result the SDK cannot encode fails on its own way out
	}
	v := h.guard.CheckTool(ctx, rc.caller, ToolResult, doc)
	if err := h.guardVerdict(rc, call, "result", v); err != nil {
		return nil, err
	}
	if v.Doc == nil {
		return res, nil
	}
	out := new(sdk.CallToolResult)
	if err := json.Unmarshal(v.Doc, out); err != nil {
		h.log.Warn("guardrail rewrote a tool result into an unreadable one", "tool", call, "err", err)
		return nil, rpcError(CodeGuardrailBlocked, "A guardrail rewrote the tool result into an invalid one.", nil)
	}
	return out, nil
}

// guardVerdict logs a verdict's intervention and returns the error of a
// block.
func (h *Handler) guardVerdict(rc *reqCtx, call, what string, v ToolVerdict) error {
	if !v.Blocked && v.Doc == nil {
		return nil
	}
	action := "redact"
	if v.Blocked {
		action = "block"
	}
	h.log.Info("guardrail on a tool call", "key", rc.caller.KeyID, "tool", call, "part", what,
		"action", action, "guardrails", strings.Join(v.Applied, ","))
	if !v.Blocked {
		return nil
	}
	return rpcError(CodeGuardrailBlocked, v.Message, map[string]any{"guardrails": v.Applied, "part": what})
}
