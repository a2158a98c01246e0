package gateway

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
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
	// Authenticating hashes the key without garbage (one request each).
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = c.Authenticate(ctx, s) }))
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

// GET /v1/models lists the models with a usable deployment, by name, that the
// key may use.
func TestCatalogModelsSortedAndAllowed(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	s := secret.New("tg-")
	_, err := store.Put(ctx, st, "p", &store.Provider{ID: "p", Type: store.ProviderOpenAI, BaseURL: "http://upstream:8000/v1"}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "d", &store.Deployment{ID: "d", Provider: "p", ProviderModel: "m"}, -1)
	require.NoError(t, err)
	for _, g := range []store.ModelGroup{
		{ID: "zeta", Deployments: []string{"d"}},
		{ID: "alpha", Deployments: []string{"d"}},
		{ID: "mid", Deployments: []string{"d"}},
		{ID: "empty", Deployments: []string{"ghost"}},
	} {
		_, err = store.Put(ctx, st, g.ID, &g, -1)
		require.NoError(t, err)
	}
	_, err = store.Put(ctx, st, "k", &store.Key{ID: "k", Hashes: []store.KeyHash{{Hash: secret.Hash(s)}}}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "narrow", &store.Key{ID: "narrow", Limits: kernel.Limits{Models: []string{"zeta", "alpha"}}, Hashes: []store.KeyHash{{Hash: secret.Hash(s + "x")}}}, -1)
	require.NoError(t, err)

	snap, err := buildSnapshot(ctx, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now())
	require.NoError(t, err)
	c := NewCatalog(time.Now)
	c.Swap(snap)
	ids := func(key string) []string {
		p, err := c.Authenticate(ctx, key)
		require.NoError(t, err)
		var out []string
		for _, m := range c.Models(ctx, p) {
			out = append(out, m.ID)
		}
		return out
	}
	require.Equal(t, []string{"alpha", "mid", "zeta"}, ids(s))
	require.Equal(t, []string{"alpha", "zeta"}, ids(s+"x"))
}

// TestCatalogAliases: a group's aliases resolve to the group (its targets,
// its name as Target.Model) for any key allowed the group; a group's own name
// wins over another group's alias; the provider's responses_api reaches the
// target.
func TestCatalogAliases(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	s := secret.New("tg-")
	_, err := store.Put(ctx, st, "p", &store.Provider{ID: "p", Type: store.ProviderOpenAI, BaseURL: "http://upstream:8000/v1", ResponsesAPI: true}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "d", &store.Deployment{ID: "d", Provider: "p", ProviderModel: "m"}, -1)
	require.NoError(t, err)
	for _, g := range []store.ModelGroup{
		{ID: "demo", Deployments: []string{"d"}, Aliases: []string{"claude-sonnet-4-5", "other"}},
		{ID: "other", Deployments: []string{"d"}},
	} {
		_, err = store.Put(ctx, st, g.ID, &g, -1)
		require.NoError(t, err)
	}
	_, err = store.Put(ctx, st, "narrow", &store.Key{ID: "narrow", Limits: kernel.Limits{Models: []string{"demo"}}, Hashes: []store.KeyHash{{Hash: secret.Hash(s)}}}, -1)
	require.NoError(t, err)
	snap, err := buildSnapshot(ctx, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now())
	require.NoError(t, err)
	c := NewCatalog(time.Now)
	c.Swap(snap)
	p, err := c.Authenticate(ctx, s)
	require.NoError(t, err)
	tg, err := c.Resolve(ctx, p, "claude-sonnet-4-5")
	require.NoError(t, err)
	require.Equal(t, "demo", tg.Model)
	require.True(t, tg.NativeResponses)
	_, err = c.Resolve(ctx, p, "other") // the group "other", not demo's alias
	require.ErrorIs(t, err, extproc.ErrModelNotAllowed)
	_, err = c.Resolve(ctx, p, "nope")
	require.ErrorIs(t, err, extproc.ErrModelNotFound)
}

// TestCatalogPatterns: a group's glob aliases resolve names nothing else
// claims; a group's name or a plain alias wins over any pattern, and the
// longest (most specific) pattern over a shorter one. A key's model list may
// hold patterns too, matched against the name the client asked for.
func TestCatalogPatterns(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	_, err := store.Put(ctx, st, "p", &store.Provider{ID: "p", Type: store.ProviderOpenAI, BaseURL: "http://upstream:8000/v1"}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "d", &store.Deployment{ID: "d", Provider: "p", ProviderModel: "m"}, -1)
	require.NoError(t, err)
	for _, g := range []store.ModelGroup{
		{ID: "claude-any", Deployments: []string{"d"}, Aliases: []string{"claude-*"}},
		{ID: "opus", Deployments: []string{"d"}, Aliases: []string{"claude-opus-*"}},
		{ID: "sonnet", Deployments: []string{"d"}, Aliases: []string{"claude-sonnet-4-5"}},
		{ID: "claude-opus-exact", Deployments: []string{"d"}},
	} {
		_, err = store.Put(ctx, st, g.ID, &g, -1)
		require.NoError(t, err)
	}
	all, narrow := secret.New("tg-"), secret.New("tg-")
	_, err = store.Put(ctx, st, "all", &store.Key{ID: "all", Hashes: []store.KeyHash{{Hash: secret.Hash(all)}}}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "narrow", &store.Key{ID: "narrow", Limits: kernel.Limits{Models: []string{"claude-s*"}}, Hashes: []store.KeyHash{{Hash: secret.Hash(narrow)}}}, -1)
	require.NoError(t, err)
	snap, err := buildSnapshot(ctx, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now())
	require.NoError(t, err)
	c := NewCatalog(time.Now)
	c.Swap(snap)
	p, err := c.Authenticate(ctx, all)
	require.NoError(t, err)
	for name, group := range map[string]string{
		"claude-opus-exact": "claude-opus-exact", // a group's own name beats both patterns
		"claude-sonnet-4-5": "sonnet",            // a plain alias beats "claude-*"
		"claude-opus-4-8":   "opus",              // the longer pattern wins
		"claude-haiku-4-5":  "claude-any",
	} {
		g, err := c.ResolveGroup(ctx, p, name)
		require.NoError(t, err, name)
		require.Equal(t, group, g.Name, name)
		tg, err := c.Resolve(ctx, p, name)
		require.NoError(t, err, name)
		require.Equal(t, group, tg.Model, name)
	}
	_, err = c.ResolveGroup(ctx, p, "gpt-4o")
	require.ErrorIs(t, err, extproc.ErrModelNotFound)

	q, err := c.Authenticate(ctx, narrow)
	require.NoError(t, err)
	_, err = c.ResolveGroup(ctx, q, "claude-sonnet-4-5")
	require.NoError(t, err)
	_, err = c.ResolveGroup(ctx, q, "claude-opus-4-8")
	require.ErrorIs(t, err, extproc.ErrModelNotAllowed)
}
