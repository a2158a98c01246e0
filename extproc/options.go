package extproc

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tollgate-ai/tollgate/routing"
)

// DefaultMaxBodyBytes is the default request body limit (413 above).
const DefaultMaxBodyBytes = 16 << 20

// Option configures a Processor.
type Option func(*Processor)

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(p *Processor) { p.log = l } }

// WithTokenKey sets the key that signs retry tokens (routing.go), so that a
// token issued by one replica is honoured by another sharing the key; without
// it each processor signs with a random key of its own.
func WithTokenKey(k []byte) Option {
	return func(p *Processor) {
		if len(k) > 0 {
			p.retryKey = k
		}
	}
}

// WithClock sets the clock used for StartedAt/EndedAt (default: time.Now).
func WithClock(now func() time.Time) Option { return func(p *Processor) { p.now = now } }

// WithMaxBodyBytes sets the request body limit; larger bodies get 413.
func WithMaxBodyBytes(n int) Option { return func(p *Processor) { p.maxBody = n } }

// WithRequestIDs sets the generator of request ids (unique per request; they
// are the reservation ids). The default is a random per-process prefix and a
// counter.
func WithRequestIDs(f func() string) Option { return func(p *Processor) { p.newID = f } }

// WithSettleTimeout bounds a settlement done after the stream ended (aborts).
func WithSettleTimeout(d time.Duration) Option { return func(p *Processor) { p.settleTimeout = d } }

// WithShutdownTimeout bounds Serve's graceful stop before it cuts streams.
func WithShutdownTimeout(d time.Duration) Option {
	return func(p *Processor) { p.shutdownTimeout = d }
}

// defaultRequestIDs returns "tg-<16 hex random>-<counter>" ids: unique across
// processes, one atomic add per request.
func defaultRequestIDs() func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "tg-" + hex.EncodeToString(b[:]) + "-"
	var n atomic.Uint64
	return func() string {
		var buf [64]byte
		return string(strconv.AppendUint(append(buf[:0], prefix...), n.Add(1), 36))
	}
}

// WithRouter sets the Router (default: a new one): the gateway shares it
// with the admin API, which shows each deployment's state.
func WithRouter(r *routing.Router) Option { return func(p *Processor) { p.router = r } }
