package responsesapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/responses"
)

// The processor-level behaviour (a whole request through the stream) is
// tested in extproc (responses_owner_test.go, responses_background_test.go,
// conversations_test.go, responses_store_test.go); these tests drive the
// logic alone, over a fake Stream and an in-memory Owners.

type rec struct {
	id    string
	st    kernel.Status
	usage kernel.Usage
}

type memOwners struct {
	mu      sync.Mutex
	owners  map[string]Owner
	pending map[string]*ownership.Deferred[*rec]
}

func newOwners() *memOwners {
	return &memOwners{owners: map[string]Owner{}, pending: map[string]*ownership.Deferred[*rec]{}}
}

func (m *memOwners) ResponseOwner(_ context.Context, id string) (*Owner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.owners[id]
	if !ok {
		return nil, responses.ErrNotFound
	}
	return &o, nil
}

func (m *memOwners) ForgetResponse(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.owners[id]; !ok {
		return responses.ErrNotFound
	}
	delete(m.owners, id)
	return nil
}

func (m *memOwners) PutOwner(_ context.Context, o *Owner, d *ownership.Deferred[*rec]) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := *o
	if d != nil {
		r.Pending = true
		m.pending[o.ID] = d
	}
	m.owners[o.ID] = r
	return nil
}

func (m *memOwners) ClaimSettlement(_ context.Context, id string) (*ownership.Deferred[*rec], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.pending[id]
	if !ok {
		return nil, responses.ErrNotFound
	}
	delete(m.pending, id)
	return d, nil
}

// fakeStream is one request of key on a catalog of one group.
type fakeStream struct {
	key      string
	group    *routing.Group
	routedTo *routing.Deployment
	deferred bool
}

func (f *fakeStream) RequestID() string { return "req-1" }
func (f *fakeStream) KeyID() string     { return f.key }
func (f *fakeStream) Resolve(context.Context, string) (*translate.Target, error) {
	return f.group.Deployments[0].Target, nil
}

func (f *fakeStream) ResolveGroup(_ context.Context, model string) (*routing.Group, bool, error) {
	if model != f.group.Name {
		return nil, true, nil
	}
	return f.group, true, nil
}

func (f *fakeStream) Models(context.Context) []translate.ModelInfo {
	return []translate.ModelInfo{{ID: f.group.Name}}
}

func (f *fakeStream) Route(ctx context.Context, model string) (*translate.Target, error) {
	return f.Resolve(ctx, model)
}
func (f *fakeStream) RouteTo(_ *routing.Group, d *routing.Deployment) { f.routedTo = d }
func (f *fakeStream) ResolveError(string, error) *translate.APIError {
	return translate.ErrUnavailable()
}

func (f *fakeStream) Defer() (*rec, *ownership.Hold) {
	return &rec{id: "req-1", usage: kernel.Usage{Input: 7}}, &ownership.Hold{}
}
func (f *fakeStream) Deferred() { f.deferred = true }

func nativeGroup() *routing.Group {
	g := &routing.Group{Name: "gpt"}
	for _, id := range []string{"a", "b"} {
		g.Deployments = append(g.Deployments, &routing.Deployment{Target: &translate.Target{
			Deployment: id, Provider: translate.ProviderOpenAI, NativeResponses: true, Host: "api.example",
		}})
	}
	return g
}

func newService(o *memOwners, settled *[]*rec) *Service[*rec] {
	now := time.Unix(1000, 0)
	return &Service[*rec]{
		Owners: o, Log: slog.Default(), Now: func() time.Time { return now }, Router: routing.NewRouter(), SettleTimeout: time.Second,
		End: func(r *rec, st kernel.Status, _ time.Time, u *kernel.Usage) (string, kernel.Usage) {
			r.st = st
			if u != nil {
				r.usage = *u
			}
			return r.id, r.usage
		},
		Settle:     func(_ context.Context, r *rec) (kernel.Money, error) { *settled = append(*settled, r); return 0, nil },
		FormatCost: func(kernel.Money) string { return "$0" },
	}
}

// TestPinsToTheHolder: a previous_response_id the key owns pins the
// request to the deployment holding it; another key's is a 404 before
// anything is admitted; an id never handed out is a 404 once the
// translator is known to be native.
func TestPinsToTheHolder(t *testing.T) {
	o := newOwners()
	o.owners["resp_1"] = Owner{ID: "resp_1", KeyID: "k1", Deployment: "b", Model: "gpt"}
	sv := newService(o, nil)
	g := nativeGroup()
	body := []byte(`{"model":"gpt","input":"x","previous_response_id":"resp_1"}`)

	s, st := &fakeStream{key: "k1", group: g}, &State{}
	require.Nil(t, sv.PinPrevious(t.Context(), s, st, translate.APIResponses, "gpt", body))
	require.True(t, st.Pinned())
	target, err := sv.ResolvePinned(t.Context(), s, st.Pin())
	require.NoError(t, err)
	require.Equal(t, "b", target.Deployment)
	require.Same(t, g.Deployments[1], s.routedTo)
	require.Nil(t, sv.CheckNative(st, translate.APIResponses, target))

	e := sv.PinPrevious(t.Context(), &fakeStream{key: "k2", group: g}, &State{}, translate.APIResponses, "gpt", body)
	require.NotNil(t, e)
	require.Equal(t, http.StatusNotFound, e.Status)
	require.Equal(t, "previous_response_not_found", e.Code)

	st = &State{}
	unknown := []byte(`{"model":"gpt","input":"x","previous_response_id":"resp_unknown"}`)
	require.Nil(t, sv.PinPrevious(t.Context(), s, st, translate.APIResponses, "gpt", unknown))
	require.False(t, st.Pinned())
	e = sv.CheckNative(st, translate.APIResponses, g.Deployments[0].Target)
	require.NotNil(t, e)
	require.Equal(t, http.StatusNotFound, e.Status)
}

// TestForwardsToTheHolder: GET and DELETE of an owned response go to its
// deployment (a DELETE forgets it once the provider answers 2xx); another
// key's is a 404; an id the gateway never handed out is left to the store.
func TestForwardsToTheHolder(t *testing.T) {
	o := newOwners()
	o.owners["resp_1"] = Owner{ID: "resp_1", KeyID: "k1", Deployment: "a", Model: "gpt"}
	sv := newService(o, nil)
	s := &fakeStream{key: "k1", group: nativeGroup()}

	st := &State{}
	f, e := sv.Forward(t.Context(), s, st, http.MethodGet, "/v1/responses/resp_1")
	require.Nil(t, e)
	require.NotNil(t, f)
	require.Equal(t, "a", f.Target.Deployment)
	require.Contains(t, f.Path, "/responses/resp_1")
	require.NotNil(t, f.Translator, "a response object names the client's model")
	require.Equal(t, "resp_1", st.Forwarded().ID)

	_, e = sv.Forward(t.Context(), &fakeStream{key: "k2", group: nativeGroup()}, &State{}, http.MethodGet, "/v1/responses/resp_1")
	require.NotNil(t, e)
	require.Equal(t, http.StatusNotFound, e.Status)

	f, e = sv.Forward(t.Context(), s, &State{}, http.MethodGet, "/v1/responses/resp_translated")
	require.Nil(t, f)
	require.Nil(t, e)

	st = &State{}
	f, e = sv.Forward(t.Context(), s, st, http.MethodDelete, "/v1/responses/resp_1")
	require.Nil(t, e)
	require.Nil(t, f.Translator)
	sv.ForwardedStatus(t.Context(), s, st, http.StatusOK)
	_, err := o.ResponseOwner(t.Context(), "resp_1")
	require.ErrorIs(t, err, responses.ErrNotFound)
}

// TestBackgroundSettledOnce: a background response answered queued is
// deferred with its owner; the first poll that sees it finished settles it
// from its usage, a second does nothing.
func TestBackgroundSettledOnce(t *testing.T) {
	o := newOwners()
	var settled []*rec
	sv := newService(o, &settled)
	s, st := &fakeStream{key: "k1", group: nativeGroup()}, &State{}
	body := []byte(`{"model":"gpt","input":"x","background":true}`)
	require.Nil(t, sv.PinPrevious(t.Context(), s, st, translate.APIResponses, "gpt", body))
	require.Nil(t, sv.CheckNative(st, translate.APIResponses, s.group.Deployments[0].Target))
	require.Equal(t, DefaultBackgroundLease, sv.Lease(st, false))
	require.Zero(t, sv.Lease(st, true), "a stream is never deferred")
	reply := []byte(`{"id":"resp_bg","object":"response","status":"queued"}`)
	st.Observe(reply, false, http.StatusOK)
	require.True(t, sv.DeferSettlement(t.Context(), s, st, reply, false, "a", "gpt"))
	require.True(t, s.deferred)
	own, err := o.ResponseOwner(t.Context(), "resp_bg")
	require.NoError(t, err)
	require.True(t, own.Pending)

	done := []byte(`{"id":"resp_bg","object":"response","status":"completed","model":"gpt-4o","output":[],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}`)
	require.True(t, sv.SettleBackground(t.Context(), own, http.StatusOK, done))
	require.Len(t, settled, 1)
	require.Equal(t, kernel.StatusCompleted, settled[0].st)
	require.Equal(t, int64(2), settled[0].usage.Output)
	require.True(t, sv.SettleBackground(t.Context(), own, http.StatusOK, done))
	require.Len(t, settled, 1, "claimed once")
}

// TestHoldOf: the hold reserves the decision's bound, else the request's.
func TestHoldOf(t *testing.T) {
	a := &kernel.AdmitRequest{Scopes: []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}}}, Model: "m", PromptBytes: 40, MaxTokens: 0, DefaultMaxTokens: 512}
	until := time.Unix(5000, 0)
	h := HoldOf(a, 0, until)
	require.Equal(t, int64(512), h.MaxTokens)
	require.Equal(t, []kernel.ScopeRef{{Kind: kernel.ScopeKey, ID: "k1"}}, h.Scopes)
	require.Equal(t, until, h.Until)
	require.Equal(t, int64(100), HoldOf(a, 100, until).MaxTokens)
}
