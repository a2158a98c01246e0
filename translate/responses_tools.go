package translate

import (
	"encoding/json"
	"strings"

	"github.com/tollgate-ai/tollgate/schema/openai"
)

// Built-in tools on translated providers. Clients such as Codex CLI send
// built-in tools with every request (web_search, local_shell, custom
// freeform tools such as apply_patch, namespace groups of MCP tools,
// image_generation, tool_search) beside their function tools. A chat or
// Anthropic upstream cannot run them, so a translated request leaves them
// out and the model works with the function tools; the reply says which were
// left out in the x-tollgate-dropped-tools header (types, with the name of
// named tools: "web_search, custom:apply_patch"). A tool_choice that forces a
// built-in tool still gets a 400: the request cannot be served as asked.

// hdrDroppedTools lists the built-in tools a translated request left out.
const hdrDroppedTools = "x-tollgate-dropped-tools"

// ReplyHeaderer is implemented by translators that add headers to the
// client's reply (the processor sets them with its own).
type ReplyHeaderer interface {
	ReplyHeaders() [][2]string
}

var (
	_ ReplyHeaderer = (*responsesViaChat)(nil)
	_ ReplyHeaderer = (*responsesOpenAI)(nil)
)

// ReplyHeaders names the dropped built-in tools.
func (t *responsesViaChat) ReplyHeaders() [][2]string {
	if len(t.dropped) == 0 {
		return nil
	}
	return [][2]string{{hdrDroppedTools, strings.Join(t.dropped, ", ")}}
}

// ReplyHeaders are those of the way the request took.
func (t *responsesOpenAI) ReplyHeaders() [][2]string {
	if h, ok := t.Translator.(ReplyHeaderer); ok {
		return h.ReplyHeaders()
	}
	return nil
}

// droppedToolName is a built-in tool's type, with its name when it has one.
func droppedToolName(tool openai.ResponsesTool) string {
	if tool.Name != "" {
		return tool.Type + ":" + tool.Name
	}
	return tool.Type
}

// forcedToolType is the type of the tool a tool_choice object forces when it
// is not a function ("" for a string choice or a function).
func forcedToolType(raw json.RawMessage) string {
	var c struct {
		Type string `json:"type"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &c) != nil || c.Type == "function" {
		return ""
	}
	return c.Type
}
