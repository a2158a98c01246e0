package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The server stream (GET) of a 2025-11-25 agent: what its upstream sessions
// send outside any call — notifications/resources/updated of its
// subscriptions, list-changed notifications, log messages, and requests
// (roots/list) — relayed as they come. The replica that serves the GET opens
// the GET stream of each upstream session the agent's token carries and
// merges them; requests go out under sealed ids, as during a call
// (stream.go), so their answers reach the upstream from any replica. An
// agent with no upstream session that offers a stream gets 405, as before.

// serveServerStream answers a 2025-11-25 agent's GET.
func (h *Handler) serveServerStream(w http.ResponseWriter, r *http.Request, rc *reqCtx) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type upMsg struct {
		srv *Server
		msg jsonrpc.Message
		up  upSession
	}
	msgs := make(chan upMsg)
	var wg sync.WaitGroup
	opened := 0
	for _, srv := range usable(rc.caller, rc.servers) {
		up, ok := rc.token.Up[srv.ID]
		if !ok {
			continue
		}
		res, err := h.up.get(ctx, srv, up.ID, up.Version, "")
		if err != nil {
			h.log.Debug("mcp upstream server stream not opened", "server", srv.ID, "err", err)
			continue
		}
		opened++
		wg.Go(func() {
			defer res.Body.Close()
			st := &sseState{}
			_ = st.read(res.Body, func(data []byte) error {
				msg, err := jsonrpc.DecodeMessage(data)
				if err != nil {
					return nil // not a message of ours to relay
				}
				select {
				case msgs <- upMsg{srv, msg, up}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		})
	}
	if opened == 0 {
		writeError(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, "no server stream: no upstream session of this session offers one")
		return
	}
	go func() { wg.Wait(); close(msgs) }()
	sw := &sseWriter{w: w}
	if sw.start() != nil { // headers now: the agent knows the stream is open
		return
	}
	for m := range msgs {
		out := m.msg
		if req, ok := out.(*jsonrpc.Request); ok {
			if req.IsCall() {
				req.Extra = &relayedID{Server: m.srv.ID, Session: m.up.ID, Version: m.up.Version}
			} else if rc.single == nil {
				out = wrapNotification(m.srv.ID, req)
			}
		}
		if err := sw.write(h.relayOut(rc, out)); err != nil {
			return
		}
	}
}

// wrapNotification renames what a notification of server names on /mcp:
// the URI of notifications/resources/updated.
func wrapNotification(server string, n *jsonrpc.Request) jsonrpc.Message {
	if n.Method != "notifications/resources/updated" {
		return n
	}
	var p map[string]any
	if json.Unmarshal(n.Params, &p) != nil {
		return n
	}
	uri, _ := p["uri"].(string)
	if uri == "" {
		return n
	}
	p["uri"] = wrapURI(server, uri)
	b, err := json.Marshal(p)
	if err != nil {
		return n
	}
	out := *n
	out.Params = b
	return &out
}
