package responsesapi

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/responses"
)

// lateOwners are Owners on which an id another replica handed out appears
// only once awaited (its commit), counting the waits.
type lateOwners struct {
	*memOwners
	late   map[string]Owner
	awaits int
}

func (l *lateOwners) AwaitResponseOwner(ctx context.Context, id string) (*Owner, error) {
	l.awaits++
	if o, ok := l.late[id]; ok {
		l.owners[id] = o
	}
	return l.ResponseOwner(ctx, id)
}

// countingStore is a translated provider's stored responses, counting reads.
type countingStore struct {
	mu     sync.Mutex
	stored map[string]*responses.Stored
	reads  int
}

func (c *countingStore) PutResponse(_ context.Context, r *responses.Stored) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stored[r.ID] = r
	return nil
}

func (c *countingStore) GetResponse(_ context.Context, key, id string) (*responses.Stored, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if r, ok := c.stored[id]; ok && r.KeyID == key {
		return r, nil
	}
	return nil, responses.ErrNotFound
}

func (c *countingStore) DeleteResponse(context.Context, string, string) error { return nil }

// TestPreviousFromAnotherReplica: a previous_response_id no owner is found
// for yet, and no translated response either, is awaited (ownership.Awaiter):
// found there, it pins the request like any owned id (another key's is
// still a 404); a response the key stored on a translated provider is found
// in the store first, with no wait, and Prepare reuses that read; an id
// found nowhere waits once and is refused once the translator is native.
func TestPreviousFromAnotherReplica(t *testing.T) {
	o := &lateOwners{memOwners: newOwners(), late: map[string]Owner{
		"resp_b": {ID: "resp_b", KeyID: "k1", Deployment: "b", Model: "gpt"},
	}}
	cs := &countingStore{stored: map[string]*responses.Stored{
		"resp_t": {ID: "resp_t", KeyID: "k1", Input: []byte(`[]`), Response: []byte(`{"output":[]}`)},
	}}
	sv := newService(o.memOwners, nil)
	sv.Owners, sv.Store = o, cs
	g := nativeGroup()
	body := func(prev string) []byte {
		return []byte(`{"model":"gpt","input":"x","previous_response_id":"` + prev + `"}`)
	}

	e := sv.PinPrevious(t.Context(), &fakeStream{key: "k2", group: g}, &State{}, translate.APIResponses, "gpt", body("resp_b"))
	require.NotNil(t, e, "another key's id, once committed, is still not this key's")
	require.Equal(t, http.StatusNotFound, e.Status)
	require.Equal(t, 1, o.awaits)
	delete(o.owners, "resp_b")

	s, st := &fakeStream{key: "k1", group: g}, &State{}
	require.Nil(t, sv.PinPrevious(t.Context(), s, st, translate.APIResponses, "gpt", body("resp_b")))
	require.True(t, st.Pinned(), "the other replica's id, committed while awaited")
	require.Equal(t, "b", st.Pin().Deployment)
	require.Equal(t, 2, o.awaits)
	require.Equal(t, 2, cs.reads, "each miss looked in the translated store first")

	st = &State{}
	require.Nil(t, sv.PinPrevious(t.Context(), s, st, translate.APIResponses, "gpt", body("resp_t")))
	require.False(t, st.Pinned())
	require.Equal(t, 2, o.awaits, "a translated response is not awaited")
	require.Equal(t, 3, cs.reads)
	anthropic := &translate.Target{Deployment: "c", Provider: translate.ProviderAnthropic}
	var promptBytes int64
	require.Nil(t, sv.Prepare(t.Context(), s, st, translate.NewTranslator(translate.APIResponses, translate.ProviderAnthropic), anthropic, body("resp_t"), &promptBytes))
	require.Equal(t, 3, cs.reads, "Prepare took PinPrevious's read")
	require.Positive(t, promptBytes, "the history counts as input")

	st = &State{}
	require.Nil(t, sv.PinPrevious(t.Context(), s, st, translate.APIResponses, "gpt", body("resp_nowhere")))
	require.Equal(t, 3, o.awaits)
	e = sv.CheckNative(st, translate.APIResponses, g.Deployments[0].Target)
	require.NotNil(t, e)
	require.Equal(t, "previous_response_not_found", e.Code)
}
