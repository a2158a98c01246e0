package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/observe"
)

// observeFlags are tollgate run's observability flags.
type observeFlags struct {
	logFormat string
	accessLog bool
	perKey    bool
}

// newLogger is the process logger: text or JSON lines on w.
func newLogger(w io.Writer, format string, lvl slog.Level) (*slog.Logger, error) {
	o := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

// observability builds gateway.Observability: the access log on log, traces
// when OTEL_* asks for them.
func (f *observeFlags) observability(ctx context.Context, log *slog.Logger) (gateway.Observability, error) {
	o := gateway.Observability{PerKeyLabels: f.perKey}
	if f.accessLog {
		o.AccessLog = log
	}
	if observe.TracingEnabled(os.Getenv) {
		t, err := observe.NewTracing(ctx)
		if err != nil {
			return o, err
		}
		o.Tracing = t
		log.Info("tracing on: OTLP/gRPC exporter from OTEL_* variables")
	}
	return o, nil
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// redisCheck is the readiness check of the Redis counters.
func redisCheck(client *goredis.Client) observe.Check {
	return observe.Check{Name: "redis", Check: func(ctx context.Context) error {
		return client.Ping(ctx).Err()
	}}
}
