package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// What an upstream sends during a tools/call reaches the agent: a
// 2025-11-25 upstream may answer the call's POST with an SSE stream that
// carries notifications (notifications/message, notifications/progress) and
// requests of its own (sampling/createMessage, elicitation/create, roots/list)
// before the result. For a 2025-11-25 agent that reads SSE, the gateway
// relays them, in order, on an SSE reply of its own, and the result last;
// the call is admitted before and settled once, on that result.
//
// This is the one place the gateway frames JSON-RPC itself (with the SDK's
// jsonrpc encoder): the official Go SDK hands a client session's
// notifications and requests to per-client handlers that do not say which
// call they belong to (calls of many agents share a client session), and its
// stateless server cannot send requests to the agent (it has no way to get
// the answer back). So the call is POSTed upstream in the client session the
// SDK opened (its session id and protocol version, the server's headers),
// its reply read here, and the agent's reply written here.
//
// A request of the upstream goes to the agent under an id of the gateway's
// (relayIDPrefix, sealed: the key, server, upstream session and the
// upstream's own id): the agent's answer, a later POST, may reach any
// replica, which opens the id and POSTs the answer to that upstream session.

// relayFunc hands one message of the upstream to the agent.
type relayFunc func(jsonrpc.Message) error

// relayIDPrefix marks the ids of upstream requests relayed to an agent.
const relayIDPrefix = "tgr1."

// relayedID is what a relayed request's id carries.
type relayedID struct {
	KeyID   string          `json:"k"`
	Server  string          `json:"s"`
	Session string          `json:"u,omitempty"` // the upstream's Mcp-Session-Id
	Version string          `json:"v"`
	ID      json.RawMessage `json:"i"` // the upstream's own id
}

// acceptsSSE reports whether r's Accept allows text/event-stream.
func acceptsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && (mt == "text/event-stream" || mt == "*/*" || mt == "text/*") {
				return true
			}
		}
	}
	return false
}

// serveCallStream answers a 2025-11-25 agent's tools/call: as the SDK's
// handler would, except that what the upstream sends before its result is
// relayed. The reply is JSON when the upstream sent nothing but the result,
// SSE from the first relayed message on.
func (h *Handler) serveCallStream(w http.ResponseWriter, r *http.Request, rc *reqCtx, req *jsonrpc.Request) {
	ctx := r.Context()
	start := h.now()
	ev := &Event{Method: "tools/call", ProtocolVersion: rc.version, Caller: rc.caller}
	if rc.single != nil {
		ev.Server = rc.single.ID
	}
	sw := &sseWriter{w: w}
	var res sdk.Result
	var params sdk.CallToolParamsRaw
	err := json.Unmarshal(req.Params, &params)
	if err != nil {
		err = rpcError(jsonrpc.CodeInvalidParams, "tools/call: invalid params: "+err.Error(), nil)
	} else {
		res, err = h.call(ctx, rc, &params, ev, func(m jsonrpc.Message) error {
			return sw.write(h.relayOut(rc, m))
		})
	}
	ev.Err, ev.Duration = err, h.now().Sub(start)
	h.obs.Observe(ctx, ev)

	var out *jsonrpc.Response
	if err != nil {
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) {
			wire = rpcError(jsonrpc.CodeInternalError, err.Error(), nil)
		}
		out = &jsonrpc.Response{ID: req.ID, Error: wire}
	} else {
		b, merr := json.Marshal(res)
		if merr != nil {
			out = &jsonrpc.Response{ID: req.ID, Error: rpcError(jsonrpc.CodeInternalError, "cannot encode the result", nil)}
		} else {
			out = &jsonrpc.Response{ID: req.ID, Result: b}
		}
	}
	if sw.started {
		_ = sw.write(out)
		return
	}
	b, _ := jsonrpc.EncodeMessage(out)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// relayOut is what the agent gets of an upstream message: a request's id is
// replaced by a relayed id (nil when it cannot be sealed: dropped).
func (h *Handler) relayOut(rc *reqCtx, m jsonrpc.Message) jsonrpc.Message {
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return m
	}
	route, _ := req.Extra.(*relayedID)
	if route == nil {
		return nil
	}
	route.KeyID = rc.caller.KeyID
	id, err := json.Marshal(req.ID.Raw())
	if err != nil {
		return nil
	}
	route.ID = id
	b, err := json.Marshal(route)
	if err != nil {
		return nil
	}
	out := *req
	out.ID, _ = jsonrpc.MakeID(relayIDPrefix + base64.RawURLEncoding.EncodeToString(h.sealer.Seal(b)))
	out.Extra = nil
	return &out
}

// openRelayedID opens the id of an agent's answer to a relayed request.
func (h *Handler) openRelayedID(id jsonrpc.ID, keyID string) (*relayedID, bool) {
	s, ok := id.Raw().(string)
	if !ok || !strings.HasPrefix(s, relayIDPrefix) {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(s[len(relayIDPrefix):])
	if err != nil {
		return nil, false
	}
	plain, err := h.sealer.Open(raw)
	if err != nil {
		return nil, false
	}
	var route relayedID
	if json.Unmarshal(plain, &route) != nil || route.KeyID != keyID {
		return nil, false
	}
	return &route, true
}

// relayedResponse reports whether body is an agent's answer to a relayed
// request (a JSON-RPC response whose id is a relayed id).
func relayedResponse(body []byte) (*jsonrpc.Response, bool) {
	if !bytes.Contains(body, []byte(relayIDPrefix)) {
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil, false
	}
	res, ok := msg.(*jsonrpc.Response)
	return res, ok
}

// serveRelayedResponse hands an agent's answer to a relayed request to the
// upstream session that asked (on whichever replica the call runs): 202 when
// the upstream took it.
func (h *Handler) serveRelayedResponse(w http.ResponseWriter, r *http.Request, rc *reqCtx, res *jsonrpc.Response) {
	route, ok := h.openRelayedID(res.ID, rc.caller.KeyID)
	if !ok {
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "unknown response id: not a request this gateway relayed for this key")
		return
	}
	srv := findServer(rc.servers, route.Server)
	if srv == nil {
		srv = findServer(h.cat.Servers(), route.Server)
	}
	if srv == nil || !rc.caller.MayUse(srv.ID) {
		writeError(w, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "unknown MCP server "+strconvQuote(route.Server))
		return
	}
	var raw any
	if err := json.Unmarshal(route.ID, &raw); err != nil {
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "bad relayed id")
		return
	}
	id, err := jsonrpc.MakeID(raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "bad relayed id")
		return
	}
	out := *res
	out.ID = id
	body, err := jsonrpc.EncodeMessage(&out)
	if err != nil {
		writeError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "cannot encode the response")
		return
	}
	up, err := h.up.post(r.Context(), srv, route.Session, route.Version, body)
	if err != nil {
		writeError(w, http.StatusBadGateway, CodeUpstream, fmt.Sprintf("MCP server %s: %v", srv.ID, err))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(up.Body, 1<<20))
	_ = up.Body.Close()
	if up.StatusCode/100 != 2 {
		writeError(w, http.StatusBadGateway, CodeUpstream, fmt.Sprintf("MCP server %s answered HTTP %d", srv.ID, up.StatusCode))
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// post POSTs one JSON-RPC message to srv in the upstream session id
// (none: "") of protocol version.
func (u *upstreams) post(ctx context.Context, srv *Server, session, version string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set(HeaderProtocol, version)
	}
	if session != "" {
		req.Header.Set(HeaderSessionID, session)
	}
	return headerTransport{base: u.base, headers: srv.Headers}.RoundTrip(req)
}

// callStream calls a tool in client session cs by POSTing the call itself:
// messages the upstream sends before the result go to relay (a request with
// Extra set to the relayedID that routes the agent's answer back); the
// result is returned. A session the upstream no longer knows is
// sdk.ErrSessionMissing (upstreams.do starts a new one), an error the
// upstream answered is a *jsonrpc.Error.
func (u *upstreams) callStream(ctx context.Context, srv *Server, cs *sdk.ClientSession, params *sdk.CallToolParamsRaw, relay relayFunc) (*sdk.CallToolResult, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id, _ := jsonrpc.MakeID(newRequestID())
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: "tools/call", Params: raw})
	if err != nil {
		return nil, err
	}
	version := cs.InitializeResult().ProtocolVersion
	res, err := u.post(ctx, srv, cs.ID(), version, body)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusNotFound && cs.ID() != "":
		return nil, sdk.ErrSessionMissing
	case res.StatusCode/100 != 2:
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return nil, fmt.Errorf("HTTP %d: %s", res.StatusCode, bytes.TrimSpace(b))
	}
	route := relayedID{Server: srv.ID, Session: cs.ID(), Version: version}
	var final *jsonrpc.Response
	handle := func(data []byte) error {
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return fmt.Errorf("bad message from the upstream: %w", err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if m.ID == id {
				final = m
			}
			return nil
		case *jsonrpc.Request:
			if m.IsCall() {
				r := route
				m.Extra = &r
			}
			return relay(m)
		}
		return nil
	}
	ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		st := &sseState{}
		each := func(data []byte) error {
			if err := handle(data); err != nil {
				return err
			}
			if final != nil {
				return io.EOF
			}
			return nil
		}
		err = st.read(res.Body, each)
		// A stream that ends before the result is resumed from its last
		// event (2025-11-25 transports, "Resumability and Redelivery"): a
		// server may close it on purpose and replay from Last-Event-ID.
		for tries := 0; err == nil && final == nil && st.lastID != "" && tries < maxResumes; tries++ {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(st.retry):
			}
			var more *http.Response
			more, err = u.get(ctx, srv, cs.ID(), version, st.lastID)
			if err != nil {
				break
			}
			err = st.read(more.Body, each)
			_ = more.Body.Close()
		}
	} else {
		var b []byte
		b, err = io.ReadAll(io.LimitReader(res.Body, MaxBodyBytes))
		if err == nil {
			err = handle(b)
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if final == nil {
		return nil, errors.New("the reply ended without the call's result")
	}
	if final.Error != nil {
		var wire *jsonrpc.Error
		if errors.As(final.Error, &wire) {
			return nil, wire
		}
		return nil, final.Error
	}
	out := new(sdk.CallToolResult)
	if err := json.Unmarshal(final.Result, out); err != nil {
		return nil, fmt.Errorf("bad tools/call result: %w", err)
	}
	return out, nil
}

// maxResumes bounds the resumptions of one call's stream.
const maxResumes = 10

// get opens a GET stream of srv in upstream session (none: ""): the rest of
// a stream after event lastID, or without lastID the session's server
// stream (serverstream.go).
func (u *upstreams) get(ctx context.Context, srv *Server, session, version, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if version != "" {
		req.Header.Set(HeaderProtocol, version)
	}
	if session != "" {
		req.Header.Set(HeaderSessionID, session)
	}
	res, err := headerTransport{base: u.base, headers: srv.Headers}.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
		_ = res.Body.Close()
		return nil, fmt.Errorf("GET stream: HTTP %d", res.StatusCode)
	}
	return res, nil
}

// sseState is what resuming an SSE stream takes: its last event id and the
// delay the server asked for.
type sseState struct {
	lastID string
	retry  time.Duration
}

// read calls f with the data of each event of an SSE stream (the events of
// the Streamable HTTP transport are "message" events, or unnamed); it stops
// at the first error of f, returned.
func (st *sseState) read(r io.Reader, f func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxBodyBytes)
	var data bytes.Buffer
	event := ""
	dispatch := func() error {
		defer func() { data.Reset(); event = "" }()
		b := bytes.TrimSpace(data.Bytes())
		if len(b) == 0 || (event != "" && event != "message") {
			return nil // a priming event (an id to resume from, no message) among them
		}
		return f(b)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if err := dispatch(); err != nil {
				return err
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			data.Write(value)
			data.WriteByte('\n')
		case "event":
			event = string(value)
		case "id":
			st.lastID = string(value)
		case "retry":
			if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
				st.retry = min(time.Duration(ms)*time.Millisecond, 5*time.Second)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return dispatch()
}

// sseWriter writes JSON-RPC messages to the agent as SSE events, the
// response's headers with the first.
type sseWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *sseWriter) write(m jsonrpc.Message) error {
	if m == nil {
		return nil
	}
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	if !s.started {
		s.begin()
	}
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", b); err != nil {
		return err
	}
	return http.NewResponseController(s.w).Flush()
}

// start sends the response's headers now.
func (s *sseWriter) start() error {
	if !s.started {
		s.begin()
	}
	return http.NewResponseController(s.w).Flush()
}

func (s *sseWriter) begin() {
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}
