package observe

import (
	"context"
	"log/slog"

	"github.com/tollgate-ai/tollgate/extproc"
)

// AccessLog writes one line per request to its logger, at info level, with
// the message "request". It never logs a secret: the key appears as its id
// and alias, the prompt and completion never.
type AccessLog struct {
	log *slog.Logger
	on  bool // info enabled: checked once, not per request
}

var _ extproc.Observer = (*AccessLog)(nil)

// NewAccessLog logs requests to log (ctx is only asked whether info is
// enabled).
func NewAccessLog(ctx context.Context, log *slog.Logger) *AccessLog {
	return &AccessLog{log: log, on: log.Enabled(ctx, slog.LevelInfo)}
}

// Observe implements extproc.Observer.
func (a *AccessLog) Observe(r *extproc.Report) {
	if !a.on {
		return
	}
	var keyID, alias, team string
	if p := r.Principal; p != nil {
		keyID, alias, team = p.KeyID, p.KeyAlias, p.TeamID
	}
	var group, deployment string
	if t := r.Target; t != nil {
		group, deployment = t.Model, t.Deployment
	}
	var ttfb int64 = -1
	if !r.FirstByte.IsZero() {
		ttfb = r.FirstByte.Sub(r.Started).Milliseconds()
	}
	a.log.LogAttrs(context.Background(), slog.LevelInfo, "request",
		slog.String("request_id", r.RequestID),
		slog.String("path", r.Path),
		slog.String("key_id", keyID),
		slog.String("key_alias", alias),
		slog.String("team", team),
		slog.String("model", r.Model),
		slog.String("model_group", group),
		slog.String("deployment", deployment),
		slog.Int("status", r.HTTPStatus),
		slog.String("error_type", r.ErrorType),
		slog.Bool("stream", r.Stream),
		slog.Int64("input_tokens", r.Usage.Input+r.Usage.CachedInput+r.Usage.CacheWrite),
		slog.Int64("output_tokens", r.Usage.Output),
		slog.String("cost_usd", r.Cost.String()),
		slog.Int64("latency_ms", r.Ended.Sub(r.Started).Milliseconds()),
		slog.Int64("ttfb_ms", ttfb),
		slog.Int("attempts", r.Attempts),
	)
}
