// Command loadgen drives an OpenAI-compatible endpoint with a fixed number of
// concurrent connections for a fixed time and reports throughput and latency
// percentiles as one JSON line. It is the load generator of bench/run.sh.
//
// It shares a core with the mock provider in bench/run.sh, so it spends as
// little as it can per request: one goroutine per kept-alive HTTP/1.1
// connection, a request built once and written with one write, and a small
// response parser (parse.go) instead of net/http's client, which put two
// goroutines and a dozen allocations on every request. Every response is
// checked (scenario.go); one that is not the expected success counts as an
// error, not as a request.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type result struct {
	Scenario    string  `json:"scenario"`
	Target      string  `json:"target"`
	Connections int     `json:"connections"`
	Seconds     float64 `json:"seconds"`
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"`
	RPS         float64 `json:"rps"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	// The first request of each connection (which opened it) and the rest:
	// with 5,000 connections opened at once, the first wave carries the
	// connection set-up and can set the whole run's p99.
	FirstP50ms float64 `json:"first_p50_ms"`
	FirstP99ms float64 `json:"first_p99_ms"`
	LaterP50ms float64 `json:"later_p50_ms"`
	LaterP99ms float64 `json:"later_p99_ms"`
	FirstError string  `json:"first_error,omitempty"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
}

// config is what the flags set.
type config struct {
	url, key, model, scenario string
	conns                     int
	dur, warm                 time.Duration
	rate                      float64 // requests per second over all connections; 0: unpaced
	floor                     string  // serve the floor proxy (floor.go) on this address to url's host
	promptBytes               int     // the prompt (or input) as prose of this many bytes; 0: the short one
	unique                    bool    // every request's prompt its own (a cache never hits)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.url, "url", "http://127.0.0.1:8080", "base URL (without /v1)")
	fs.StringVar(&c.key, "key", "", "API key (Bearer)")
	fs.StringVar(&c.model, "model", "demo", "model name")
	fs.StringVar(&c.scenario, "scenario", "chat", "chat, chat-parts (chat's prompt as content parts), stream or embeddings")
	fs.IntVar(&c.conns, "c", 64, "concurrent connections")
	fs.DurationVar(&c.dur, "d", 10*time.Second, "duration")
	fs.DurationVar(&c.warm, "warmup", time.Second, "warm-up before measuring")
	fs.Float64Var(&c.rate, "rate", 0, "requests per second over all connections, each paced evenly (0: each sends as soon as it has its answer)")
	fs.StringVar(&c.floor, "floor", "", "instead of driving load, serve the floor proxy (the least a Go proxy does) on this address, forwarding to -url's host")
	fs.IntVar(&c.promptBytes, "prompt-bytes", 0, "send a prompt (embeddings: an input) of this many bytes of prose instead of the short one (a guardrail's cost, bench/run.sh GUARD=)")
	fs.BoolVar(&c.unique, "unique", false, "make every request's prompt (embeddings: input) unique, so that a response cache misses every time (bench/run.sh CACHE=)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case c.conns < 1:
		return c, errors.New("-c must be at least 1")
	case c.dur <= 0 || c.warm < 0:
		return c, errors.New("-d must be positive and -warmup not negative")
	case c.rate < 0:
		return c, errors.New("-rate must not be negative")
	case c.promptBytes < 0:
		return c, errors.New("-prompt-bytes must not be negative")
	}
	return c, nil
}

// run drives the load the flags in args describe and writes the result to
// stdout as one JSON line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	sc, ok := scenarioFor(cfg.scenario, cfg.model)
	if !ok {
		return fmt.Errorf("unknown scenario %q", cfg.scenario)
	}
	if cfg.promptBytes > 0 {
		sc.body = withPrompt(sc.body, cfg.promptBytes)
	}
	at := -1 // where each request writes its number in the body (-unique)
	if cfg.unique {
		if sc.body, at, err = withUnique(sc.body); err != nil {
			return err
		}
	}
	tgt, err := newTarget(cfg.url, http.MethodPost, sc.path, cfg.key, sc.body)
	if err != nil {
		return err
	}
	if at >= 0 {
		tgt.numbered(at, uint64(time.Now().UnixNano()))
	}
	if cfg.floor != "" {
		lis, err := net.Listen("tcp", cfg.floor)
		if err != nil {
			return err
		}
		return serveFloor(ctx, lis, tgt.addr)
	}
	r := drive(ctx, tgt, sc.check, cfg.conns, cfg.warm, cfg.dur, cfg.rate)
	r.Scenario, r.Target = cfg.scenario, cfg.url
	return json.NewEncoder(stdout).Encode(r)
}

// drive sends requests on conns connections for warm+dur, measuring the last
// dur. Requests still in flight at the end are neither counted nor errors.
// With rate > 0 each connection sends every conns/rate seconds (staggered),
// or at once when its previous answer came later than that.
func drive(ctx context.Context, tgt target, check func(response) error, conns int, warm, dur time.Duration, rate float64) result {
	end := time.Now().Add(warm + dur)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	// The context's timer may fire late on a busy core, and requests fail
	// as soon as the deadline passes: the clock says when the run is over.
	over := func(now time.Time) bool { return ctx.Err() != nil || !now.Before(end) }
	var (
		measuring  atomic.Bool
		reqs, errs atomic.Int64
		firstErr   atomic.Pointer[string]
		wg         sync.WaitGroup
	)
	lats := make([][]time.Duration, conns)
	firsts := make([]bool, conns) // lats[i][0] is connection i's first request
	for i := range conns {
		c := newClient(tgt, check)
		stop := context.AfterFunc(ctx, c.Shutdown)
		wg.Go(func() {
			defer stop()
			defer c.drop()
			p := newPacer(rate, conns, i)
			first := true
			for t0 := time.Now(); !over(t0); first = false {
				if !p.wait(ctx) {
					return
				}
				if p.gap > 0 {
					t0 = time.Now() // latency from the send, not from the last answer
				}
				err := c.do(ctx)
				t1 := time.Now()
				lat := t1.Sub(t0)
				if over(t1) {
					return
				}
				t0 = t1
				if !measuring.Load() {
					continue
				}
				if err != nil {
					errs.Add(1)
					if firstErr.Load() == nil {
						msg := err.Error()
						firstErr.CompareAndSwap(nil, &msg)
					}
					continue
				}
				reqs.Add(1)
				if first {
					firsts[i] = true
				}
				lats[i] = append(lats[i], lat)
			}
		})
	}
	select {
	case <-time.After(warm):
	case <-ctx.Done():
	}
	measuring.Store(true)
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start).Seconds()

	var first, later []time.Duration
	for i, l := range lats {
		if firsts[i] {
			first, l = append(first, l[0]), l[1:]
		}
		later = append(later, l...)
	}
	all := slices.Concat(first, later)
	r := result{
		Connections: conns, Seconds: elapsed,
		Requests: reqs.Load(), Errors: errs.Load(), RPS: float64(reqs.Load()) / elapsed,
		P50ms: percentile(all, 0.50), P99ms: percentile(all, 0.99), MaxMs: percentile(all, 1),
		FirstP50ms: percentile(first, 0.50), FirstP99ms: percentile(first, 0.99),
		LaterP50ms: percentile(later, 0.50), LaterP99ms: percentile(later, 0.99),
	}
	if msg := firstErr.Load(); msg != nil {
		r.FirstError = *msg
	}
	return r
}

// percentile returns the p-quantile of lats in milliseconds (0 when empty);
// it sorts lats.
func percentile(lats []time.Duration, p float64) float64 {
	if len(lats) == 0 {
		return 0
	}
	slices.Sort(lats)
	return float64(lats[min(len(lats)-1, int(float64(len(lats))*p))]) / 1e6
}

// pacer spaces one connection's requests gap apart; a zero gap does not wait.
type pacer struct {
	gap  time.Duration
	next time.Time
	t    *time.Timer
}

// newPacer paces connection i of conns for rate requests per second over
// all of them, the connections staggered over the gap.
func newPacer(rate float64, conns, i int) *pacer {
	if rate <= 0 {
		return &pacer{}
	}
	gap := time.Duration(float64(conns) / rate * float64(time.Second))
	return &pacer{gap: gap, next: time.Now().Add(gap * time.Duration(i) / time.Duration(conns))}
}

// wait waits for the next send time; false when ctx ended first. A
// connection behind its schedule sends at once and does not catch up later.
func (p *pacer) wait(ctx context.Context) bool {
	if p.gap == 0 {
		return true
	}
	now := time.Now()
	if d := p.next.Sub(now); d > 0 {
		if p.t == nil {
			p.t = time.NewTimer(d)
		} else {
			p.t.Reset(d)
		}
		select {
		case <-p.t.C:
		case <-ctx.Done():
			return false
		}
		now = p.next
	}
	p.next = now.Add(p.gap)
	return true
}
