package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Sync is SQLite's synchronous setting: what a commit waits for.
type Sync string

// Sync settings.
const (
	// SyncFull fsyncs the WAL on every commit: a commit survives power loss.
	SyncFull Sync = "FULL"
	// SyncNormal fsyncs only at checkpoints: a commit survives a process crash
	// but the last commits may be lost on power loss.
	SyncNormal Sync = "NORMAL"
)

type config struct {
	log         *slog.Logger
	poll        time.Duration
	readers     int
	busyTimeout time.Duration
	sync        Sync
	ledgerOpts  []groupcommit.Option
	now         func() time.Time
	insertRows  int
}

// Option configures Open.
type Option func(*config)

// WithLogger sets where the store logs (failed ledger writes).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithPollInterval sets how often Watch reads the revision to see changes made
// by other processes (default 250ms).
func WithPollInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.poll = d
		}
	}
}

// WithReaders sets the size of the read connection pool (default: GOMAXPROCS, at least 4).
func WithReaders(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.readers = n
		}
	}
}

// WithBusyTimeout sets how long a connection waits for a lock held by another
// process (default 5s).
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.busyTimeout = d
		}
	}
}

// WithSync sets what a commit waits for (default SyncFull).
func WithSync(s Sync) Option {
	return func(c *config) {
		if s == SyncFull || s == SyncNormal {
			c.sync = s
		}
	}
}

// WithLedger passes options to the group-commit writer (window, batch size,
// queue size, retry). The defaults are groupcommit's, except batches of up to
// 4096 entries.
func WithLedger(opts ...groupcommit.Option) Option {
	return func(c *config) { c.ledgerOpts = append(c.ledgerOpts, opts...) }
}

// WithInsertRows sets how many ledger rows the largest prepared INSERT
// statement writes (default 256, chosen with BenchmarkSettleSweep); smaller
// ones (n/4, n/16, … down to 4 rows) and a single-row one take the rest of a
// batch.
func WithInsertRows(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.insertRows = n
		}
	}
}

// WithClock sets the clock that stamps objects and audit entries.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// Store is store.Store on one SQLite file.
type Store struct {
	path string
	cfg  config
	w    *sql.DB // exactly one connection: every write
	r    *sql.DB // read-only pool

	ledger *groupcommit.Writer
	rev    revision

	closed    atomic.Bool
	quit      chan struct{}
	gmu       sync.Mutex // orders spawn against Close's wg.Wait
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	stmts statements
	lw    ledgerWriter
}

var _ store.Store = (*Store)(nil)

func dsn(path string, c *config, readOnly bool) string {
	q := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", c.busyTimeout.Milliseconds()),
		"_pragma=synchronous(" + string(c.sync) + ")",
		"_txlock=immediate",
	}
	if readOnly {
		q = append(q, "_pragma=query_only(1)")
	} else {
		// A 512 KiB page cache holds the hot ledger pages between batches
		// (the right edges of the table and its indexes: end times grow;
		// the 128 pages leave room for random request ids' index paths).
		// Larger caches only fill with pages written once: 8 MiB cost the
		// gateway 11 MiB of RSS for no measurable CPU (chat at 64
		// connections, six alternating pairs: 104-125 vs 105-112 µs per
		// request; SettleRandomIDs 31-33 vs 29 µs per settlement), and
		// 2 MiB (SQLite's default) 2.5 MiB more than 512 KiB for the same
		// CPU and pread64 count (SettleRandomIDs over 200,000 rows: 39-42
		// vs 41 µs per settlement).
		q = append(q, "_pragma=journal_mode(WAL)", "_pragma=cache_size(-512)", "_pragma=temp_store(MEMORY)")
	}
	return "file:" + path + "?" + strings.Join(q, "&")
}

// Open opens (creating it if needed) the store in the SQLite file at path,
// applies the migrations and starts the ledger writer.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, ":memory:") {
		return nil, fmt.Errorf("sqlite: open: %q is not a file path", path)
	}
	cfg := config{
		log:         slog.New(slog.DiscardHandler),
		poll:        250 * time.Millisecond,
		readers:     max(4, runtime.GOMAXPROCS(0)),
		busyTimeout: 5 * time.Second,
		sync:        SyncFull,
		now:         time.Now,
		insertRows:  256,
	}
	for _, o := range opts {
		o(&cfg)
	}
	s := &Store{path: path, cfg: cfg, quit: make(chan struct{}), lw: ledgerWriter{rowsMax: cfg.insertRows}}
	var err error
	if s.w, err = sql.Open("sqlite", dsn(path, &cfg, false)); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if err := s.migrate(ctx); err != nil {
		return nil, errors.Join(err, s.w.Close())
	}
	if s.r, err = sql.Open("sqlite", dsn(path, &cfg, true)); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: open %s: %w", path, err), s.w.Close())
	}
	s.r.SetMaxOpenConns(cfg.readers)
	s.r.SetMaxIdleConns(cfg.readers)
	rev, err := s.readRevision(ctx)
	if err != nil {
		return nil, errors.Join(err, s.r.Close(), s.w.Close())
	}
	s.rev.init(rev)
	if err := s.prepare(ctx); err != nil {
		return nil, errors.Join(err, s.stmts.close(), s.r.Close(), s.w.Close())
	}
	// Batches of 4096 rather than groupcommit's 1024: measured ~20% more
	// settlements per CPU-second on SQLite (BenchmarkSettleSweep).
	// A 10 ms window rather than 2 ms: each commit costs far more than a row
	// (WAL frames, page writes), so at a few thousand settlements/s 2 ms
	// batches of a handful of rows spent ~50 µs of CPU per settlement; Flush
	// and full batches still write at once.
	ledgerOpts := append([]groupcommit.Option{
		groupcommit.WithLogger(cfg.log), groupcommit.WithMaxBatch(4096),
		groupcommit.WithWindow(10 * time.Millisecond),
	}, cfg.ledgerOpts...)
	s.ledger = groupcommit.New(s.writeBatch, ledgerOpts...)
	s.spawn(s.poll)
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, s.w, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("sqlite: migrate %s: %w", s.path, err)
	}
	return nil
}

// Path is the file the store lives in.
func (s *Store) Path() string { return s.path }

// LedgerStats are the group-commit writer's counters.
func (s *Store) LedgerStats() groupcommit.Stats { return s.ledger.Stats() }

// Close writes every queued ledger entry, ends every Watch and closes the file.
// Later calls return what the first returned.
func (s *Store) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.gmu.Lock()
		s.closed.Store(true)
		s.gmu.Unlock()
		err := s.ledger.Close(ctx)
		close(s.quit)
		s.wg.Wait()
		s.closeErr = errors.Join(err, s.closeLedger(ctx), s.stmts.close(), s.r.Close(), s.w.Close())
	})
	return s.closeErr
}

// spawn runs f in a goroutine Close waits for; false once Close has begun.
func (s *Store) spawn(f func()) bool {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.wg.Go(f)
	return true
}

// check returns store.ErrClosed once Close has begun.
func (s *Store) check() error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// wrap prefixes an error with the operation, keeping the store's sentinels bare.
func (s *Store) wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrClosed):
		return err
	case s.closed.Load():
		return fmt.Errorf("sqlite: %s: %w (%w)", op, store.ErrClosed, err)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}
