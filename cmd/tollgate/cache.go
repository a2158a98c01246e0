package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/cache"
	"github.com/tollgate-ai/tollgate/gateway"
)

// cacheFlags choose where the response cache lives (docs/caching.md): in
// this process by default; in Redis (shared by replicas) with --redis; the
// semantic index in PostgreSQL (pgvector) with a postgres:// --db.
type cacheFlags struct {
	memBytes, maxEntry int64
	redis, pgvector    bool
}

func (f *cacheFlags) register(fs *flag.FlagSet) {
	fs.Int64Var(&f.memBytes, "cache-memory-bytes", cache.DefaultMemoryBytes, "bytes of replies the in-process response cache keeps (least recently used dropped first)")
	fs.Int64Var(&f.maxEntry, "cache-max-entry-bytes", cache.DefaultMaxEntry, "largest reply the response cache stores")
	fs.BoolVar(&f.redis, "cache-redis", true, "with --redis, keep the response cache in Redis (replicas share hits)")
	fs.BoolVar(&f.pgvector, "cache-pgvector", true, "with a postgres:// --db, keep the semantic cache's prompts in PostgreSQL (pgvector)")
}

// apply sets opts' cache backend and index; the returned func closes them.
func (f *cacheFlags) apply(ctx context.Context, opts *gateway.Options, redisURL, db string, log *slog.Logger) (func(), error) {
	closers := []func(){}
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	opts.Cache = cache.NewMemory(f.memBytes, f.maxEntry, nil)
	if redisURL != "" && f.redis {
		ro, err := goredis.ParseURL(redisURL)
		if err != nil {
			return closeAll, fmt.Errorf("--redis: %w", err)
		}
		client := goredis.NewClient(ro)
		closers = append(closers, func() { _ = client.Close() })
		opts.Cache = cache.NewRedis(client, "", f.maxEntry)
	}
	if f.pgvector && (strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")) {
		pool, err := pgxpool.New(ctx, db)
		if err != nil {
			return closeAll, fmt.Errorf("--db for the semantic cache: %w", err)
		}
		closers = append(closers, pool.Close)
		idx := cache.NewPGVector(pool, "", nil)
		if err := idx.Migrate(ctx); err != nil {
			// pgvector missing: the semantic cache stays in this process.
			log.Warn("semantic cache index in this process", "err", err)
		} else {
			opts.CacheIndex = idx
		}
	}
	return closeAll, nil
}
