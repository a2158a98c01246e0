package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is the data-plane path prefix of the MCP gateway.
const Path = "/mcp"

// Headers of the Streamable HTTP transport.
const (
	HeaderSessionID = "Mcp-Session-Id"
	HeaderMethod    = "Mcp-Method" // 2026-07-28
	HeaderName      = "Mcp-Name"   // 2026-07-28
	HeaderProtocol  = "Mcp-Protocol-Version"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 4 << 20

// Handler serves /mcp and /mcp/SERVER.
type Handler struct {
	cat    Catalog
	acct   Accountant
	sealer Sealer
	obs    Observer
	log    *slog.Logger
	now    func() time.Time
	base   http.RoundTripper
	guard  ToolGuard // guard.go
	hosts  []string  // allowed Host/Origin names (origin.go); nil: any
	up     *upstreams
	sdkh   *sdk.StreamableHTTPHandler
}

// Option configures a Handler.
type Option func(*Handler)

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// WithObserver sets who hears about every request (access log, metrics, traces).
func WithObserver(o Observer) Option { return func(h *Handler) { h.obs = o } }

// WithClock sets the clock (session token expiry, call times).
func WithClock(now func() time.Time) Option { return func(h *Handler) { h.now = now } }

// WithTransport sets the round tripper of upstream requests (default
// http.DefaultTransport).
func WithTransport(t http.RoundTripper) Option { return func(h *Handler) { h.base = t } }

// New returns the MCP gateway handler.
func New(cat Catalog, acct Accountant, sealer Sealer, opts ...Option) *Handler {
	h := &Handler{
		cat: cat, acct: acct, sealer: sealer,
		obs:  ObserverFunc(func(context.Context, *Event) {}),
		log:  slog.New(slog.DiscardHandler),
		now:  time.Now,
		base: http.DefaultTransport,
	}
	for _, o := range opts {
		o(h)
	}
	h.up = newUpstreams(h.base, h.log)
	h.sdkh = sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		rc, _ := r.Context().Value(reqKey{}).(*reqCtx)
		if rc == nil {
			return nil
		}
		return rc.server
	}, &sdk.StreamableHTTPOptions{
		Stateless:    true, // sessions are the gateway's sealed tokens (token.go)
		JSONResponse: true,
		Logger:       quiet(h.log),
		// The data plane in front sets Host to what the client asked for.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxBodyBytes,
	})
	return h
}

// Close ends the upstream sessions.
func (h *Handler) Close() { h.up.close() }

// reqCtx is one HTTP request's state, reached from the SDK's server through
// the request context.
type reqCtx struct {
	caller  *Caller
	single  *Server   // /mcp/SERVER: that server; nil on /mcp
	servers []*Server // the servers the request may reach
	version string
	token   *sessionToken // a 2025-11-25 session's, nil without one
	run     string        // the run the request's tool calls belong to (runOf)
	server  *sdk.Server
}

type reqKey struct{}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, Path)
	if !ok || (rest != "" && rest[0] != '/') {
		writeError(w, http.StatusNotFound, -32600, "not an MCP endpoint: "+r.URL.Path)
		return
	}
	rc, status, hdr, refused := callerOf(r.Context(), r, rest, h, h.cat) // authorize.go
	if status != 0 {
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write(refused)
		return
	}
	caller := rc.caller

	// 2025-11-25 sessions: the token is checked on every request that
	// carries one, and ended (as far as the client is concerned) by DELETE.
	if sid := r.Header.Get(HeaderSessionID); sid != "" {
		t, err := openToken(h.sealer, sid, caller.KeyID, h.now())
		if err != nil {
			writeError(w, http.StatusNotFound, CodeNoSession, "session not found: start a new one with initialize")
			return
		}
		if rc.version == "" {
			rc.version = t.Version
		}
		rc.token = &t
		if r.Method == http.MethodDelete {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), connectTimeout)
			defer cancel()
			h.up.end(ctx, &t, h.cat.Servers())
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		if err != nil {
			writeError(w, http.StatusBadRequest, -32700, "cannot read the request body")
			return
		}
		if len(body) > MaxBodyBytes {
			writeError(w, http.StatusRequestEntityTooLarge, -32600, "request body too large")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if v, agent, ok := initializeVersion(body); ok && r.Header.Get(HeaderSessionID) == "" {
			t := newSessionToken(caller.KeyID, v, h.now())
			t.Agent = agentCapabilities(agent)
			t.Up = h.up.open(r.Context(), t.ID, usable(caller, rc.servers), t.Agent)
			rc.token = &t
			w.Header().Set(HeaderSessionID, sealToken(h.sealer, t))
		}
	}
	var err error
	if rc.run, err = runOf(r, rc.token); err != nil {
		writeError(w, http.StatusBadRequest, -32600, err.Error())
		return
	}
	if r.Method == http.MethodGet && rc.token != nil && rc.version < newProtocol && acceptsSSE(r) {
		h.serveServerStream(w, r, rc) // serverstream.go
		return
	}
	if r.Method == http.MethodPost { // stream.go
		if res, ok := relayedResponse(body); ok {
			h.serveRelayedResponse(w, r, rc, res)
			return
		}
		if req, ok := toolsCall(body); ok && rc.token != nil && rc.version < newProtocol && acceptsSSE(r) {
			h.serveCallStream(w, r, rc, req)
			return
		}
	}
	rc.server = h.newServer(rc)
	h.sdkh.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), reqKey{}, rc)))
}

// newServer is the SDK server of one request: no tools, resources or
// prompts of its own, a middleware answers their methods from the upstreams.
func (h *Handler) newServer(rc *reqCtx) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "tollgate", Title: "Tollgate MCP gateway", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{
			Tools: &sdk.ToolCapabilities{}, Resources: &sdk.ResourceCapabilities{Subscribe: true}, Prompts: &sdk.PromptCapabilities{},
			Completions: &sdk.CompletionCapabilities{}, Logging: &sdk.LoggingCapabilities{},
		},
		// subscribe.go: relayed to the resource's server.
		SubscribeHandler: func(ctx context.Context, req *sdk.SubscribeRequest) error {
			return h.subscribe(ctx, rc, req.Params.URI, true)
		},
		UnsubscribeHandler: func(ctx context.Context, req *sdk.UnsubscribeRequest) error {
			return h.subscribe(ctx, rc, req.Params.URI, false)
		},
		Logger: quiet(h.log),
	})
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			start := h.now()
			ev := &Event{Method: method, ProtocolVersion: rc.version, Caller: rc.caller}
			if rc.single != nil {
				ev.Server = rc.single.ID
			}
			var res sdk.Result
			var err error
			switch method {
			case "tools/list":
				res, err = h.listTools(ctx, rc)
			case "tools/call":
				res, err = h.callTool(ctx, rc, req, ev)
			case "resources/list":
				res, err = h.listResources(ctx, rc)
			case "resources/templates/list":
				res, err = h.listResourceTemplates(ctx, rc)
			case "resources/read":
				res, err = h.readResource(ctx, rc, req, ev)
			case "prompts/list":
				res, err = h.listPrompts(ctx, rc)
			case "prompts/get":
				res, err = h.getPrompt(ctx, rc, req, ev)
			case "completion/complete":
				res, err = h.complete(ctx, rc, req, ev) // resources.go
			case "logging/setLevel":
				h.setLevel(ctx, rc, req) // subscribe.go
				res, err = next(ctx, method, req)
			default:
				res, err = next(ctx, method, req)
			}
			if err == nil && rc.version >= newProtocol {
				res = markComplete(res)
			}
			ev.Err, ev.Duration = err, h.now().Sub(start)
			h.obs.Observe(ctx, ev)
			return res, err
		}
	})
	return srv
}

// newProtocol is the first protocol version whose results carry resultType.
const newProtocol = "2026-07-28"

// markComplete sets resultType "complete" on a relayed tools/call,
// prompts/get or resources/read result for a 2026-07-28 client, which
// requires it. The SDK sets it only on the results of its own handlers (for
// these three through an unexported field; lists and completions it marks
// itself), and an upstream that speaks 2025-11-25 sends none: so a JSON
// round trip, the one way to set the field from outside the SDK. An
// upstream's own resultType, when it sent one, is kept.
func markComplete(res sdk.Result) sdk.Result {
	var fresh sdk.Result
	switch res.(type) {
	case *sdk.CallToolResult:
		fresh = new(sdk.CallToolResult)
	case *sdk.GetPromptResult:
		fresh = new(sdk.GetPromptResult)
	case *sdk.ReadResourceResult:
		fresh = new(sdk.ReadResourceResult)
	default:
		return res
	}
	b, err := json.Marshal(res)
	if err != nil || len(b) < 2 || b[0] != '{' {
		return res
	}
	doc := []byte(`{"resultType":"complete"`)
	if len(b) > 2 {
		doc = append(doc, ',')
	}
	doc = append(doc, b[1:]...) // a later resultType (the upstream's) wins
	if json.Unmarshal(doc, fresh) != nil {
		return res
	}
	return fresh
}

// HeaderRunID names the run (an agent's loop, a session) a request belongs
// to: the same header as on model requests.
const HeaderRunID = "X-Tollgate-Run-Id"

// maxRunID bounds a run id's length (as on model requests).
const maxRunID = 128

// runOf is the run of a request's tool calls: its x-tollgate-run-id, else
// its 2025-11-25 session's ("mcp-" + the session id, the same for every
// request of the session on any replica), else none (a 2026-07-28 client
// has no session: it names its run with the header).
func runOf(r *http.Request, t *sessionToken) (string, error) {
	if run := r.Header.Get(HeaderRunID); run != "" {
		for i := 0; i < len(run); i++ {
			if run[i] < 0x21 || run[i] > 0x7e {
				return "", fmt.Errorf("the %s header must be 1 to %d printable ASCII characters", HeaderRunID, maxRunID)
			}
		}
		if len(run) > maxRunID {
			return "", fmt.Errorf("the %s header must be 1 to %d printable ASCII characters", HeaderRunID, maxRunID)
		}
		return run, nil
	}
	if t != nil {
		return "mcp-" + t.ID, nil
	}
	return "", nil
}

// initializeVersion reports whether body is an initialize request, the
// protocol version it asks for and the client's capabilities.
func initializeVersion(body []byte) (string, *sdk.ClientCapabilities, bool) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string                  `json:"protocolVersion"`
			Capabilities    *sdk.ClientCapabilities `json:"capabilities"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != "initialize" {
		return "", nil, false
	}
	return m.Params.ProtocolVersion, m.Params.Capabilities, true
}

// toolsCall is body's tools/call request, if it is one.
func toolsCall(body []byte) (*jsonrpc.Request, bool) {
	if !bytes.Contains(body, []byte(`"tools/call"`)) {
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil, false
	}
	req, ok := msg.(*jsonrpc.Request)
	return req, ok && req.IsCall() && req.Method == "tools/call"
}

// bearer is the key of a request: Authorization: Bearer, else x-api-key.
func bearer(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return strings.TrimSpace(r.Header.Get("X-Api-Key"))
}

// unauthorized is the WWW-Authenticate challenge and the message of a
// request whose key is missing or unknown (RFC 6750 §3).
func unauthorized(r *http.Request) (challenge, msg string) {
	if bearer(r) == "" {
		return `Bearer realm="tollgate"`, "missing api key: send Authorization: Bearer <tollgate key>"
	}
	return `Bearer realm="tollgate", error="invalid_token"`, "invalid api key"
}

// writeError answers with a JSON-RPC error (id null: the request was not
// read as JSON-RPC).
func writeError(w http.ResponseWriter, status int, code int64, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(code, msg))
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "mcp-" + hex.EncodeToString(b[:])
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// quiet is the SDK's logger: its warnings and errors only (it logs every
// stateless request's session at info).
func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{l.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(a), m.min}
}

func (m minLevel) WithGroup(n string) slog.Handler { return minLevel{m.Handler.WithGroup(n), m.min} }
