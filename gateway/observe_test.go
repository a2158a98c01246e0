package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/observe"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
	"github.com/tollgate-ai/tollgate/store/postgres"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// lockedBuffer is a log sink written by the gateway's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// withAccessLog sends the gateway's logs, access lines included, to buf as JSON.
func withAccessLog(buf io.Writer) func(*gateway.Config, *gateway.Options) {
	return func(_ *gateway.Config, o *gateway.Options) {
		log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.Log, o.Observe.AccessLog = log, log
	}
}

// scrape reads a Prometheus text exposition into "name{labels}" → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test against a loopback server
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	require.NoError(t, sc.Err())
	return out
}

// sum adds the series of a metric whose labels contain every one of match
// (`name="value"` each).
func sum(m map[string]float64, name string, match ...string) float64 {
	var s float64
	for k, v := range m {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for _, l := range match {
			ok = ok && strings.Contains(labels, l)
		}
		if ok {
			s += v
		}
	}
	return s
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test against a loopback server
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// After a mixed workload (plain, streamed, refused by a rate limit, unknown
// key, unknown model), /metrics agrees with what the client saw, what the
// mock served and what the ledger holds; the access log has one line per
// request and no secret. The processor is called in-process and over gRPC
// (as Envoy calls it): the same series either way.
func TestMetricsMatchTheMockAndTheLedger(t *testing.T) {
	for _, overGRPC := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "grpc"}[overGRPC], func(t *testing.T) {
			testMetricsMatch(t, overGRPC)
		})
	}
}

func testMetricsMatch(t *testing.T, overGRPC bool) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	logs := &lockedBuffer{}
	r := startWith(t, overGRPC, st, nil, withAccessLog(logs))
	require.NotEmpty(t, r.g.MetricsAddr)
	metricsURL := "http://" + r.g.MetricsAddr

	key := r.key(t, "k-obs", kernel.Limits{})
	limited := r.key(t, "k-lim", kernel.Limits{RPM: 2})
	statuses := map[int]int{} // every request the client sent, by status
	chatOK := 0
	send := func(key, body string) int {
		resp, _ := r.post(t, key, "/v1/chat/completions", body)
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusOK {
			chatOK++
		}
		return resp.StatusCode
	}
	models := func(key string) int { // authenticated, never admitted
		req, err := http.NewRequest(http.MethodGet, r.url+"/v1/models", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		statuses[resp.StatusCode]++
		return resp.StatusCode
	}
	plain := `{"model":"demo","messages":[{"role":"user","content":"hello metrics"}],"max_tokens":7}`
	stream := `{"model":"demo","stream":true,"messages":[{"role":"user","content":"stream for metrics"}],"max_tokens":5}`
	eventually(t, func() bool { return models(limited) == http.StatusOK })
	// The processor and the data plane get a configuration separately: the
	// catalog is swapped once the xDS snapshot is published, not once the
	// data plane has received it. A warm-up request in between is routed to
	// a deployment the data plane has no route or cluster for yet, and the
	// data plane answers it itself (a local 404 or 503, which the processor
	// sees as the attempt's response): an upstream attempt the processor
	// counts and the mock never sees.
	unrouted := 0
	eventually(t, func() bool {
		resp, _ := r.post(t, key, "/v1/chat/completions", plain)
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusOK {
			chatOK++
			return true
		}
		if resp.Header.Get("x-tollgate-deployment") != "" {
			unrouted++
		}
		return false
	})
	// Stay inside one rpm window for the limited key.
	if s := time.Now().Second(); s > 50 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	for range 4 {
		send(key, plain)
	}
	for range 3 {
		require.Equal(t, http.StatusOK, send(key, stream))
	}
	for range 4 {
		send(limited, plain)
	}
	require.Equal(t, http.StatusUnauthorized, send("tg-not-a-key", plain))
	require.Equal(t, http.StatusNotFound, send(key, `{"model":"nope","messages":[]}`))
	require.Equal(t, 2, statuses[http.StatusTooManyRequests], "%v", statuses)

	require.NoError(t, st.Flush(context.Background()))
	entries, err := st.Entries(context.Background(), store.LedgerFilter{Limit: 1000})
	require.NoError(t, err)
	var ledger kernel.Usage
	var cost kernel.Money
	for _, e := range entries {
		ledger.Input += e.Usage.Input
		ledger.Output += e.Usage.Output
		cost += e.Cost
	}
	served := r.mock.Stats().Total
	require.Positive(t, served.OutputTokens)

	var m map[string]float64
	total := 0
	for _, n := range statuses {
		total += n
	}
	// The last request's report may land just after its response: wait for it.
	eventually(t, func() bool {
		m = scrape(t, metricsURL+"/metrics")
		return sum(m, "tollgate_requests_total") == float64(total)
	})
	for code, n := range statuses {
		require.InDelta(t, float64(n), sum(m, "tollgate_requests_total", `status="`+strconv.Itoa(code)+`"`), 0, "status %d", code)
	}
	require.InDelta(t, float64(ledger.Input), sum(m, "tollgate_tokens_total", `gen_ai_token_type="input"`), 0)
	require.InDelta(t, float64(ledger.Output), sum(m, "tollgate_tokens_total", `gen_ai_token_type="output"`), 0)
	require.InDelta(t, float64(served.InputTokens), sum(m, "tollgate_tokens_total", `gen_ai_token_type="input"`)+sum(m, "tollgate_tokens_total", `gen_ai_token_type="cached_input"`), 0)
	require.InDelta(t, float64(served.OutputTokens), sum(m, "tollgate_tokens_total", `gen_ai_token_type="output"`), 0)
	require.InDelta(t, float64(cost), sum(m, "tollgate_cost_nano_usd_total"), 0)
	require.Positive(t, cost)

	// Histograms: one observation per request sent upstream (the mock's
	// count), per streamed 200 (TTFT), per successful request (tokens).
	require.InDelta(t, float64(served.Requests+int64(unrouted)), sum(m, "gen_ai_server_request_duration_seconds_count"), 0, "unrouted warm-ups: %d", unrouted)
	require.InDelta(t, 3, sum(m, "gen_ai_server_time_to_first_token_seconds_count"), 0)
	require.InDelta(t, float64(chatOK), sum(m, "gen_ai_client_token_usage_count", `gen_ai_token_type="output"`), 0)
	require.InDelta(t, float64(ledger.Output), sum(m, "gen_ai_client_token_usage_sum", `gen_ai_token_type="output"`), 0)
	require.InDelta(t, 1, sum(m, "gen_ai_server_request_duration_seconds_count", `gen_ai_operation_name="chat"`, `gen_ai_provider_name="openai"`, `gen_ai_request_model="demo"`, `gen_ai_response_model="mock-gpt"`, `error_type=""`)/float64(served.Requests), 0)
	require.InDelta(t, 2, sum(m, "tollgate_admission_refusals_total", `reason="rate_limit_requests"`), 0)
	require.InDelta(t, 0, sum(m, "tollgate_reservations_in_flight"), 0)
	require.InDelta(t, float64(len(entries)), sum(m, "tollgate_ledger_entries_written_total"), 0)
	require.InDelta(t, 0, sum(m, "tollgate_ledger_entries_pending"), 0)
	require.Positive(t, sum(m, "tollgate_xds_snapshots_total"))

	// The access log: one line per request, with its outcome; no secret.
	var lines int
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec["msg"] != "request" {
			continue
		}
		lines++
		for _, f := range []string{"request_id", "key_id", "key_alias", "team", "model_group", "deployment", "status", "error_type", "input_tokens", "output_tokens", "cost_usd", "latency_ms", "ttfb_ms", "attempts"} {
			require.Contains(t, rec, f, line)
		}
	}
	require.Equal(t, total, lines)
	for _, s := range []string{key, limited, "tga-test-admin-secret", "sk-upstream"} {
		require.NotContains(t, logs.String(), s)
	}

	// Health on the metrics port and on the data-plane port.
	for _, base := range []string{metricsURL, r.url} {
		code, body := get(t, base+observe.PathLive)
		require.Equal(t, http.StatusOK, code, body)
		code, body = get(t, base+observe.PathReady)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "[+]store ok")
		require.Contains(t, body, "[+]ledger ok")
		require.Contains(t, body, "[+]xds ok")
	}
}

// /readyz turns 503 while PostgreSQL (the store) or Redis (the counters) is
// down, and 200 again once it is back, on both ports.
func TestReadinessFollowsPostgresAndRedis(t *testing.T) {
	pg := testenv.StartPostgres(t)
	rd := testenv.StartRedis(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, pg.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	ro, err := goredis.ParseURL(rd.URL)
	require.NoError(t, err)
	client := goredis.NewClient(ro)
	t.Cleanup(func() { _ = client.Close() })
	counters := accounting.NewRedisCounters(client, accounting.LedgerSeed(st))
	t.Cleanup(counters.Close)
	r := startWith(t, false, st, counters, func(_ *gateway.Config, o *gateway.Options) {
		o.Observe.Checks = append(o.Observe.Checks, observe.Check{Name: "redis", Check: func(ctx context.Context) error {
			return client.Ping(ctx).Err()
		}})
	})
	metrics := "http://" + r.g.MetricsAddr
	cc, err := grpc.NewClient(r.g.ExtProcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	hc := healthpb.NewHealthClient(cc)
	ready := func(want int, check string) {
		t.Helper()
		// The processor's gRPC health service follows /readyz.
		wantGRPC := healthpb.HealthCheckResponse_SERVING
		if want != http.StatusOK {
			wantGRPC = healthpb.HealthCheckResponse_NOT_SERVING
		}
		require.Eventually(t, func() bool {
			resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
			return err == nil && resp.GetStatus() == wantGRPC
		}, 20*time.Second, 50*time.Millisecond, "gRPC health for %s", check)
		for _, base := range []string{metrics, r.url} {
			var body string
			require.Eventually(t, func() bool {
				var code int
				code, body = get(t, base+observe.PathReady)
				return code == want
			}, 20*time.Second, 50*time.Millisecond, "%s: want %d for %s, last: %s", base, want, check, body)
			if want != http.StatusOK {
				require.Contains(t, body, "[-]"+check+" failed")
			}
			code, _ := get(t, base+observe.PathLive)
			require.Equal(t, http.StatusOK, code, "liveness does not depend on dependencies")
		}
	}
	ready(http.StatusOK, "")

	pg.Stop(t)
	ready(http.StatusServiceUnavailable, "store")
	pg.Start(t)
	ready(http.StatusOK, "")

	rd.Stop()
	ready(http.StatusServiceUnavailable, "redis")
	rd.Start(t)
	ready(http.StatusOK, "")
}

// A default metrics address that another process holds does not stop the
// gateway (tests and tools run several on one machine): it serves without
// /metrics, and health stays on the data-plane port.
func TestTakenDefaultMetricsAddrIsSkipped(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	r := startWith(t, false, memstore.New(), nil, func(c *gateway.Config, o *gateway.Options) {
		c.MetricsAddr, o.Observe.MetricsAddrDefaulted = held.Addr().String(), true
	})
	require.Empty(t, r.g.MetricsAddr)
	require.Nil(t, r.g.Metrics())
	eventually(t, func() bool {
		code, _ := get(t, r.url+observe.PathReady)
		return code == http.StatusOK
	})
}
