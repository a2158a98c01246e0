package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/alert"
	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/observe"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/postgres"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runGateway(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := gateway.DefaultConfig()
	fs := flag.NewFlagSet("tollgate run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Listen, "listen", envOr("TOLLGATE_LISTEN", cfg.Listen), "data plane HTTP address")
	fs.StringVar(&cfg.AdminAddr, "admin-addr", envOr("TOLLGATE_ADMIN_LISTEN", cfg.AdminAddr), "gRPC admin API address")
	fs.StringVar(&cfg.XDSAddr, "xds-addr", cfg.XDSAddr, "xDS (ADS) address for Envoy and the built-in data plane")
	fs.StringVar(&cfg.ExtProcAddr, "extproc-addr", cfg.ExtProcAddr, "ext_proc address: host:port or unix:/path")
	fs.StringVar(&cfg.MCPAddr, "mcp-addr", cfg.MCPAddr, "MCP service address for Envoy's /mcp route (default: loopback, a free port)")
	mcpHosts := fs.String("mcp-allowed-hosts", envOr("TOLLGATE_MCP_ALLOWED_HOSTS", ""), "comma list of the host names /mcp answers for, checked on its Host and Origin headers against DNS rebinding (example.com, *.example.com, * for any; default: localhost,127.0.0.1,::1 when --listen is a loopback address, else any)")
	dp := fs.String("dataplane", "auto", "data plane: builtin, envoy (runs --envoy as a child), none (an Envoy started elsewhere), or auto (envoy when on PATH, else builtin)")
	fs.StringVar(&cfg.EnvoyPath, "envoy", cfg.EnvoyPath, "envoy binary for --dataplane envoy")
	fs.BoolVar(&cfg.ProcessorOverGRPC, "processor-grpc", false, "built-in data plane calls the processor over gRPC instead of in-process")
	tlsFlags(fs, &cfg)
	// Defaults that may hold a password are read from the environment after
	// parsing, so that -h does not print them.
	db := fs.String("db", "", "embedded store file (SQLite), or a postgres:// URL (default: env TOLLGATE_DB, else tollgate.db)")
	masterFile := fs.String("master-key-file", "", "file holding the hex master key that seals provider credentials (created if missing; default: <db>.key); TOLLGATE_MASTER_KEY overrides")
	fs.Var((*stringList)(&cfg.ApplyFiles), "apply", "declarative configuration file to apply at start (repeatable)")
	fs.DurationVar(&cfg.ReservationLease, "reservation-lease", cfg.ReservationLease, "how long an admitted request's reservation lives unsettled (a crashed replica) before it is settled by expiry (a stream at its last usage checkpoint, anything else at its worst-case cost); keep it above the longest request")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", cfg.MaxBodyBytes, "largest request body accepted (413 above)")
	fs.DurationVar(&cfg.ResponsesRetention, "responses-retention", gateway.DefaultResponsesRetention, "how long stored responses of the Responses API are kept")
	demo := fs.String("demo-upstream", "", "create the demo model group `demo` pointing at this OpenAI-compatible URL, and a demo key")
	redisURL := fs.String("redis", "", "redis://… URL: admission counters shared by every replica (with a PostgreSQL store; default: env TOLLGATE_REDIS)")
	redisPolicy := fs.String("redis-failure", "closed", "when Redis is unreachable: closed (refuse with 503) or local (per-replica limits)")
	checkpointEvery := fs.Duration("usage-checkpoint", accounting.DefaultCheckpointEvery, "with --redis: how often streams' usage so far is written to Redis, so that an expired lease charges what a stream showed, not its worst case (0: off)")
	alertWebhook := fs.String("alert-webhook", "", "send budget alerts (50/80/100 % of every budget window, once across replicas) to this URL as signed JSON (secret: env TOLLGATE_ALERT_WEBHOOK_SECRET); docs/governance.md")
	alertSlack := fs.String("alert-slack", "", "send budget alerts to this Slack-compatible incoming webhook URL")
	alertEvery := fs.Duration("alert-every", gateway.DefaultAlertEvery, "how often budget thresholds are checked")
	anomalyFactor := fs.Int("alert-anomaly-factor", 0, "alert when a key's spend in the current hour is above this many times its hourly average of the 24 before (0: off unless tollgate alert settings sets it)")
	anomalyFloor := fs.Float64("alert-anomaly-floor", 1, "dollars: an hour's spend below this is never an anomaly")
	spillDir := fs.String("ledger-spill-dir", "auto", "directory of the ledger's write-ahead spill (settlements survive a crash while the store cannot commit); auto: a directory per database under the user cache directory with a PostgreSQL store, off with SQLite; off: none")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	debugAddr := fs.String("debug-addr", "", "serve Go's /debug/pprof on this loopback address (off when empty)")
	var gcf gcFlags
	gcf.register(fs)
	var of observeFlags
	var cf cacheFlags
	cf.register(fs)
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", cfg.MetricsAddr, "serve Prometheus /metrics, /healthz and /readyz on this address (metrics off when empty)")
	fs.BoolVar(&of.perKey, "metrics-per-key", false, "add per-virtual-key metric series (one series per key: mind the cardinality)")
	fs.StringVar(&of.logFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&of.accessLog, "access-log", true, "log one line per request (at info level)")
	fs.DurationVar(&cfg.Reconcile.Interval, "reconcile-interval", 0, "reconcile the ledger against the providers' usage and cost reports this often (e.g. 1h; 0: off; docs/reconcile.md)")
	fs.Float64Var(&cfg.Reconcile.Threshold, "reconcile-threshold", cfg.Reconcile.Threshold, "relative drift of a day × model cell above which a reconciliation alerts (0.01 = 1%)")
	fs.IntVar(&cfg.Reconcile.Days, "reconcile-days", cfg.Reconcile.Days, "whole UTC days before today each scheduled reconciliation covers")
	fs.DurationVar(&cfg.BatchPollInterval, "batch-poll-interval", cfg.BatchPollInterval, "poll pending batches and settle the ended ones this often (0: never; docs/batches.md)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if err := gcf.apply(); err != nil {
		return err
	}
	*db = orEnv(*db, "TOLLGATE_DB", "tollgate.db")
	*redisURL = orEnv(*redisURL, "TOLLGATE_REDIS", "")
	if *demo != "" && isURL(*db) {
		return errors.New("--demo-upstream keeps the demo key in a file beside the --db file: use it with the embedded store (a --db file), not a database URL")
	}
	switch *dp {
	case "auto":
		cfg.DataPlane = gateway.DataPlaneBuiltin
		if p, err := exec.LookPath(cfg.EnvoyPath); err == nil {
			cfg.DataPlane, cfg.EnvoyPath = gateway.DataPlaneEnvoy, p
		}
	default:
		cfg.DataPlane = gateway.DataPlane(*dp)
	}
	cfg.AdminKey = os.Getenv("TOLLGATE_ADMIN_KEY")
	if *mcpHosts != "" {
		cfg.MCPAllowedHosts = strings.Split(*mcpHosts, ",")
	}

	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log, err := newLogger(stderr, of.logFormat, lvl)
	if err != nil {
		return err
	}

	if *debugAddr != "" {
		if err := serveDebug(ctx, *debugAddr, log); err != nil {
			return err
		}
	}

	key, err := masterKey(*db, *masterFile)
	if err != nil {
		return err
	}
	cfg.MasterKey = key
	if err := cfg.Validate(); err != nil {
		return err
	}

	st, err := openStore(ctx, *db)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := st.Close(cctx); err != nil {
			log.Error("closing the store", "err", err)
		}
	}()

	opts := gateway.Options{Log: log, Stdout: stdout, EnvoyOutput: stderr}
	sp, err := openSpill(ctx, *spillDir, *db, st, log)
	if err != nil {
		return err
	}
	if sp != nil {
		defer closeSpill(ctx, sp, st, log)
		opts.Spill = sp
	}
	if opts.Observe, err = of.observability(ctx, log); err != nil {
		return err
	}
	opts.Observe.MetricsAddrDefaulted = !flagSet(fs, "metrics-addr")
	log.Info("data plane", "kind", cfg.DataPlane)
	if *redisURL != "" {
		counters, closeRedis, check, err := openRedis(*redisURL, *redisPolicy, *checkpointEvery, st, log)
		if err != nil {
			return err
		}
		defer closeRedis()
		opts.Counters = counters
		opts.Observe.Checks = append(opts.Observe.Checks, check)
	}

	if *alertWebhook != "" || *alertSlack != "" {
		n, closeAlerts, err := alertNotifier(*alertWebhook, *alertSlack, *redisURL, st, log)
		if err != nil {
			return err
		}
		defer closeAlerts()
		opts.Alerts = n
	}
	opts.AlertEvery, opts.AlertAnomalyFactor = *alertEvery, *anomalyFactor
	opts.AlertAnomalyFloor = kernel.Money(*anomalyFloor * float64(kernel.Dollar))

	closeCache, err := cf.apply(ctx, &opts, *redisURL, *db, log)
	defer closeCache()
	if err != nil {
		return err
	}

	if *demo != "" {
		opts.OnStart = append(opts.OnStart, func(ctx context.Context, g *gateway.Gateway) error {
			return demoSetup(ctx, g, *demo, filepath.Join(filepath.Dir(*db), ".tollgate-demo-key"), stdout)
		})
	}
	return gateway.Run(ctx, cfg, st, opts)
}

func openStore(ctx context.Context, db string) (store.Store, error) {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		st, err := postgres.Open(ctx, db)
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL store: %w", err)
		}
		return st, nil
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("open SQLite store %s: %w", db, err)
	}
	return st, nil
}

func openRedis(url, policy string, checkpointEvery time.Duration, st store.Store, log *slog.Logger) (accounting.Counters, func(), observe.Check, error) {
	ro, err := goredis.ParseURL(url)
	if err != nil {
		return nil, nil, observe.Check{}, fmt.Errorf("--redis: %w", err)
	}
	var p accounting.FailurePolicy
	switch policy {
	case "closed":
		p = accounting.FailClosed
	case "local":
		p = accounting.LocalFallback
	default:
		return nil, nil, observe.Check{}, fmt.Errorf("--redis-failure %q: want closed or local", policy)
	}
	client := goredis.NewClient(ro)
	c := accounting.NewRedisCounters(client, accounting.LedgerSeed(st), accounting.WithFailurePolicy(p), accounting.WithLogger(log),
		accounting.WithCheckpoints(checkpointEvery))
	return c, func() { c.Close(); _ = client.Close() }, redisCheck(client), nil
}

// alertNotifier builds the budget alerts' notifier: claims in Redis when the
// replicas share it (an alert fires once across them), else in this process.
func alertNotifier(webhook, slack, redisURL string, st store.Store, log *slog.Logger) (*alert.Notifier, func(), error) {
	n := &alert.Notifier{Audit: st, Log: log, Claimer: &alert.MemoryClaimer{}}
	closeFn := func() {}
	if redisURL != "" {
		ro, err := goredis.ParseURL(redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("--redis: %w", err)
		}
		client := goredis.NewClient(ro)
		n.Claimer = alert.RedisClaimer{Client: client, Prefix: "tg"}
		closeFn = func() { _ = client.Close() }
	}
	if webhook != "" {
		if _, err := url.ParseRequestURI(webhook); err != nil {
			return nil, nil, fmt.Errorf("--alert-webhook: %w", err)
		}
		n.Sinks = append(n.Sinks, &alert.Webhook{URL: webhook, Secret: []byte(os.Getenv("TOLLGATE_ALERT_WEBHOOK_SECRET"))})
	}
	if slack != "" {
		if _, err := url.ParseRequestURI(slack); err != nil {
			return nil, nil, fmt.Errorf("--alert-slack: %w", err)
		}
		n.Sinks = append(n.Sinks, alert.NewSlack(slack))
	}
	return n, closeFn, nil
}

func masterKey(db, file string) ([]byte, error) {
	if v := os.Getenv("TOLLGATE_MASTER_KEY"); v != "" {
		k, err := secret.ParseMasterKey(v)
		if err != nil {
			return nil, fmt.Errorf("TOLLGATE_MASTER_KEY: %w", err)
		}
		return k, nil
	}
	if file == "" {
		if isURL(db) {
			return nil, errors.New("with a PostgreSQL store, set TOLLGATE_MASTER_KEY or --master-key-file so every replica shares the master key")
		}
		file = db + ".key"
	}
	return secret.LoadOrCreateMasterKey(file)
}

// isURL reports whether --db names a database server rather than a file.
func isURL(db string) bool { return strings.Contains(db, "://") }

// orEnv is v, else the environment variable name, else def.
func orEnv(v, name, def string) string {
	if v != "" {
		return v
	}
	return envOr(name, def)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
