package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectTimeout bounds connecting to an upstream server (its discover or
// initialize handshake).
const connectTimeout = 15 * time.Second

// maxSessionConns bounds the upstream client sessions a replica keeps for
// downstream 2025-11-25 sessions; the least recently used go first (their
// upstream sessions live on: the next request resumes them from the token).
const maxSessionConns = 1024

// upstreams keeps the SDK client sessions of one replica: connected on first
// use, negotiated by the SDK (2026-07-28 with server/discover when the server
// speaks it, else the 2025-11-25 initialize handshake), reconnected when the
// server's configuration changes or the session breaks.
//
// There are two kinds. A shared one per server serves 2026-07-28 agents
// (which have no session) and servers that keep no session. A downstream
// 2025-11-25 session has its own upstream session with each server that keeps
// sessions: opened when the agent initializes, its id carried in the agent's
// sealed session token (token.go), and resumed from the token by whichever
// replica serves a later request (resumeTransport), so that the upstream's
// session state follows the agent across replicas and restarts.
type upstreams struct {
	client *sdk.Client
	base   http.RoundTripper
	log    *slog.Logger

	mu    sync.Mutex
	conns map[connKey]*upstreamConn
	tick  int64 // last-use clock of conns
}

// connKey names a client session: a downstream session id ("" for the
// shared one) and a server.
type connKey struct{ session, server string }

type upstreamConn struct {
	srv Server // the configuration it was made with
	// resume: connect by resuming this upstream session, without a handshake.
	resume *upSession
	// agent: the capabilities a downstream session's agent declared
	// (sampling, elicitation, roots), declared upstream in its own sessions'
	// handshakes so that the upstream asks what the agent can answer
	// (stream.go relays those requests); nil: none.
	agent *sdk.ClientCapabilities
	// carried: the session's id is in a token, so other replicas may be using
	// it; closing it here does not end it upstream (no DELETE).
	carried atomic.Bool
	used    int64 // u.tick at last use, under u.mu

	once  sync.Once
	ready atomic.Bool // once has run: cs or err is set
	cs    *sdk.ClientSession
	err   error
}

func newConn(srv *Server, resume *upSession) *upstreamConn {
	c := &upstreamConn{srv: *srv, resume: resume}
	c.carried.Store(resume != nil)
	return c
}

func newUpstreams(base http.RoundTripper, log *slog.Logger) *upstreams {
	return &upstreams{
		client: sdk.NewClient(&sdk.Implementation{Name: "tollgate", Version: "1"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}),
		base:   base,
		log:    log,
		conns:  map[connKey]*upstreamConn{},
	}
}

// binding is which client session serves a request to srv: the downstream
// session's own when its token carries one for srv, else the shared one.
func binding(srv *Server, tok *sessionToken) (connKey, *upSession) {
	if tok != nil {
		if up, ok := tok.Up[srv.ID]; ok {
			return connKey{tok.ID, srv.ID}, &up
		}
	}
	return connKey{"", srv.ID}, nil
}

// agentCaps is the agent's capabilities for the conn at k: its own
// sessions' (k.session set) declare them, the shared ones none.
func agentCaps(k connKey, tok *sessionToken) *sdk.ClientCapabilities {
	if k.session == "" || tok == nil {
		return nil
	}
	return tok.Agent
}

// conn returns the conn at k, making one (not yet connected) when there is
// none or the server's configuration changed.
func (u *upstreams) conn(k connKey, srv *Server, resume *upSession) *upstreamConn {
	return u.connWith(k, srv, resume, nil)
}

// connWith is conn for an agent that declared agent capabilities.
func (u *upstreams) connWith(k connKey, srv *Server, resume *upSession, agent *sdk.ClientCapabilities) *upstreamConn {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tick++
	c := u.conns[k]
	if c != nil && !sameServer(&c.srv, srv) {
		go closeQuietly(c)
		c = nil
	}
	if c != nil {
		c.used = u.tick
		return c
	}
	c = newConn(srv, resume)
	c.agent = agent
	c.used = u.tick // before evictLocked: the new conn is the most recently used
	u.conns[k] = c
	if k.session != "" {
		u.evictLocked()
	}
	return c
}

// evictLocked closes the least recently used session conn when there are
// more than maxSessionConns (conn adds one at a time).
func (u *upstreams) evictLocked() {
	n := 0
	var oldest connKey
	var c *upstreamConn
	for k, v := range u.conns {
		if k.session == "" {
			continue
		}
		n++
		if c == nil || v.used < c.used {
			oldest, c = k, v
		}
	}
	if n > maxSessionConns {
		delete(u.conns, oldest)
		go closeQuietly(c)
	}
}

// connect connects c once; every caller waits for the same outcome.
func (u *upstreams) connect(ctx context.Context, c *upstreamConn) (*sdk.ClientSession, error) {
	c.once.Do(func() {
		defer c.ready.Store(true)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connectTimeout)
		defer cancel()
		var rt http.RoundTripper = headerTransport{base: u.base, headers: maps.Clone(c.srv.Headers)}
		rt = &resumeTransport{base: rt, server: c.srv.ID, resume: c.resume, carried: &c.carried}
		t := &sdk.StreamableClientTransport{
			Endpoint:             c.srv.URL,
			HTTPClient:           &http.Client{Transport: rt},
			DisableStandaloneSSE: true, // list-changed notifications are not relayed
			MaxRetries:           -1,
		}
		var opts *sdk.ClientSessionOptions
		if c.resume != nil {
			opts = &sdk.ClientSessionOptions{ProtocolVersion: c.resume.Version}
		}
		client := u.client
		if c.agent != nil {
			client = sdk.NewClient(&sdk.Implementation{Name: "tollgate", Version: "1"}, &sdk.ClientOptions{Capabilities: c.agent})
		}
		c.cs, c.err = client.Connect(cctx, t, opts)
		if c.err == nil {
			u.log.Debug("mcp upstream connected", "server", c.srv.ID,
				"protocol", c.cs.InitializeResult().ProtocolVersion, "session", c.cs.ID() != "", "resumed", c.resume != nil)
		}
	})
	if c.err != nil {
		return nil, fmt.Errorf("connect to MCP server %s: %w", c.srv.ID, c.err)
	}
	return c.cs, nil
}

// session returns the client session that serves tok's requests to srv,
// connecting when needed.
func (u *upstreams) session(ctx context.Context, srv *Server, tok *sessionToken) (*sdk.ClientSession, error) {
	k, resume := binding(srv, tok)
	c := u.connWith(k, srv, resume, agentCaps(k, tok))
	cs, err := u.connect(ctx, c)
	if err != nil {
		u.drop(k, c, false)
	}
	return cs, err
}

// do runs f on the client session that serves tok's requests to srv; when
// that session is gone (the upstream restarted or dropped it) it reconnects
// once and runs f again: a resumed session is replaced by a new one (a new
// initialize handshake with the upstream) for the rest of this replica's
// part of the downstream session. f must not have had an effect when it
// fails with a broken session.
func (u *upstreams) do(ctx context.Context, srv *Server, tok *sessionToken, f func(context.Context, *sdk.ClientSession) error) error {
	ctx, cancel := detach(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		cs, err := u.session(ctx, srv, tok)
		if err != nil {
			return err
		}
		err = f(ctx, cs)
		if err == nil || attempt > 0 || !brokenSession(err) {
			return err
		}
		k, _ := binding(srv, tok)
		u.mu.Lock()
		if c := u.conns[k]; c != nil && c.cs == cs {
			if k.session != "" {
				// Not resumed again on this replica: a fresh session of its own.
				fresh := newConn(srv, nil)
				fresh.agent = agentCaps(k, tok)
				fresh.used = c.used
				u.conns[k] = fresh
			} else {
				delete(u.conns, k)
			}
			go closeQuietly(c)
		}
		u.mu.Unlock()
	}
}

// open starts the upstream sessions of a new downstream session: one with
// each of servers, in parallel. It returns those that keep a session (to be
// carried in the token); those that keep none, or that fail, are served by
// the shared client sessions later.
func (u *upstreams) open(ctx context.Context, session string, servers []*Server, agent *sdk.ClientCapabilities) map[string]upSession {
	var mu sync.Mutex
	out := map[string]upSession{}
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(func() {
			if u.stateless(srv) {
				return
			}
			k := connKey{session, srv.ID}
			c := u.connWith(k, srv, nil, agent)
			cs, err := u.connect(ctx, c)
			if err != nil {
				u.drop(k, c, false)
				u.log.Warn("mcp upstream session not opened", "server", srv.ID, "err", err)
				return
			}
			if cs.ID() == "" {
				u.drop(k, c, true)
				return
			}
			ir := cs.InitializeResult()
			c.carried.Store(true)
			mu.Lock()
			out[srv.ID] = upSession{ID: cs.ID(), Version: ir.ProtocolVersion, Caps: capsOf(ir.Capabilities)}
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// stateless reports whether srv's shared client session is known to have no
// upstream session (a 2026-07-28 server or a stateless 2025 one): a
// downstream session needs none of its own there.
func (u *upstreams) stateless(srv *Server) bool {
	u.mu.Lock()
	c := u.conns[connKey{"", srv.ID}]
	u.mu.Unlock()
	if c == nil || !sameServer(&c.srv, srv) || !c.ready.Load() {
		return false
	}
	return c.err == nil && c.cs.ID() == ""
}

// end ends a downstream session: its upstream sessions are ended upstream
// (DELETE, best effort) and forgotten here.
func (u *upstreams) end(ctx context.Context, tok *sessionToken, servers []*Server) {
	for _, srv := range servers {
		up, ok := tok.Up[srv.ID]
		if !ok {
			continue
		}
		k := connKey{tok.ID, srv.ID}
		u.mu.Lock()
		c := u.conns[k]
		delete(u.conns, k)
		u.mu.Unlock()
		if c != nil {
			go closeQuietly(c)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, srv.URL, nil)
		if err != nil {
			continue
		}
		req.Header.Set(HeaderSessionID, up.ID)
		req.Header.Set(HeaderProtocol, up.Version)
		res, err := (headerTransport{base: u.base, headers: srv.Headers}).RoundTrip(req)
		if err != nil {
			u.log.Debug("mcp upstream session not ended", "server", srv.ID, "err", err)
			continue
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
}

func brokenSession(err error) bool {
	return errors.Is(err, sdk.ErrSessionMissing) || errors.Is(err, sdk.ErrConnectionClosed)
}

// drop forgets the conn at k (if it is still c), closing it when asked.
func (u *upstreams) drop(k connKey, c *upstreamConn, closeIt bool) {
	u.mu.Lock()
	if u.conns[k] == c {
		delete(u.conns, k)
	}
	u.mu.Unlock()
	if closeIt {
		go closeQuietly(c)
	}
}

// close closes every client session; the upstream sessions of the shared
// ones and of those not carried in a token end (DELETE), the carried ones
// live on for other replicas.
func (u *upstreams) close() {
	u.mu.Lock()
	conns := u.conns
	u.conns = map[connKey]*upstreamConn{}
	u.mu.Unlock()
	for _, c := range conns {
		closeQuietly(c)
	}
}

func closeQuietly(c *upstreamConn) {
	c.once.Do(func() {}) // a connect in progress finishes first
	if c.cs != nil {
		_ = c.cs.Close()
	}
}

func sameServer(a, b *Server) bool {
	return a.URL == b.URL && maps.Equal(a.Headers, b.Headers)
}

// headerTransport adds a server's configured headers (its credential among
// them) to every upstream request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// resumeTransport lets the SDK's client take over an upstream session that
// another client session (maybe on another replica) opened: the SDK has no
// API for it, its Connect always starts with a handshake. So the handshake
// of a resumed session is answered here, without the upstream: initialize
// gets the result the token remembers (protocol version, capabilities) with
// the upstream session id in Mcp-Session-Id, and notifications/initialized
// is accepted (202); every later request goes to the upstream in that
// session. A carried session's DELETE (the client session closing on this
// replica) is answered here too: other replicas may still use the session;
// it ends when the agent ends its own (upstreams.end).
type resumeTransport struct {
	base    http.RoundTripper
	server  string
	resume  *upSession
	carried *atomic.Bool
	done    atomic.Bool // the handshake is over
}

func (t *resumeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete && t.carried.Load() {
		return localResponse(r, http.StatusNoContent, nil, nil), nil
	}
	if t.resume == nil || t.done.Load() || r.Method != http.MethodPost || r.Body == nil {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if req, ok := msg.(*jsonrpc.Request); err == nil && ok {
		switch req.Method {
		case "initialize":
			res, err := json.Marshal(&sdk.InitializeResult{
				ProtocolVersion: t.resume.Version,
				Capabilities:    t.resume.Caps.capabilities(),
				ServerInfo:      &sdk.Implementation{Name: t.server, Version: "resumed"},
			})
			if err != nil {
				return nil, err
			}
			out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: res})
			if err != nil {
				return nil, err
			}
			h := http.Header{"Content-Type": {"application/json"}, HeaderSessionID: {t.resume.ID}}
			return localResponse(r, http.StatusOK, h, out), nil
		case "notifications/initialized":
			t.done.Store(true)
			return localResponse(r, http.StatusAccepted, nil, nil), nil
		}
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return t.base.RoundTrip(r)
}

// localResponse is an HTTP response made here, not by the upstream.
func localResponse(r *http.Request, status int, h http.Header, body []byte) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, strings.ToLower(http.StatusText(status))), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}
}

// detach is a context cancelled with ctx but without its values: the
// downstream request's context carries the SDK server's values (its
// negotiated protocol version among them), which the SDK's client would
// take for the upstream's.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	return d, func() { stop(); cancel() }
}
