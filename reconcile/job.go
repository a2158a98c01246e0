package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// JobConfig configures the scheduled reconciliation.
type JobConfig struct {
	// Interval between runs; 0 disables the job.
	Interval time.Duration
	// Threshold is the relative drift (0.01 = 1 %) of any cell above which a
	// run raises an alert (a log line, and the observer's Alert).
	Threshold float64
	// Days is how many whole UTC days before today each run reconciles
	// (providers' reports lag: today is never reconciled).
	Days int
}

// DefaultJobConfig: disabled; when enabled, hourly over yesterday with a 1 %
// threshold.
func DefaultJobConfig() JobConfig { return JobConfig{Threshold: 0.01, Days: 1} }

// ErrJobConfig is wrapped by every JobConfig.Validate error.
var ErrJobConfig = errors.New("reconcile: bad job config")

// Validate reports a config that cannot work.
func (c JobConfig) Validate() error {
	switch {
	case c.Interval < 0:
		return fmt.Errorf("%w: negative interval", ErrJobConfig)
	case c.Interval > 0 && c.Interval < time.Minute:
		return fmt.Errorf("%w: interval below one minute would hammer the providers' report APIs", ErrJobConfig)
	case c.Threshold < 0:
		return fmt.Errorf("%w: negative threshold", ErrJobConfig)
	case c.Days < 1 || time.Duration(c.Days)*Day > MaxRange:
		return fmt.Errorf("%w: days must be from 1 to %d", ErrJobConfig, MaxRange/Day)
	}
	return nil
}

// Observer hears every run of every target: the result, or the error.
type Observer interface {
	Observe(ctx context.Context, provider string, res *Result, alert bool, err error)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, provider string, res *Result, alert bool, err error)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, provider string, res *Result, alert bool, err error) {
	f(ctx, provider, res, alert, err)
}

// Job runs the reconciliation of every target on a schedule.
type Job struct {
	cfg     JobConfig
	targets func(context.Context) ([]Target, error)
	led     Ledger
	obs     Observer
	log     *slog.Logger
	now     func() time.Time
}

// JobOption configures a Job.
type JobOption func(*Job)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) JobOption { return func(j *Job) { j.now = now } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) JobOption { return func(j *Job) { j.log = l } }

// NewJob returns a job reconciling the targets (read afresh at every run)
// against led, reporting to obs.
func NewJob(cfg JobConfig, targets func(context.Context) ([]Target, error), led Ledger, obs Observer, opts ...JobOption) *Job {
	j := &Job{cfg: cfg, targets: targets, led: led, obs: obs, log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, o := range opts {
		o(j)
	}
	return j
}

// Loop runs the job now and then every Interval until ctx ends; with
// Interval 0 it returns at once.
func (j *Job) Loop(ctx context.Context) {
	if j.cfg.Interval <= 0 {
		return
	}
	t := time.NewTicker(j.cfg.Interval)
	defer t.Stop()
	for {
		j.RunOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunOnce reconciles every target once over the configured days and
// reports each to the observer; it returns the number of targets that
// alerted or failed.
func (j *Job) RunOnce(ctx context.Context) int {
	now := j.now()
	to := now.UTC().Truncate(Day)
	from := to.Add(-time.Duration(j.cfg.Days) * Day)
	targets, err := j.targets(ctx)
	if err != nil {
		j.log.ErrorContext(ctx, "reconcile: listing providers", "error", err)
		return 1
	}
	bad := 0
	for _, t := range targets {
		res, err := Run(ctx, t, j.led, from, to, now)
		alert := false
		switch {
		case err != nil:
			bad++
			j.log.ErrorContext(ctx, "reconcile: run failed", "provider", t.Provider, "error", err)
		case res.Worst() > j.cfg.Threshold:
			bad++
			alert = true
			d := res.Drift()
			j.log.WarnContext(ctx, "reconcile: drift above threshold", "provider", t.Provider,
				"from", from.Format(time.DateOnly), "to", to.Format(time.DateOnly), "threshold", j.cfg.Threshold,
				"worst_cell_rel", res.Worst(), "tokens", d.Tokens, "requests", d.Requests, "cost_nano_usd", int64(d.Cost))
		default:
			j.log.InfoContext(ctx, "reconcile: within threshold", "provider", t.Provider, "worst_cell_rel", res.Worst())
		}
		if j.obs != nil {
			j.obs.Observe(ctx, t.Provider, res, alert, err)
		}
	}
	return bad
}
