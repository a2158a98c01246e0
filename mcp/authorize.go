package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// EdgeAuthorizer refuses MCP requests at the data plane's edge, before they
// reach the MCP service: on Envoy the ext_proc processor asks it about every
// request of the /mcp route (docs/envoy.md, "The MCP gateway"). It answers
// what the service would: 403 for a Host or Origin off the allow-list
// (WithAllowedHosts), 401 for no or a bad key, 404 for an unknown
// /mcp/SERVER, and the JSON-RPC -32041 error of a tools/call, prompts/get,
// resources/read or completion/complete the key's grants do not cover. It
// never admits nor charges: a request it lets through is authenticated,
// checked, admitted and settled by the service as before, so metering stays
// exactly once, and what it cannot decide it lets through for the service
// to answer (an unknown name, a batch, a body that is not JSON-RPC).
//
// Its methods take only standard-library types, so that the processor
// declares the interface it needs without importing this package.
type EdgeAuthorizer struct {
	cat   Catalog
	obs   Observer
	now   func() time.Time
	hosts *Handler // the Host/Origin allow-list (origin.go), nothing else
}

// NewEdgeAuthorizer returns the edge authorizer of cat's keys and servers;
// obs (nil: none) hears about each call it refuses for lack of a grant, as
// the service's observer would have (access log, metrics, traces). Of the
// handler's options only WithAllowedHosts matters: give it the service's.
func NewEdgeAuthorizer(cat Catalog, obs Observer, opts ...Option) *EdgeAuthorizer {
	if obs == nil {
		obs = ObserverFunc(func(context.Context, *Event) {})
	}
	a := &EdgeAuthorizer{cat: cat, obs: obs, now: time.Now, hosts: &Handler{}}
	for _, o := range opts {
		o(a.hosts)
	}
	return a
}

// hostRefused is the service's message of a Host or Origin off the
// allow-list (handler.go).
const hostRefused = "forbidden: the Host or Origin of this request is not an allowed host of this gateway's MCP endpoint"

// MCPHeaders decides an MCP request from its method, path and headers (its
// body is not read). It returns the refusal to answer with (status != 0:
// the status, headers and body of the reply), or needBody: the headers do
// not decide and MCPBody should see the body. Neither: the request goes on.
//
// A 2026-07-28 client names the method in Mcp-Method and the tool, prompt
// or resource in Mcp-Name: a call its grants cover goes on without its
// body being read. One they do not cover needs the body all the same, only
// for the request's id, so that the refusal is the JSON-RPC response to
// that request, as the service sends it. A 2025-11-25 client sends no
// Mcp-Method: every POST needs its body.
func (a *EdgeAuthorizer) MCPHeaders(ctx context.Context, r *http.Request) (status int, header http.Header, body []byte, needBody bool) {
	rc, status, header, body := a.caller(ctx, r)
	if status != 0 || rc == nil || r.Method != http.MethodPost {
		return status, header, body, false
	}
	method := r.Header.Get(HeaderMethod)
	if method == "" {
		return 0, nil, nil, true
	}
	if !grantChecked(method) {
		return 0, nil, nil, false
	}
	name, ok := decodeHeaderName(r.Header.Get(HeaderName))
	if !ok || name == "" || method == "completion/complete" { // the reference is in the body only
		return 0, nil, nil, true
	}
	_, err := rc.authorize(method, name, "")
	return 0, nil, nil, notGrantedError(err) != nil
}

// MCPBody decides an MCP request from its JSON-RPC body, after MCPHeaders
// asked for it: the refusal to answer with (status != 0), else the request
// goes on. The refusal of a call the grants do not cover is the JSON-RPC
// error response (HTTP 200) the service sends, with the request's id.
func (a *EdgeAuthorizer) MCPBody(ctx context.Context, r *http.Request, body []byte) (status int, header http.Header, reply []byte) {
	start := a.now()
	rc, status, header, reply := a.caller(ctx, r)
	if status != 0 || rc == nil {
		return status, header, reply
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return 0, nil, nil // a batch (older versions) or not JSON-RPC: the service answers
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return 0, nil, nil
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || !grantChecked(req.Method) {
		return 0, nil, nil
	}
	name, ref := callName(req.Method, req.Params)
	ev, err := rc.authorize(req.Method, name, ref)
	wire := notGrantedError(err)
	if wire == nil {
		return 0, nil, nil
	}
	out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: wire})
	if err != nil {
		return 0, nil, nil
	}
	ev.ProtocolVersion, ev.Caller, ev.Err, ev.Duration = rc.version, rc.caller, wire, a.now().Sub(start)
	a.obs.Observe(ctx, ev)
	return http.StatusOK, jsonHeader(), out
}

// notGrantedError is err when it is the refusal of a name the grants do not
// cover (-32041), else nil.
func notGrantedError(err error) *jsonrpc.Error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) && wire.Code == CodeToolNotGranted {
		return wire
	}
	return nil
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

// caller is callerOf for the edge: nil for a path that is not the MCP
// gateway's (let it go on).
func (a *EdgeAuthorizer) caller(ctx context.Context, r *http.Request) (*reqCtx, int, http.Header, []byte) {
	rest, ok := strings.CutPrefix(r.URL.Path, Path)
	if !ok || (rest != "" && rest[0] != '/') {
		return nil, 0, nil, nil
	}
	return callerOf(ctx, r, rest, a.hosts, a.cat)
}

// callerOf checks r's Host and Origin against hosts' allow-list (before the
// key), authenticates it and finds the servers it may reach (rest: the path
// after Path): the request's caller and servers, else the 403, 401 or 404
// refusal (status, headers, errorBody). The service and the edge answer
// with it alike.
func callerOf(ctx context.Context, r *http.Request, rest string, hosts *Handler, cat Catalog) (*reqCtx, int, http.Header, []byte) {
	if !hosts.hostAllowed(r) {
		return nil, http.StatusForbidden, jsonHeader(), errorBody(CodeHostNotAllowed, hostRefused)
	}
	c, err := cat.Authenticate(ctx, bearer(r))
	if err != nil {
		challenge, msg := unauthorized(r)
		h := jsonHeader()
		h.Set("WWW-Authenticate", challenge)
		return nil, http.StatusUnauthorized, h, errorBody(CodeUnauthorized, msg)
	}
	rc := &reqCtx{caller: c, version: r.Header.Get(HeaderProtocol)}
	all := cat.Servers()
	if id := strings.Trim(rest, "/"); id != "" {
		if rc.single = findServer(all, id); rc.single == nil {
			return nil, http.StatusNotFound, jsonHeader(), errorBody(-32600, "unknown MCP server "+strconvQuote(id))
		}
		rc.servers = []*Server{rc.single}
	} else {
		rc.servers = all
	}
	return rc, 0, nil, nil
}

// authorize is the grant check of a method the service checks (tools/call,
// prompts/get, resources/read: name; completion/complete: ref, its
// reference's type, and name), with the service's own refusal (-32041, by
// its resolveName and notGranted), and the event the service would report for
// it. A name that does not resolve is another error: the service answers it.
// The handler may call it for its own checks.
func (rc *reqCtx) authorize(method, name, ref string) (*Event, error) {
	ev := &Event{Method: method}
	var kind grantKind
	switch {
	case method == "tools/call" && name != "":
		kind = grantTool
	case method == "prompts/get" && name != "", method == "completion/complete" && ref == "ref/prompt":
		kind = grantPrompt
	case method == "resources/read" && name != "", method == "completion/complete" && ref == "ref/resource":
		kind = grantResource
	default:
		return ev, errors.New("mcp: nothing to check")
	}
	srv, upstream, err := rc.checkGrant(kind, name)
	if srv != nil {
		ev.Server = srv.ID
		if kind == grantTool {
			ev.Tool = upstream
		}
	}
	return ev, err
}

// grantKind is what a grant check is of.
type grantKind uint8

const (
	grantTool     grantKind = iota // a tool's name
	grantPrompt                    // a prompt's name
	grantResource                  // a resource's URI (or URI template)
)

// checkGrant resolves name (kind) to its server and the upstream's own name
// or URI (resolveName, resourceServer), then refuses it (-32041, notGranted)
// when the caller's grants do not cover it. srv is set whenever name
// resolved, refused or not: the service reports the server either way. It
// is the one grant check of the service's handlers and of the edge
// (authorize).
func (rc *reqCtx) checkGrant(kind grantKind, name string) (srv *Server, upstream string, err error) {
	var grant, what string
	switch kind {
	case grantTool:
		srv, upstream, err = resolveName(rc, name, "tool")
		grant, what = upstream, "tool "+strconvQuote(name)
	case grantPrompt:
		srv, upstream, err = resolveName(rc, name, "prompt")
		grant, what = promptPrefix+upstream, "prompt "+strconvQuote(name)
	default:
		srv, upstream, err = resourceServer(rc, name)
		grant, what = resourceGrant, "resource "+strconvQuote(name)
	}
	if err != nil {
		return nil, "", err
	}
	return srv, upstream, notGranted(rc.caller, srv.ID, grant, what)
}

// grantChecked reports whether the service checks method against the
// caller's grants.
func grantChecked(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete":
		return true
	}
	return false
}

// callName is the name a request's params give the grant check: the tool or
// prompt name, the resource URI, or for completion/complete its reference's
// name or URI and type (ref).
func callName(method string, params json.RawMessage) (name, ref string) {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
		Ref  *struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", ""
	}
	switch method {
	case "resources/read":
		return p.URI, ""
	case "completion/complete":
		if p.Ref == nil {
			return "", ""
		}
		if p.Ref.Type == "ref/resource" {
			return p.Ref.URI, p.Ref.Type
		}
		return p.Ref.Name, p.Ref.Type
	}
	return p.Name, ""
}

// decodeHeaderName reads Mcp-Name: values that are not plain ASCII travel
// as =?base64?…?= (SEP-2243).
func decodeHeaderName(v string) (string, bool) {
	enc, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	if enc, ok = strings.CutSuffix(enc, "?="); !ok {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	return string(b), err == nil
}

// errorBody is the body writeError sends: a JSON-RPC error with id null.
func errorBody(code int64, msg string) []byte {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg},
	})
	return b.Bytes()
}
