package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectTimeout bounds connecting to an upstream server (its discover or
// initialize handshake).
const connectTimeout = 15 * time.Second

// upstreams keeps one SDK client session per upstream server: connected on
// first use, negotiated by the SDK (2026-07-28 with server/discover when the
// server speaks it, else the 2025-11-25 initialize handshake), reconnected
// when the server's configuration changes or the session breaks.
type upstreams struct {
	client *sdk.Client
	base   http.RoundTripper
	log    *slog.Logger

	mu    sync.Mutex
	conns map[string]*upstreamConn
}

type upstreamConn struct {
	srv  Server // the configuration it was made with
	once sync.Once
	cs   *sdk.ClientSession
	err  error
}

func newUpstreams(base http.RoundTripper, log *slog.Logger) *upstreams {
	return &upstreams{
		client: sdk.NewClient(&sdk.Implementation{Name: "tollgate", Version: "1"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}),
		base:   base,
		log:    log,
		conns:  map[string]*upstreamConn{},
	}
}

// session returns the client session of srv, connecting when needed.
func (u *upstreams) session(ctx context.Context, srv *Server) (*sdk.ClientSession, error) {
	u.mu.Lock()
	c := u.conns[srv.ID]
	if c != nil && !sameServer(&c.srv, srv) {
		go closeQuietly(c)
		c = nil
	}
	if c == nil {
		c = &upstreamConn{srv: *srv}
		u.conns[srv.ID] = c
	}
	u.mu.Unlock()
	c.once.Do(func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connectTimeout)
		defer cancel()
		t := &sdk.StreamableClientTransport{
			Endpoint:             srv.URL,
			HTTPClient:           &http.Client{Transport: headerTransport{base: u.base, headers: maps.Clone(srv.Headers)}},
			DisableStandaloneSSE: true, // list-changed notifications are not relayed
			MaxRetries:           -1,
		}
		c.cs, c.err = u.client.Connect(cctx, t, nil)
		if c.err == nil {
			u.log.Debug("mcp upstream connected", "server", srv.ID,
				"protocol", c.cs.InitializeResult().ProtocolVersion, "session", c.cs.ID() != "")
		}
	})
	if c.err != nil {
		u.forget(srv.ID, c)
		return nil, fmt.Errorf("connect to MCP server %s: %w", srv.ID, c.err)
	}
	return c.cs, nil
}

// do runs f on srv's session; when the session is gone (the upstream
// restarted or dropped it) it reconnects once and runs f again. f must not
// have had an effect when it fails with a broken session.
func (u *upstreams) do(ctx context.Context, srv *Server, f func(context.Context, *sdk.ClientSession) error) error {
	ctx, cancel := detach(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		cs, err := u.session(ctx, srv)
		if err != nil {
			return err
		}
		err = f(ctx, cs)
		if err == nil || attempt > 0 || !brokenSession(err) {
			return err
		}
		u.mu.Lock()
		if c := u.conns[srv.ID]; c != nil && c.cs == cs {
			delete(u.conns, srv.ID)
			go closeQuietly(c)
		}
		u.mu.Unlock()
	}
}

func brokenSession(err error) bool {
	return errors.Is(err, sdk.ErrSessionMissing) || errors.Is(err, sdk.ErrConnectionClosed)
}

func (u *upstreams) forget(id string, c *upstreamConn) {
	u.mu.Lock()
	if u.conns[id] == c {
		delete(u.conns, id)
	}
	u.mu.Unlock()
}

// close ends every upstream session (DELETE for 2025-11-25 ones).
func (u *upstreams) close() {
	u.mu.Lock()
	conns := u.conns
	u.conns = map[string]*upstreamConn{}
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

// detach is a context cancelled with ctx but without its values: the
// downstream request's context carries the SDK server's values (its
// negotiated protocol version among them), which the SDK's client would
// take for the upstream's.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	return d, func() { stop(); cancel() }
}
