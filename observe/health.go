package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Health paths, served on the metrics port and on the built-in data plane's
// listener (and answered by Envoy's routes, see xds).
const (
	PathLive  = "/healthz"
	PathReady = "/readyz"
)

// ErrNotReady is what Ready returns while a check fails.
var ErrNotReady = errors.New("observe: not ready")

// Check is one readiness condition.
type Check struct {
	Name string
	// Check returns nil when the condition holds; it must honour ctx.
	Check func(ctx context.Context) error
}

// Health answers liveness (the process serves HTTP) and readiness (every
// check passes). Checks run concurrently, each bounded by a timeout; their
// error texts are logged, never served (they may name hosts).
type Health struct {
	log     *slog.Logger
	timeout time.Duration

	mu     sync.Mutex
	checks []Check
	failed map[string]bool // last outcome, to log changes once
}

// NewHealth returns a Health with no checks (ready), each check bounded by
// timeout.
func NewHealth(log *slog.Logger, timeout time.Duration) *Health {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Health{log: log, timeout: timeout, failed: map[string]bool{}}
}

// Add adds readiness checks.
func (h *Health) Add(c ...Check) {
	h.mu.Lock()
	h.checks = append(h.checks, c...)
	h.mu.Unlock()
}

// Result is the outcome of every check, by name (nil: passed).
type Result struct {
	Names  []string
	Errors []error
}

// Err is nil when every check passed, else ErrNotReady naming the failed ones.
func (r Result) Err() error {
	var bad []string
	for i, err := range r.Errors {
		if err != nil {
			bad = append(bad, r.Names[i])
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrNotReady, strings.Join(bad, ", "))
}

// Run runs every check now.
func (h *Health) Run(ctx context.Context) Result {
	h.mu.Lock()
	checks := h.checks
	h.mu.Unlock()
	r := Result{Names: make([]string, len(checks)), Errors: make([]error, len(checks))}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, c := range checks {
		r.Names[i] = c.Name
		wg.Go(func() { r.Errors[i] = c.Check(ctx) })
	}
	wg.Wait()
	h.mu.Lock()
	for i, name := range r.Names {
		err := r.Errors[i]
		if was := h.failed[name]; was != (err != nil) {
			h.failed[name] = err != nil
			if err != nil {
				h.log.Warn("readiness check failed", "check", name, "err", err)
			} else {
				h.log.Info("readiness check passes again", "check", name)
			}
		}
	}
	h.mu.Unlock()
	return r
}

// Ready is Run's verdict.
func (h *Health) Ready(ctx context.Context) error { return h.Run(ctx).Err() }

// Watch runs the checks every interval until ctx ends and calls set with
// each verdict (the gRPC health service follows it).
func (h *Health) Watch(ctx context.Context, every time.Duration, set func(ready bool)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ready := h.Ready(ctx) == nil
		if ctx.Err() != nil {
			return
		}
		set(ready)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ServeHTTP answers GET or HEAD /healthz (200 while the process serves) and
// /readyz (200 when every check passes, else 503), Kubernetes style: one
// "[+]name ok" or "[-]name failed" line per check. Other paths are 404.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	switch r.URL.Path {
	case PathLive:
		_, _ = w.Write([]byte("ok\n"))
	case PathReady:
		res := h.Run(r.Context())
		var b strings.Builder
		for i, name := range res.Names {
			if res.Errors[i] == nil {
				fmt.Fprintf(&b, "[+]%s ok\n", name)
			} else {
				fmt.Fprintf(&b, "[-]%s failed\n", name)
			}
		}
		if res.Err() != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			b.WriteString("not ready\n")
		} else {
			b.WriteString("ok\n")
		}
		_, _ = w.Write([]byte(b.String()))
	default:
		http.NotFound(w, r)
	}
}

// IsHealthPath reports whether path is one Health answers.
func IsHealthPath(path string) bool { return path == PathLive || path == PathReady }

// LedgerCheck fails while the ledger writer holds entries and has written
// none for stall (or a flush keeps failing): settled requests are then not
// becoming durable.
func LedgerCheck(stats func() LedgerStats, stall time.Duration, now func() time.Time) Check {
	var mu sync.Mutex
	var lastEntries uint64
	var progress time.Time
	return Check{Name: "ledger", Check: func(context.Context) error {
		s := stats()
		mu.Lock()
		defer mu.Unlock()
		t := now()
		if s.Pending == 0 || s.Entries != lastEntries || progress.IsZero() {
			lastEntries, progress = s.Entries, t
			return nil
		}
		if d := t.Sub(progress); d > stall {
			return fmt.Errorf("ledger writer stalled: %d entries pending, none written for %s (%d flush errors)", s.Pending, d.Round(time.Second), s.FlushErrors)
		}
		return nil
	}}
}
