package gateway

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// A key charges its own scope, its user's, its team's, the team's org (when the
// key names none) and the global one, in that order.
func TestSnapshotScopesFollowTheHierarchy(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	s := secret.New("tg-")
	_, err := store.Put(ctx, st, "acme", &store.Org{ID: "acme"}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "ml", &store.Team{ID: "ml", OrgID: "acme"}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "ann", &store.User{ID: "ann"}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "k", &store.Key{ID: "k", UserID: "ann", TeamID: "ml", Hashes: []store.KeyHash{{Hash: secret.Hash(s)}}}, -1)
	require.NoError(t, err)

	snap, err := buildSnapshot(ctx, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now())
	require.NoError(t, err)
	c := NewCatalog(time.Now)
	c.Swap(snap)
	p, err := c.Authenticate(ctx, s)
	require.NoError(t, err)
	require.Equal(t, "acme", p.OrgID)
	var refs []kernel.ScopeRef
	for _, sc := range p.Scopes {
		refs = append(refs, sc.Ref)
	}
	require.Equal(t, []kernel.ScopeRef{
		{Kind: kernel.ScopeKey, ID: "k"},
		{Kind: kernel.ScopeUser, ID: "ann"},
		{Kind: kernel.ScopeTeam, ID: "ml"},
		{Kind: kernel.ScopeOrg, ID: "acme"},
		{Kind: kernel.ScopeGlobal},
	}, refs)
}
