package accounting

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

// Spill is a write-ahead file of the ledger entries this process settled and
// the ledger has not yet made durable: each settlement is written to it (one
// write, no fsync) before it is queued for the ledger, so a process that dies
// — kill -9, a crash, an OOM kill — while the ledger cannot commit (PostgreSQL
// down) loses none of them. The next process that opens the same directory
// replays the files of dead processes into the ledger (appending a request id
// twice records it once), then deletes them.
//
// A checkpoint (Accountant.ExpireLoop, every second) rotates to a new file,
// flushes the ledger and deletes the old file once the flush succeeded. A
// checkpoint that fails fsyncs the old file, so after the first failed second
// even a machine crash loses nothing older than the last checkpoint.
//
// Each process holds an exclusive lock (flock) on its own file,
// "ledger-<pid>-<n>.spill": a directory may be shared by the replicas of one
// machine, as long as they share one ledger.
type Spill struct {
	dir string

	// gate: writes and their ledger appends hold it shared, a rotation
	// exclusively, so that an entry in a rotated file is in the ledger's
	// queue by the time the checkpoint flushes. Appends blocked by a full
	// ledger queue hold it shared: they do not wait for one another.
	gate sync.RWMutex

	mu  sync.Mutex
	cur *spillFile
	old []*spillFile // rotated, not yet known durable
	seq int
	buf []byte
	// retry: entries written here whose ledger append failed (the queue
	// full while PostgreSQL is down): the spill holds the only copy, so a
	// checkpoint carries them into the new file before it deletes the old
	// ones, and queues them again.
	retry []store.LedgerEntry
}

type spillFile struct {
	path string
	f    *os.File
}

// OpenSpill opens dir (created if missing), replays into ledger the spill
// files no live process holds, and starts this process's file. It returns how
// many entries it replayed.
func OpenSpill(ctx context.Context, dir string, ledger store.Ledger) (*Spill, int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("accounting: spill directory: %w", err)
	}
	s := &Spill{dir: dir}
	s.mu.Lock()
	err := s.rotate()
	s.mu.Unlock()
	if err != nil {
		return nil, 0, err
	}
	n, err := s.recover(ctx, ledger)
	if err != nil {
		s.Close()
		return nil, n, err
	}
	return s, n, nil
}

// recover replays every unlocked spill file of dir into ledger.
func (s *Spill) recover(ctx context.Context, ledger store.Ledger) (int, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "ledger-*.spill"))
	if err != nil {
		return 0, fmt.Errorf("accounting: spill: %w", err)
	}
	var done []*os.File
	total := 0
	for _, name := range names {
		if name == s.cur.path {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue // deleted meanwhile by its owner
		}
		if !tryLock(f) { // a live process owns it
			_ = f.Close()
			continue
		}
		entries, err := readSpill(f)
		if err != nil {
			_ = f.Close()
			return total, fmt.Errorf("accounting: spill %s: %w", name, err)
		}
		if len(entries) > 0 {
			if err := ledger.Append(ctx, entries...); err != nil {
				_ = f.Close()
				return total, fmt.Errorf("accounting: replay spill %s: %w", name, err)
			}
		}
		total += len(entries)
		done = append(done, f)
	}
	if len(done) == 0 {
		return 0, nil
	}
	if err := ledger.Flush(ctx); err != nil {
		for _, f := range done {
			_ = f.Close()
		}
		return total, fmt.Errorf("accounting: replay spill: flush: %w", err)
	}
	for _, f := range done {
		_ = os.Remove(f.Name())
		_ = f.Close()
	}
	return total, nil
}

// readSpill reads a spill file's entries; a last line cut short by a crash is
// ignored (its write never completed, so its Settle never returned).
func readSpill(f *os.File) ([]store.LedgerEntry, error) {
	var out []store.LedgerEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e store.LedgerEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// rotate starts a new file of this process; the current one joins old.
// s.mu is held.
func (s *Spill) rotate() error {
	s.seq++
	path := filepath.Join(s.dir, "ledger-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)+
		"-"+strconv.Itoa(s.seq)+".spill")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("accounting: spill: %w", err)
	}
	if !tryLock(f) {
		_ = f.Close()
		return fmt.Errorf("accounting: spill: cannot lock %s", path)
	}
	if s.cur != nil {
		s.old = append(s.old, s.cur)
	}
	s.cur = &spillFile{path: path, f: f}
	return nil
}

// errAppend marks an error of writeThen's then.
var errAppend = errors.New("accounting: ledger append")

// writeThen appends e to the current file, then runs then — the ledger
// append — before a checkpoint may rotate (gate). A write error returns
// without calling then; then's error is wrapped in errAppend, and e is kept
// for the next checkpoint to queue again.
func (s *Spill) writeThen(e *store.LedgerEntry, then func() error) error {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if err := s.write(e); err != nil {
		return err
	}
	if err := then(); err != nil {
		s.mu.Lock()
		s.retry = append(s.retry, *e)
		s.mu.Unlock()
		return fmt.Errorf("%w: %w", errAppend, err)
	}
	return nil
}

// retrying reports whether entries wait to be queued again.
func (s *Spill) retrying() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.retry) > 0
}

// write appends e to the current file as one line, in one write call.
func (s *Spill) write(e *store.LedgerEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return errors.New("accounting: spill closed")
	}
	s.buf = append(append(s.buf[:0], b...), '\n')
	_, err = s.cur.f.Write(s.buf)
	return err
}

// checkpoint makes everything written so far durable in the ledger and deletes
// the files that held it. The entries whose append failed are written to the
// new file first and queued again with requeue; those it fails again wait for
// the next checkpoint (and checkpoint reports the failure).
func (s *Spill) checkpoint(ctx context.Context, ledger store.Ledger, requeue func(*store.LedgerEntry) error) error {
	s.gate.Lock()
	s.mu.Lock()
	err := s.rotate()
	old := s.old
	retry := s.retry
	s.retry = nil
	s.mu.Unlock()
	for i := 0; err == nil && i < len(retry); i++ {
		err = s.write(&retry[i])
	}
	s.gate.Unlock()
	if err != nil { // the old files keep them
		s.mu.Lock()
		s.retry = append(retry, s.retry...)
		s.mu.Unlock()
		return err
	}
	var failed []store.LedgerEntry
	var errs []error
	for i := range retry {
		if err := requeue(&retry[i]); err != nil {
			failed = append(failed, retry[i])
			errs = append(errs, err)
		}
	}
	if len(failed) > 0 { // in the new file: the next checkpoint carries them on
		s.mu.Lock()
		s.retry = append(s.retry, failed...)
		s.mu.Unlock()
	}
	if err := ledger.Flush(ctx); err != nil {
		for _, o := range old {
			_ = o.f.Sync() // kept: survives a machine crash too
		}
		return err
	}
	s.mu.Lock()
	s.old = s.old[len(old):]
	s.mu.Unlock()
	for _, o := range old {
		_ = os.Remove(o.path)
		_ = o.f.Close()
	}
	if len(errs) > 0 {
		return fmt.Errorf("accounting: spill: %d settlements not queued again: %w", len(failed), errors.Join(errs...))
	}
	return nil
}

// Drop deletes this process's files and closes them: call it once the ledger
// is durable (the store closed cleanly after a graceful shutdown). Files
// holding entries whose ledger append failed are kept (Close): the flush did
// not cover them, and the next process replays them.
func (s *Spill) Drop() {
	if s.retrying() {
		s.Close()
		return
	}
	for _, name := range s.Files() {
		_ = os.Remove(name)
	}
	s.Close()
}

// Close closes the files without deleting what they hold (the next process
// replays them): after a graceful shutdown that flushed the ledger, Drop.
func (s *Spill) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range append(s.old, s.cur) {
		if o != nil {
			_ = o.f.Close()
		}
	}
	s.cur, s.old = nil, nil
}

// Files lists this process's spill files (for tests and diagnostics).
func (s *Spill) Files() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, o := range append(s.old, s.cur) {
		if o != nil {
			out = append(out, o.path)
		}
	}
	return out
}
