package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tollgate-ai/tollgate/batch"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/translate"
)

// Background responses nobody polls (issue 37). A background response is
// settled by the first poll that sees it finished (extproc); one whose
// client never polls again is asked about by the gateway itself: each tick
// of the batch poller (the same lease, so one replica asks), every response
// whose settlement is pending is fetched from the deployment holding it,
// with its credential, and the processor settles the finished ones
// (Processor.SettleBackground) — exactly once, whoever claims it first, a
// client's poll or this one.

// maxBackgroundReply bounds the body of a response object read back.
const maxBackgroundReply = 16 << 20

// backgroundTimeout bounds one fetch of a response.
const backgroundTimeout = 30 * time.Second

// backgroundWork is the batch poller's work on pending background responses.
type backgroundWork struct {
	owners store.ResponseOwners
	snap   func() *Snapshot
	proc   *extproc.Processor
	client *http.Client
	log    *slog.Logger
}

var _ batch.Work = (*backgroundWork)(nil)

// backgroundWork is the work of the pending background responses, nil when
// the store keeps no owners.
func (g *Gateway) backgroundWork() *backgroundWork {
	ro, ok := g.Store.(store.ResponseOwners)
	if !ok || g.proc == nil {
		return nil
	}
	return &backgroundWork{owners: ro, snap: g.Catalog.Snapshot, proc: g.proc, client: &http.Client{Timeout: backgroundTimeout}, log: g.log}
}

// Waiting implements batch.Work.
func (w *backgroundWork) Waiting(ctx context.Context) (bool, error) {
	pending, err := w.owners.PendingResponseOwners(ctx)
	return len(pending) > 0, err
}

// Do implements batch.Work: each pending response is fetched once; those
// finished are settled. One that cannot be fetched (its deployment gone,
// its provider failing) waits for the next tick, or its lease.
func (w *backgroundWork) Do(ctx context.Context) (int, error) {
	pending, err := w.owners.PendingResponseOwners(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pending {
		so := &pending[i]
		o := &extproc.ResponseOwner{
			ID: so.ID, KeyID: so.KeyID, Deployment: so.Deployment, Model: so.Model,
			Store: so.Store, Background: so.Background, Run: so.Run, Pending: true,
		}
		status, body, err := w.fetch(ctx, o)
		if err != nil {
			w.log.WarnContext(ctx, "background response: fetch failed; next tick", "response", o.ID, "deployment", o.Deployment, "err", err)
			continue
		}
		if w.proc.SettleBackground(ctx, o, status, body) {
			n++
		}
	}
	return n, nil
}

// fetch asks the deployment holding o for it: GET /v1/responses/{id} with
// the deployment's credential.
func (w *backgroundWork) fetch(ctx context.Context, o *extproc.ResponseOwner) (int, []byte, error) {
	t, up, err := w.locate(o)
	if err != nil {
		return 0, nil, err
	}
	path, headers := translate.NativeResponsesRequest(t, "/"+url.PathEscape(o.ID), false)
	host := up.Host
	if up.Port != 0 {
		host = net.JoinHostPort(up.Host, strconv.Itoa(int(up.Port)))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, up.Scheme+"://"+host+path, nil)
	if err != nil {
		return 0, nil, err
	}
	for _, h := range headers {
		req.Header.Set(h[0], h[1])
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBackgroundReply))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// locate finds the deployment holding o in the current configuration: its
// target (credential, paths) and its upstream (scheme, host, port).
func (w *backgroundWork) locate(o *extproc.ResponseOwner) (*extproc.Target, *Upstream, error) {
	s := w.snap()
	m, ok := s.lookup(o.Model)
	if !ok {
		return nil, nil, fmt.Errorf("model group %q is gone", o.Model)
	}
	var t *extproc.Target
	for _, c := range m.targets {
		if c.Deployment == o.Deployment {
			t = c
		}
	}
	for i := range s.Upstreams {
		if u := &s.Upstreams[i]; t != nil && u.Deployment == o.Deployment {
			return t, u, nil
		}
	}
	return nil, nil, fmt.Errorf("deployment %q is no longer in group %q", o.Deployment, o.Model)
}
