package sqlite

import (
	"context"
	"sync"
	"time"
)

// revision is the last revision this process knows of, and a channel closed
// (and replaced) each time it grows.
type revision struct {
	mu      sync.Mutex
	rev     int64
	changed chan struct{}
}

func (r *revision) init(rev int64) {
	r.rev, r.changed = rev, make(chan struct{})
}

// raise records rev if it is newer and wakes the watchers.
func (r *revision) raise(rev int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev > r.rev {
		r.rev = rev
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

func (r *revision) current() (int64, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rev, r.changed
}

// poll reads the revision from the file every poll interval, to see changes
// made by other processes.
func (s *Store) poll() {
	t := time.NewTicker(s.cfg.poll)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.poll*4)
		rev, err := s.readRevision(ctx)
		cancel()
		if err != nil {
			s.cfg.log.Debug("sqlite: poll revision", "error", err)
			continue
		}
		s.rev.raise(rev)
	}
}

// Watch sends the revision each time it changes, coalesced, until ctx ends or
// the store closes; then the channel is closed. Changes by this process arrive
// at once, those by other processes within one poll interval.
func (s *Store) Watch(ctx context.Context) <-chan int64 {
	ch := make(chan int64, 1)
	if rev, err := s.readRevision(ctx); err == nil {
		s.rev.raise(rev)
	}
	last, changed := s.rev.current()
	ok := s.spawn(func() {
		defer close(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.quit:
				return
			case <-changed:
			}
			var rev int64
			rev, changed = s.rev.current()
			if rev <= last {
				continue
			}
			last = rev
			select { // keep only the latest
			case <-ch:
			default:
			}
			ch <- rev
		}
	})
	if !ok {
		close(ch)
	}
	return ch
}
