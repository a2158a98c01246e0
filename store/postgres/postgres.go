package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
)

//go:embed migrations/*.sql
var migrations embed.FS

// notifyChannel is the LISTEN/NOTIFY channel that carries new config revisions.
const notifyChannel = "tollgate_config"

// Option configures a Store.
type Option func(*options)

type options struct {
	maxConns     int32
	batchSize    int
	window       time.Duration
	queueSize    int
	pollInterval time.Duration
	retryBackoff time.Duration
	writers      int
	logger       *slog.Logger
}

func defaults() options {
	return options{
		maxConns:     16,
		batchSize:    groupcommit.DefaultMaxBatch,
		window:       groupcommit.DefaultWindow,
		queueSize:    groupcommit.DefaultQueueSize,
		pollInterval: 5 * time.Second,
		retryBackoff: 100 * time.Millisecond,
		writers:      4,
		logger:       slog.New(slog.DiscardHandler),
	}
}

// WithMaxConns bounds the connection pool (default 16). Watch uses one extra
// dedicated connection per watcher.
func WithMaxConns(n int32) Option { return func(o *options) { o.maxConns = max(n, 2) } }

// WithBatchSize bounds how many ledger entries one transaction writes (default 1024).
func WithBatchSize(n int) Option { return func(o *options) { o.batchSize = max(n, 1) } }

// WithWindow is how long the ledger writer waits to fill a batch after the first
// entry arrives (default 2ms).
func WithWindow(d time.Duration) Option { return func(o *options) { o.window = max(d, 0) } }

// WithQueueSize bounds the ledger queue (default 65536 entries); Append waits
// when it is full.
func WithQueueSize(n int) Option { return func(o *options) { o.queueSize = max(n, 1) } }

// WithPollInterval is how often Watch polls the revision besides LISTEN/NOTIFY
// (default 5s); while the LISTEN connection is down it polls every 250ms.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) { o.pollInterval = max(d, 10*time.Millisecond) }
}

// WithRetryBackoff is the pause between attempts to write a ledger batch while
// PostgreSQL is unreachable (default 100ms, doubling up to 2s).
func WithRetryBackoff(d time.Duration) Option {
	return func(o *options) { o.retryBackoff = max(d, time.Millisecond) }
}

// WithWriters is the number of group-commit writers (default 4), each with its
// own queue and one transaction in flight; entries are spread over them by a
// hash of the request id.
func WithWriters(n int) Option { return func(o *options) { o.writers = max(n, 1) } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Store is the PostgreSQL backend of store.Store.
type Store struct {
	pool    *pgxpool.Pool
	opts    options
	writers []*groupcommit.Writer
	done    atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open connects to PostgreSQL at url (a libpq URL or DSN), applies the embedded
// migrations (serialised across replicas by an advisory lock) and starts the
// ledger writer.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	cfg.MaxConns = o.maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, opts: o}
	for range o.writers {
		s.writers = append(s.writers, groupcommit.New(s.writeBatch,
			groupcommit.WithWindow(o.window), groupcommit.WithMaxBatch(o.batchSize),
			groupcommit.WithQueueSize(max(o.queueSize/o.writers, 1)), groupcommit.WithLogger(o.logger),
			groupcommit.WithRetry(groupcommit.Exponential(o.retryBackoff, 2*time.Second))))
	}
	return s, nil
}

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer func() { _ = db.Close() }()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithSessionLocker(locker), goose.WithTableName("tollgate_schema_version"))
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

// Pool is the connection pool, for callers that need their own queries (tests,
// benchmarks, health checks).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close drains the ledger queue (until ctx ends) and closes the pool. Entries
// still queued when ctx ends are reported in the error.
func (s *Store) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		errs := make([]error, len(s.writers))
		var wg sync.WaitGroup
		for i, w := range s.writers {
			wg.Go(func() { errs[i] = w.Close(ctx) })
		}
		wg.Wait()
		s.closeErr = errors.Join(errs...)
		s.done.Store(true)
		s.pool.Close()
	})
	return s.closeErr
}

func (s *Store) closed() bool { return s.done.Load() }

func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrClosed) {
		return err
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}
