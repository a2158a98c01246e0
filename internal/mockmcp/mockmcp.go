// Package mockmcp is a small MCP server built with the official Go SDK, for
// the demo (`make run`: cmd/mockllm serves it on /mcp) and for tests: the
// tools echo, add and word_count, nothing that touches the machine.
//
// /mcp is stateless (it speaks 2026-07-28 and answers 2025-11-25 clients
// without a session); /mcp/sessions keeps 2025-11-25 sessions
// (Mcp-Session-Id), like most MCP servers deployed today.
//
// It imports the SDK and the standard library only.
package mockmcp

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Paths served by Handler's mux.
const (
	Path         = "/mcp"
	PathSessions = "/mcp/sessions"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

type countOut struct {
	Words int `json:"words"`
}

// NewServer is the demo MCP server.
func NewServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "tollgate-demo", Title: "Tollgate demo MCP server", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, any, error) {
			sum := strconv.FormatFloat(in.A+in.B, 'g', -1, 64)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: sum}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "word_count", Description: "Count the words of a text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, countOut, error) {
			return nil, countOut{Words: len(strings.Fields(in.Text))}, nil
		})
	return s
}

// Register adds Path and PathSessions to mux.
func Register(mux *http.ServeMux) {
	s := NewServer()
	get := func(*http.Request) *sdk.Server { return s }
	mux.Handle(Path, sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Stateless: true}))
	mux.Handle(PathSessions, sdk.NewStreamableHTTPHandler(get, nil))
}
