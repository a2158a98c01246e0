package observe

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
)

// Label names. The gen_ai_* ones are the OpenTelemetry GenAI semantic
// conventions' attributes with dots as underscores.
const (
	lblOperation    = "gen_ai_operation_name"
	lblProvider     = "gen_ai_provider_name"
	lblReqModel     = "gen_ai_request_model"
	lblRespModel    = "gen_ai_response_model"
	lblTokenType    = "gen_ai_token_type"
	lblErrorType    = "error_type"
	lblModelGroup   = "model_group"
	lblDeployment   = "deployment"
	lblTeam         = "team"
	lblStatus       = "status"
	lblReason       = "reason"
	lblOp           = "op"
	lblKeyID        = "key_id"
	lblKeyAlias     = "key_alias"
	lblFromGroup    = "from_group"
	lblToGroup      = "to_group"
	tokenInput      = "input"
	tokenOutput     = "output"
	tokenCached     = "cached_input"
	tokenCacheWrite = "cache_write"
)

// Buckets: the GenAI semantic conventions' advice for each histogram.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	ttftBuckets     = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	tpotBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// MetricsOption configures Metrics.
type MetricsOption func(*Metrics)

// WithPerKeyLabels adds the tollgate_key_* series, labelled by key id and
// alias: one series per key, so off by default (cardinality).
func WithPerKeyLabels(on bool) MetricsOption { return func(m *Metrics) { m.perKey = on } }

// Metrics holds every Prometheus metric Tollgate exports, in its own
// registry (with the Go runtime and process collectors). It implements
// extproc.Observer.
type Metrics struct {
	reg    *prometheus.Registry
	perKey bool

	tokenUsage *prometheus.HistogramVec
	duration   *prometheus.HistogramVec
	ttft       *prometheus.HistogramVec
	tpot       *prometheus.HistogramVec

	requests  *prometheus.CounterVec
	tokens    *prometheus.CounterVec
	cost      *prometheus.CounterVec
	keyReqs   *prometheus.CounterVec
	keyTokens *prometheus.CounterVec
	keyCost   *prometheus.CounterVec

	refusals    *prometheus.CounterVec
	unpriced    *prometheus.CounterVec // settled requests of a model without a price
	inflight    prometheus.Gauge
	storeErrors *prometheus.CounterVec

	xdsPushes  prometheus.Counter
	xdsVersion prometheus.Gauge

	cooldowns *prometheus.CounterVec
	retries   *prometheus.CounterVec
	fallbacks *prometheus.CounterVec
	guards    *prometheus.CounterVec // guardrails.go

	cacheM cacheMetrics // cache.go
	alertM alertMetrics // alerts.go

	// series are the label children of the request path, resolved once per
	// label set: one map lookup per request instead of one per metric.
	series sync.Map // seriesKey → *series
}

var (
	_ extproc.Observer         = (*Metrics)(nil)
	_ extproc.CooldownObserver = (*Metrics)(nil)
)

// NewMetrics registers Tollgate's metrics in a new registry.
func NewMetrics(opts ...MetricsOption) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	for _, o := range opts {
		o(m)
	}
	genai := []string{lblOperation, lblProvider, lblReqModel, lblRespModel}
	m.tokenUsage = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_client_token_usage",
		Help:    "Tokens used per request (GenAI gen_ai.client.token.usage), by gen_ai_token_type input or output.",
		Buckets: tokenBuckets,
	}, append(genai[:4:4], lblTokenType))
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_server_request_duration_seconds",
		Help:    "Time from the request's headers to the end of its response, of requests sent to a deployment (GenAI gen_ai.server.request.duration).",
		Buckets: durationBuckets,
	}, append(genai[:4:4], lblErrorType))
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_server_time_to_first_token_seconds",
		Help:    "Time from the request's headers to the first streamed chunk of the response (GenAI gen_ai.server.time_to_first_token).",
		Buckets: ttftBuckets,
	}, genai)
	m.tpot = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_server_time_per_output_token_seconds",
		Help:    "Time per output token after the first, of streamed responses (GenAI gen_ai.server.time_per_output_token).",
		Buckets: tpotBuckets,
	}, genai)
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_requests_total",
		Help: "Requests by model group, deployment, team, HTTP status returned and error type (\"\" on success).",
	}, []string{lblModelGroup, lblDeployment, lblTeam, lblStatus, lblErrorType})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_tokens_total",
		Help: "Tokens charged (settled), by model group, deployment, team and token type (input, output, cached_input, cache_write).",
	}, []string{lblModelGroup, lblDeployment, lblTeam, lblTokenType})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_cost_nano_usd_total",
		Help: "Cost charged (settled), in nano-USD (1e-9 $), by model group, deployment and team: the ledger's amounts.",
	}, []string{lblModelGroup, lblDeployment, lblTeam})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_admission_refusals_total",
		Help: "Requests refused at admission, by reason: rate_limit_requests, rate_limit_tokens, rate_limit_parallel, budget, unpriced (a model without a price under a strict budget), model_not_allowed, key_expired, duplicate.",
	}, []string{lblReason})
	m.inflight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tollgate_reservations_in_flight",
		Help: "Admitted requests whose reservation is not settled yet.",
	})
	m.storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_store_errors_total",
		Help: "Failed calls to the counters (Redis when shared) and the ledger, by op: admit, settle.",
	}, []string{lblOp})
	m.xdsPushes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tollgate_xds_snapshots_total",
		Help: "Configuration snapshots published to the data plane over xDS.",
	})
	m.xdsVersion = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tollgate_xds_snapshot_version",
		Help: "Store revision of the configuration snapshot last published over xDS.",
	})
	m.cooldowns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_deployment_cooldowns_total",
		Help: "Cooldowns this replica started (a deployment taken out of rotation), by deployment and reason: allowed_fails (that many failures within a minute) or rate_limited (a 429).",
	}, []string{lblDeployment, lblReason})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_retries_total",
		Help: "Upstream attempts sent again after a failed one, by the failed attempt's model group and deployment and why it failed: rate_limited, timeout, server_error, no_response, other.",
	}, []string{lblModelGroup, lblDeployment, lblReason})
	m.fallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_fallbacks_total",
		Help: "Requests admitted on a fallback group, by the group asked for, the group that took the request and why the last group was left: cooldown (no deployment in rotation) or rate_limited (every deployment's rpm/tpm quota full).",
	}, []string{lblFromGroup, lblToGroup, lblReason})
	m.unpriced = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_unpriced_requests_total",
		Help: "Requests settled for a model without a price (served under an estimate budget or no budget; the ledger row is marked unpriced), by model group and deployment.",
	}, []string{lblModelGroup, lblDeployment})
	m.reg.MustRegister(m.tokenUsage, m.duration, m.ttft, m.tpot, m.requests, m.tokens, m.cost,
		m.refusals, m.unpriced, m.inflight, m.storeErrors, m.xdsPushes, m.xdsVersion, m.cooldowns, m.retries, m.fallbacks, m.newGuardrails(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.cacheM = newCacheMetrics(m.reg)
	m.alertM = newAlertMetrics(m.reg)
	if m.perKey {
		m.keyReqs = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_key_requests_total",
			Help: "Requests by virtual key (--metrics-per-key), HTTP status and error type.",
		}, []string{lblKeyID, lblKeyAlias, lblStatus, lblErrorType})
		m.keyTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_key_tokens_total",
			Help: "Tokens charged by virtual key (--metrics-per-key) and token type.",
		}, []string{lblKeyID, lblKeyAlias, lblTokenType})
		m.keyCost = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_key_cost_nano_usd_total",
			Help: "Cost charged by virtual key (--metrics-per-key), in nano-USD.",
		}, []string{lblKeyID, lblKeyAlias})
		m.reg.MustRegister(m.keyReqs, m.keyTokens, m.keyCost)
	}
	return m
}

// Registry is where the metrics are registered (tests gather from it; more
// collectors may be added).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// seriesKey is the label set of a request's children.
type seriesKey struct {
	api                                    extproc.API
	provider, model, respModel, deployment string
	team                                   string
}

// series are the children of one label set, for the common outcome (a 200
// without error); other outcomes resolve their children when they happen.
type series struct {
	key                             seriesKey
	op, provider                    string
	tokIn, tokOut                   prometheus.Observer
	durOK, ttft, tpot               prometheus.Observer
	reqOK                           prometheus.Counter
	tIn, tOut, tCached, tCacheWrite prometheus.Counter
	cost                            prometheus.Counter
}

func (m *Metrics) seriesOf(r *extproc.Report) *series {
	t := r.Target
	k := seriesKey{api: r.API, provider: string(t.Provider), model: t.Model, respModel: t.ProviderModel, deployment: t.Deployment}
	if r.Principal != nil {
		k.team = r.Principal.TeamID
	}
	if s, ok := m.series.Load(k); ok {
		return s.(*series)
	}
	s := &series{key: k, op: operationName(r.API), provider: providerName(t.Provider)}
	g := []string{s.op, s.provider, k.model, k.respModel}
	s.tokIn = m.tokenUsage.WithLabelValues(append(g[:4:4], tokenInput)...)
	s.tokOut = m.tokenUsage.WithLabelValues(append(g[:4:4], tokenOutput)...)
	s.durOK = m.duration.WithLabelValues(append(g[:4:4], "")...)
	s.ttft = m.ttft.WithLabelValues(g...)
	s.tpot = m.tpot.WithLabelValues(g...)
	s.reqOK = m.requests.WithLabelValues(k.model, k.deployment, k.team, "200", "")
	s.tIn = m.tokens.WithLabelValues(k.model, k.deployment, k.team, tokenInput)
	s.tOut = m.tokens.WithLabelValues(k.model, k.deployment, k.team, tokenOutput)
	s.tCached = m.tokens.WithLabelValues(k.model, k.deployment, k.team, tokenCached)
	s.tCacheWrite = m.tokens.WithLabelValues(k.model, k.deployment, k.team, tokenCacheWrite)
	s.cost = m.cost.WithLabelValues(k.model, k.deployment, k.team)
	v, _ := m.series.LoadOrStore(k, s)
	return v.(*series)
}

// Observe implements extproc.Observer.
func (m *Metrics) Observe(r *extproc.Report) {
	m.observeGuardrails(r) // guardrails.go
	team := ""
	if r.Principal != nil {
		team = r.Principal.TeamID
	}
	if m.perKey && r.Principal != nil {
		m.observeKey(r)
	}
	if r.Target == nil {
		// Refused before a deployment was chosen: no model label (the
		// client's model name is unbounded), no GenAI series.
		m.requests.WithLabelValues("", "", team, strconv.Itoa(r.HTTPStatus), r.ErrorType).Inc()
		return
	}
	s := m.seriesOf(r)
	m.observeCache(r, team)
	// The request counter last: a scrape that counts a request sees the
	// rest of its series.
	defer func() {
		if r.HTTPStatus == http.StatusOK && r.ErrorType == "" {
			s.reqOK.Inc()
		} else {
			m.requests.WithLabelValues(s.key.model, s.key.deployment, team, strconv.Itoa(r.HTTPStatus), r.ErrorType).Inc()
		}
	}()
	m.observeRouting(r)
	if r.Settled {
		u := &r.Usage
		addTokens(s.tIn, u.Input)
		addTokens(s.tOut, u.Output)
		addTokens(s.tCached, u.CachedInput)
		addTokens(s.tCacheWrite, u.CacheWrite)
		if r.Cost > 0 {
			s.cost.Add(float64(r.Cost))
		}
	}
	if r.Attempts == 0 {
		return // answered without an upstream request
	}
	if r.ErrorType == "" {
		s.durOK.Observe(seconds(r.Started, r.Ended))
	} else {
		m.duration.WithLabelValues(s.op, s.provider, s.key.model, s.key.respModel, r.ErrorType).Observe(seconds(r.Started, r.Ended))
	}
	if r.Settled && r.ErrorType == "" {
		s.tokIn.Observe(float64(r.Usage.Input + r.Usage.CachedInput + r.Usage.CacheWrite))
		s.tokOut.Observe(float64(r.Usage.Output))
	}
	if r.Stream && !r.FirstToken.IsZero() {
		s.ttft.Observe(seconds(r.Started, r.FirstToken))
		if out := r.Usage.Output; out > 1 && r.ErrorType == "" {
			end := r.SettleStart
			if end.IsZero() {
				end = r.Ended
			}
			s.tpot.Observe(seconds(r.FirstToken, end) / float64(out-1))
		}
	}
}

func (m *Metrics) observeKey(r *extproc.Report) {
	id, alias := r.Principal.KeyID, r.Principal.KeyAlias
	m.keyReqs.WithLabelValues(id, alias, strconv.Itoa(r.HTTPStatus), r.ErrorType).Inc()
	if !r.Settled {
		return
	}
	addTokens(m.keyTokens.WithLabelValues(id, alias, tokenInput), r.Usage.Input)
	addTokens(m.keyTokens.WithLabelValues(id, alias, tokenOutput), r.Usage.Output)
	addTokens(m.keyTokens.WithLabelValues(id, alias, tokenCached), r.Usage.CachedInput)
	addTokens(m.keyTokens.WithLabelValues(id, alias, tokenCacheWrite), r.Usage.CacheWrite)
	if r.Cost > 0 {
		m.keyCost.WithLabelValues(id, alias).Add(float64(r.Cost))
	}
}

func addTokens(c prometheus.Counter, n int64) {
	if n > 0 {
		c.Add(float64(n))
	}
}

func seconds(from, to time.Time) float64 {
	if from.IsZero() || to.Before(from) {
		return 0
	}
	return to.Sub(from).Seconds()
}

// XDSPublished records a configuration snapshot published over xDS.
func (m *Metrics) XDSPublished(version int64) {
	m.xdsPushes.Inc()
	m.xdsVersion.Set(float64(version))
}

// LedgerStats are the ledger writer's counters, read at every scrape.
type LedgerStats struct {
	Batches, Entries, FlushErrors uint64
	Pending                       int
	FlushTime                     time.Duration
}

// WatchLedger exports the ledger writer's counters, read from stats at every
// scrape.
func (m *Metrics) WatchLedger(stats func() LedgerStats) {
	m.reg.MustRegister(&ledgerCollector{stats: stats})
}

type ledgerCollector struct{ stats func() LedgerStats }

var (
	descLedgerBatches = prometheus.NewDesc("tollgate_ledger_batches_total",
		"Group commits (transactions) the ledger writer made.", nil, nil)
	descLedgerEntries = prometheus.NewDesc("tollgate_ledger_entries_written_total",
		"Ledger entries written (durable).", nil, nil)
	descLedgerErrors = prometheus.NewDesc("tollgate_ledger_flush_errors_total",
		"Failed attempts to write a ledger batch (each is retried).", nil, nil)
	descLedgerPending = prometheus.NewDesc("tollgate_ledger_entries_pending",
		"Ledger entries settled and not yet durable (the writer's queue).", nil, nil)
	descLedgerCommit = prometheus.NewDesc("tollgate_ledger_commit_seconds_total",
		"Time spent in group commits, failed attempts included: over tollgate_ledger_batches_total, the mean commit latency.", nil, nil)
)

func (c *ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLedgerBatches
	ch <- descLedgerEntries
	ch <- descLedgerErrors
	ch <- descLedgerPending
	ch <- descLedgerCommit
}

func (c *ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(descLedgerBatches, prometheus.CounterValue, float64(s.Batches))
	ch <- prometheus.MustNewConstMetric(descLedgerEntries, prometheus.CounterValue, float64(s.Entries))
	ch <- prometheus.MustNewConstMetric(descLedgerErrors, prometheus.CounterValue, float64(s.FlushErrors))
	ch <- prometheus.MustNewConstMetric(descLedgerPending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(descLedgerCommit, prometheus.CounterValue, s.FlushTime.Seconds())
}

// operationName is gen_ai.operation.name of a client API.
func operationName(api extproc.API) string {
	switch api {
	case extproc.APIChat, extproc.APIMessages:
		return "chat"
	case extproc.APICompletions:
		return "text_completion"
	case extproc.APIEmbeddings:
		return "embeddings"
	case "":
		return ""
	default:
		return string(api)
	}
}

// providerName is gen_ai.provider.name of a provider type.
func providerName(p extproc.ProviderType) string {
	switch p {
	case extproc.ProviderAzure:
		return "azure.ai.openai"
	default:
		return string(p)
	}
}

// Accountant wraps an extproc.Accountant to count reservations in flight,
// refusals by reason and failed calls.
func (m *Metrics) Accountant(a extproc.Accountant) extproc.Accountant {
	return &accountant{inner: a, m: m}
}

type accountant struct {
	inner extproc.Accountant
	m     *Metrics
}

func (a *accountant) Admit(ctx context.Context, req *kernel.AdmitRequest) (kernel.Decision, error) {
	d, err := a.inner.Admit(ctx, req)
	switch {
	case err != nil:
		a.m.storeErrors.WithLabelValues("admit").Inc()
	case d.Admitted:
		a.m.inflight.Inc()
	default:
		a.m.refusals.WithLabelValues(refusalReason(d.Reason)).Inc()
	}
	return d, err
}

func (a *accountant) Settle(ctx context.Context, rec *extproc.Record) (kernel.Money, error) {
	a.m.inflight.Dec()
	c, err := a.inner.Settle(ctx, rec)
	if err != nil {
		a.m.storeErrors.WithLabelValues("settle").Inc()
	} else if rec.Unpriced {
		a.m.unpriced.WithLabelValues(rec.Model, rec.Deployment).Inc()
	}
	return c, err
}

// RecordRefused passes the $0 row of a request refused by a guardrail on to
// the inner accountant.
func (a *accountant) RecordRefused(ctx context.Context, rec *extproc.Record) error {
	return a.inner.RecordRefused(ctx, rec)
}

func refusalReason(r kernel.Reason) string {
	switch r {
	case kernel.ReasonKeyExpired:
		return "key_expired"
	case kernel.ReasonModelNotAllowed:
		return "model_not_allowed"
	case kernel.ReasonRequestLimit:
		return "rate_limit_requests"
	case kernel.ReasonTokenLimit:
		return "rate_limit_tokens"
	case kernel.ReasonParallelLimit:
		return "rate_limit_parallel"
	case kernel.ReasonBudgetExceeded:
		return "budget"
	case kernel.ReasonDuplicate:
		return "duplicate"
	case kernel.ReasonUnpriced:
		return "unpriced"
	default:
		return "other"
	}
}
