package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// A model group's response cache is set with model create/update flags and
// with apply -f; update changes only the cache settings it is given.
func TestModelCacheCommands(t *testing.T) {
	s := startServer(t, memstore.New())
	t.Setenv("TEST_CACHE_KEY", "sk-x")
	ctx := context.Background()
	runSteps(t, s, []step{
		{args: []string{"provider", "create", "p", "--type", "openai", "--base-url", "https://api.openai.com/v1", "--credential-env", "TEST_CACHE_KEY"}},
		{args: []string{"deployment", "create", "d", "--provider", "p", "--model", "gpt-4o"}},
		{args: []string{"model", "create", "emb", "--deployments", "d"}, want: []string{"CACHE", "off"}},
		{args: []string{"model", "create", "gpt", "--deployments", "d", "--cache", "exact"}, want: []string{"exact, ttl 1h, scope key, match deterministic"}},
		{args: []string{"model", "update", "gpt", "--cache-ttl", "2h", "--cache-scope", "team"}, want: []string{"exact, ttl 2h0m0s, scope team"}},
		{args: []string{"model", "update", "gpt", "--cache", "semantic", "--cache-embedding-model", "emb", "--cache-threshold", "0.9"}, want: []string{"semantic, ttl 2h0m0s, scope team, match deterministic, embedding emb, threshold 0.9"}},
		{args: []string{"model", "update", "gpt", "--cache-hit-price", "0.0001"}, want: []string{"threshold 0.9, hit price $0.0001"}},
		{args: []string{"model", "update", "gpt", "--cache-count-hits"}, want: []string{"hit price $0.0001, hits count for tpm and budgets"}},
		{args: []string{"model", "update", "gpt", "--cache-hit-price", "lots"}, wantErr: "--cache-hit-price"},
		{args: []string{"model", "update", "gpt", "--cache-scope", "world"}, wantErr: "cache.scope"},
		{args: []string{"model", "update", "gpt", "--cache-embedding-model", "nope"}, wantErr: "not a model group"},
		{args: []string{"model", "update", "gpt", "--cache-threshold", "2"}, wantErr: "cache.threshold"},
		{args: []string{"model", "create", "sem", "--deployments", "d", "--cache", "semantic"}, wantErr: "embedding model"},
	})
	m, _, err := store.Get[store.ModelGroup](ctx, s.st, "gpt")
	require.NoError(t, err)
	require.Equal(t, &store.ModelCache{
		Mode: "semantic", TTL: 2 * time.Hour, Scope: "team", Threshold: 0.9, EmbeddingModel: "emb", HitPrice: 100_000, CountHits: true,
	}, m.Cache)
	runSteps(t, s, []step{{args: []string{"model", "update", "gpt", "--cache", "off"}, want: []string{"CACHE", "off"}}})

	path := filepath.Join(t.TempDir(), "tollgate.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`models:
  - {id: emb, deployments: [d]}
  - {id: gpt, deployments: [d], cache: {mode: exact, ttl: 30m, scope: org, match: all, count_hits: true}}
`), 0o600))
	_, err = s.run(t, "apply", "-f", path)
	require.NoError(t, err)
	m, _, err = store.Get[store.ModelGroup](ctx, s.st, "gpt")
	require.NoError(t, err)
	require.Equal(t, &store.ModelCache{Mode: "exact", TTL: 30 * time.Minute, Scope: "org", Match: "all", CountHits: true}, m.Cache)

	require.NoError(t, os.WriteFile(path, []byte(`models:
  - {id: gpt, deployments: [d], cache: {mode: fuzzy}}
`), 0o600))
	_, err = s.run(t, "apply", "-f", path)
	require.ErrorContains(t, err, "models[0].cache.mode")
}

// spend cache shows each cached group's hits, misses, hit rate and savings;
// spend logs marks a hit's row.
func TestSpendCacheCommand(t *testing.T) {
	s := startServer(t, memstore.New())
	at := time.Now().UTC().Add(-time.Hour)
	row := func(id, model string, r store.CacheResult, cost, saved kernel.Money) store.LedgerEntry {
		return store.LedgerEntry{
			RequestID: id, KeyID: "k1", Model: model, Cost: cost, Cache: r, CacheSaved: saved,
			Status: kernel.StatusCompleted, HTTPStatus: 200, StartedAt: at, EndedAt: at,
		}
	}
	require.NoError(t, s.st.Append(context.Background(),
		row("r1", "gpt", store.CacheMiss, 2*kernel.Cent, 0),
		row("r2", "gpt", store.CacheHit, 0, 2*kernel.Cent),
		row("r3", "gpt", store.CacheHit, 0, 2*kernel.Cent),
		row("r4", "gpt", store.CacheMiss, 3*kernel.Cent, 0),
		row("r5", "plain", store.CacheNone, kernel.Cent, 0),
	))
	runSteps(t, s, []step{
		{args: []string{"spend", "cache", "--since", "1d"}, want: []string{"MODEL", "HIT RATE", "gpt", "4", "2", "50.0%", "$0.04", "$0.05"}},
		{args: []string{"spend", "cache", "--by", "key", "--since", "1d"}, want: []string{"KEY", "k1", "50.0%"}},
		{args: []string{"spend", "cache", "--by", "deployment"}, wantErr: "--by"},
		{args: []string{"spend", "logs", "--key", "k1", "--since", "1d"}, want: []string{"(cache hit)"}},
	})
	out, err := s.run(t, "spend", "cache", "--since", "1d")
	require.NoError(t, err)
	require.NotContains(t, out, "plain", "a group without a cache is not listed")
}
