package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// The fault suite: three `tollgate run` replicas on a private PostgreSQL and a
// private Redis (both may be stopped by the test), the mock provider billing
// per credential, and bounded concurrent load (streams and JSON). After each
// fault the ledger must equal the provider's bill (or differ by the documented
// bound), and each test prints its figures.

const faultMasterKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// Prices of the fault catalog: $1 and $2 per million tokens, so a token costs
// 1,000 and 2,000 nano-USD and every request's cost is exact.
const faultIn, faultOut = 1_000, 2_000

type faultCluster struct {
	t        *testing.T
	pg       *testenv.PrivatePostgres
	redis    *testenv.PrivateRedis
	sys      *system // mock + CLI, pointed at replica 0
	logs     *lockedBuffer
	spill    string
	replicas []*faultReplica
}

type faultReplica struct {
	name  string
	url   string
	args  []string
	cmd   *os.Process
	state *os.ProcessState
	done  <-chan struct{}
	down  atomic.Bool // the test stopped it: the load skips it
}

func startCluster(t *testing.T, redisPolicy string, extra ...string) *faultCluster {
	t.Helper()
	c := &faultCluster{t: t, pg: testenv.StartPostgres(t), redis: testenv.StartRedis(t), logs: &lockedBuffer{}, spill: t.TempDir()}
	mockAddr := testenv.FreeAddr(t)
	_, mockDone := startProcess(t, c.logs, nil, "mockllm", "--listen", mockAddr)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process output:\n%s", c.logs.String())
		}
	})
	for i := range 3 {
		listen, admin := testenv.FreeAddr(t), testenv.FreeAddr(t)
		r := &faultReplica{name: fmt.Sprint("r", i), url: "http://" + listen}
		r.args = append([]string{
			"run", "--db", c.pg.URL, "--redis", c.redis.URL, "--redis-failure", redisPolicy,
			"--dataplane", "builtin", "--listen", listen, "--admin-addr", admin,
			"--xds-addr", testenv.FreeAddr(t), "--extproc-addr", testenv.FreeAddr(t),
			"--ledger-spill-dir", c.spill, "--log-level", "warn",
		}, extra...)
		c.replicas = append(c.replicas, r)
		c.start(r) // one at a time: the first bootstraps the store
		if i == 0 {
			c.sys = &system{t: t, mockURL: "http://" + mockAddr, url: r.url, admin: admin, logs: c.logs}
		}
	}
	select {
	case <-mockDone:
		t.Fatalf("mockllm exited:\n%s", c.logs.String())
	default:
	}
	return c
}

// start runs r and waits until its data plane answers.
func (c *faultCluster) start(r *faultReplica) {
	c.t.Helper()
	cmd, done := startProcess(c.t, c.logs, []string{"TOLLGATE_ADMIN_KEY=" + adminKey, "TOLLGATE_MASTER_KEY=" + faultMasterKey},
		"tollgate", r.args...)
	r.cmd, r.done = cmd.Process, done
	go func() { <-done; r.state = cmd.ProcessState }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(r.url + "/v1/models")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-done:
			c.t.Fatalf("replica %s exited at start:\n%s", r.name, c.logs.String())
		default:
		}
		require.True(c.t, time.Now().Before(deadline), "replica %s did not serve within 60s", r.name)
		time.Sleep(50 * time.Millisecond)
	}
	r.down.Store(false)
}

// catalog makes one priced model and key (see system.catalog) and waits until
// every replica accepts the key.
func (c *faultCluster) catalog(name string) (secret, keyID string) {
	c.t.Helper()
	secrets, ids := c.sys.catalog(name)
	c.waitKey(secrets[name])
	return secrets[name], ids[name]
}

// waitKey waits until every replica accepts secret.
func (c *faultCluster) waitKey(secret string) {
	c.t.Helper()
	for _, r := range c.replicas {
		require.Eventually(c.t, func() bool {
			req, _ := http.NewRequest(http.MethodGet, r.url+"/v1/models", nil)
			req.Header.Set("Authorization", "Bearer "+secret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 10*time.Second, 50*time.Millisecond, "replica %s knows the key", r.name)
	}
}

// outcome is one client request as the client saw it.
type outcome struct {
	start, end time.Time
	replica    string
	stream     bool
	code       int // 0: the connection failed or broke
	retryAfter string
	complete   bool // a 200 whose body ended as it should
}

// load runs clients concurrent clients against the live replicas, alternating
// streams and JSON replies, until ctx ends.
func (c *faultCluster) load(ctx context.Context, key, model string, clients int) func() []outcome {
	var (
		mu  sync.Mutex
		out []outcome
		wg  sync.WaitGroup
		seq atomic.Int64
	)
	client := &http.Client{Timeout: 60 * time.Second}
	for w := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := seq.Add(1)
				r := c.replicas[(int(i)+w)%len(c.replicas)]
				if r.down.Load() {
					continue
				}
				stream := i%2 == 0
				o := outcome{start: time.Now(), replica: r.name, stream: stream}
				req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions",
					strings.NewReader(chatBody(model, stream, true, 8)))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-mock-chunk-delay", "25ms")
				resp, err := client.Do(req)
				if err == nil {
					o.code, o.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					o.complete = rerr == nil && resp.StatusCode == http.StatusOK &&
						(!stream || strings.Contains(string(b), "[DONE]"))
				}
				o.end = time.Now()
				mu.Lock()
				out = append(out, o)
				mu.Unlock()
				if o.code != http.StatusOK {
					time.Sleep(20 * time.Millisecond) // no busy loop against a refusing replica
				}
			}
		})
	}
	return func() []outcome { wg.Wait(); return out }
}

// ledgerSum is what the ledger holds for a key.
type ledgerSum struct {
	Rows, Expired      int64
	Cost, In, Out      int64
	ExpiredCost        int64
	ExpiredStreams     int64 // expired rows charged from a usage checkpoint (output > 0)
	Completed, Aborted int64
	Failed, Other      int64
}

func (c *faultCluster) ledger(keyID string) ledgerSum {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.pg.URL)
	require.NoError(c.t, err)
	defer func() { _ = conn.Close(ctx) }()
	// Status numbers: kernel.Status (0 completed, 1 aborted, 2 failed, 3 expired).
	var s ledgerSum
	err = conn.QueryRow(ctx, `SELECT count(*), coalesce(sum(cost),0), coalesce(sum(input+cached_input+cache_write),0),
		coalesce(sum(output+reasoning),0),
		count(*) FILTER (WHERE status=3), coalesce(sum(cost) FILTER (WHERE status=3),0),
		count(*) FILTER (WHERE status=3 AND output > 0),
		count(*) FILTER (WHERE status=0), count(*) FILTER (WHERE status=1), count(*) FILTER (WHERE status=2)
		FROM ledger WHERE key_id=$1`, keyID).Scan(&s.Rows, &s.Cost, &s.In, &s.Out, &s.Expired, &s.ExpiredCost,
		&s.ExpiredStreams, &s.Completed, &s.Aborted, &s.Failed)
	require.NoError(c.t, err)
	s.Other = s.Rows - s.Expired - s.Completed - s.Aborted - s.Failed
	return s
}

// bill is the mock's bill for a credential, in nano-USD at the fault prices.
type bill struct {
	Requests, Aborted, In, Out, Cost int64
}

func (c *faultCluster) bill(name string) bill {
	u := c.sys.mockStats()["sk-"+name]
	return bill{
		Requests: u.Requests, Aborted: u.Aborted, In: u.InputTokens + u.CachedTokens, Out: u.OutputTokens,
		Cost: (u.InputTokens+u.CachedTokens)*faultIn + u.OutputTokens*faultOut,
	}
}

// settleDown waits until the ledger stops changing and equals want (a
// predicate on ledger and bill), bounded, and returns both.
func (c *faultCluster) settleDown(name, keyID string, want func(ledgerSum, bill) bool) (ledgerSum, bill) {
	c.t.Helper()
	var l ledgerSum
	var b bill
	deadline := time.Now().Add(60 * time.Second)
	for {
		l, b = c.ledger(keyID), c.bill(name)
		if want(l, b) || time.Now().After(deadline) {
			return l, b
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type tally struct {
	total, ok, complete, unavailable, withRetryAfter, refused, other int
}

func count(outs []outcome, keep func(outcome) bool) tally {
	var t tally
	for _, o := range outs {
		if keep != nil && !keep(o) {
			continue
		}
		t.total++
		switch o.code {
		case http.StatusOK:
			t.ok++
			if o.complete {
				t.complete++
			}
		case http.StatusServiceUnavailable:
			t.unavailable++
			if o.retryAfter != "" {
				t.withRetryAfter++
			}
		case 0:
			t.refused++
		default:
			t.other++
		}
	}
	return t
}

// runFault starts load, waits warm, runs fault, keeps the load for after,
// stops it and returns what the clients saw.
func (c *faultCluster) runFault(key, model string, fault func(), after time.Duration) []outcome {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wait := c.load(ctx, key, model, 12)
	time.Sleep(2 * time.Second)
	fault()
	time.Sleep(after)
	cancel()
	return wait()
}

func TestFaultRedisRestart(t *testing.T) {
	for _, policy := range []string{"closed", "local"} {
		t.Run(policy, func(t *testing.T) {
			c := startCluster(t, policy)
			key, keyID := c.catalog("redis" + policy)
			var stopped, restarted time.Time
			outs := c.runFault(key, "m-redis"+policy, func() {
				c.redis.Stop()
				stopped = time.Now()
				time.Sleep(10 * time.Second)
				restarted = time.Now()
				c.redis.Start(t) // empty, like a crash without persistence
			}, 3*time.Second)

			// During the outage: sent after it began and answered before
			// Redis was back (on a loaded machine a request sent just before
			// the restart can be admitted just after it).
			during := count(outs, func(o outcome) bool {
				return o.start.After(stopped.Add(500*time.Millisecond)) && o.end.Before(restarted)
			})
			after := count(outs, func(o outcome) bool { return o.start.After(restarted.Add(time.Second)) })
			all := count(outs, nil)
			l, b := c.settleDown("redis"+policy, keyID, func(l ledgerSum, b bill) bool { return l.Cost == b.Cost })
			t.Logf("redis %s, stopped 10s: clients %+v; during the outage %+v; after %+v", policy, all, during, after)
			t.Logf("ledger %+v; mock bill %+v", l, b)
			require.Equal(t, b.Cost, l.Cost, "Σ ledger == the provider's bill")
			require.Equal(t, b.In, l.In)
			require.Equal(t, b.Out, l.Out)
			require.Equal(t, int64(all.ok), l.Completed, "every 200 is in the ledger once")
			require.Zero(t, all.other+all.refused, "no other error than the outage's 503")
			require.Positive(t, after.complete, "served again after the restart")
			if policy == "closed" {
				require.Positive(t, during.unavailable)
				require.Zero(t, during.ok, "nothing admitted while Redis is down")
				require.Equal(t, during.unavailable, during.withRetryAfter, "503s say when to retry")
			} else {
				require.Positive(t, during.complete, "local counters admit while Redis is down")
				require.Zero(t, during.unavailable)
			}
		})
	}
}

func TestFaultPostgresRestart(t *testing.T) {
	c := startCluster(t, "closed")
	key, keyID := c.catalog("pg")
	var stopped, restarted time.Time
	outs := c.runFault(key, "m-pg", func() {
		c.pg.Stop(t)
		stopped = time.Now()
		time.Sleep(10 * time.Second)
		restarted = time.Now()
		c.pg.Start(t)
	}, 3*time.Second)
	during := count(outs, func(o outcome) bool { return o.start.After(stopped) && o.start.Before(restarted) })
	all := count(outs, nil)
	l, b := c.settleDown("pg", keyID, func(l ledgerSum, b bill) bool { return l.Cost == b.Cost })
	t.Logf("postgres stopped 10s: clients %+v; during the outage %+v", all, during)
	t.Logf("ledger %+v; mock bill %+v", l, b)
	require.Positive(t, during.complete, "admission goes on from Redis while PostgreSQL is down")
	require.Equal(t, all.ok, all.complete)
	require.Zero(t, all.total-all.ok, "clients see no error")
	require.Equal(t, b.Cost, l.Cost, "Σ ledger == the provider's bill")
	require.Equal(t, int64(all.ok), l.Completed)
}

func TestFaultSIGTERM(t *testing.T) {
	c := startCluster(t, "closed")
	key, keyID := c.catalog("term")
	victim := c.replicas[2]
	outs := c.runFault(key, "m-term", func() {
		victim.down.Store(true)
		require.NoError(t, victim.cmd.Signal(syscall.SIGTERM))
		select {
		case <-victim.done:
		case <-time.After(40 * time.Second):
			t.Fatal("SIGTERM: the replica did not exit within 40s")
		}
	}, 2*time.Second)
	all := count(outs, nil)
	onVictim := count(outs, func(o outcome) bool { return o.replica == victim.name })
	l, b := c.settleDown("term", keyID, func(l ledgerSum, b bill) bool { return l.Cost == b.Cost })
	t.Logf("SIGTERM of one replica: clients %+v (on it %+v); exit code %d", all, onVictim, victim.state.ExitCode())
	t.Logf("ledger %+v; mock bill %+v", l, b)
	require.Equal(t, 0, victim.state.ExitCode(), "a graceful shutdown exits 0")
	require.Equal(t, all.ok, all.complete, "streams in flight drained")
	require.Equal(t, b.Cost, l.Cost, "Σ ledger == the provider's bill, exactly")
	require.Equal(t, int64(all.ok), l.Completed)
}

func TestFaultKill9(t *testing.T) {
	for _, pgDown := range []bool{false, true} {
		name := map[bool]string{false: "kill9", true: "pgdown-kill9"}[pgDown]
		t.Run(name, func(t *testing.T) {
			// Streams here last ~200 ms: checkpoints every 50 ms, so that a
			// stream cut by the kill has one (the default is 1 s).
			c := startCluster(t, "closed", "--reservation-lease", "5s", "--usage-checkpoint", "50ms")
			key, keyID := c.catalog(name)
			victim := c.replicas[2]
			var killed time.Time
			outs := c.runFault(key, "m-"+name, func() {
				if pgDown {
					c.pg.Stop(t)
					time.Sleep(3 * time.Second) // settlements pile up in the queues (and the spill)
				}
				victim.down.Store(true)
				require.NoError(t, victim.cmd.Signal(syscall.SIGKILL))
				<-victim.done
				killed = time.Now()
				if pgDown {
					time.Sleep(2 * time.Second)
					c.pg.Start(t)
				}
				c.start(victim) // replays what its spill holds
			}, 2*time.Second)
			all := count(outs, nil)
			cut := count(outs, func(o outcome) bool {
				return o.replica == victim.name && o.end.After(killed.Add(-time.Second)) && !o.complete
			})
			// In-flight requests of the killed replica: billed by the provider
			// (in part), settled by lease expiry: a stream at its last usage
			// checkpoint plus an allowance, a JSON request at its worst case.
			// A request the kill cut may still be completed in the ledger: its
			// settlement is written ahead to the spill before the reply's last
			// bytes reach the client, so the kill can fall in between.
			l, b := c.settleDown(name, keyID, func(l ledgerSum, b bill) bool {
				return l.Completed >= int64(all.complete) && l.Cost >= b.Cost
			})
			t.Logf("%s: clients %+v (cut by the kill: %d); ledger %+v; mock bill %+v", name, all, cut.total, l, b)
			t.Logf("%s: %d expired rows, %d n$ (%d streams from their checkpoint); ledger %d n$ against the bill %d n$ (+%d n$)",
				name, l.Expired, l.ExpiredCost, l.ExpiredStreams, l.Cost, b.Cost, l.Cost-b.Cost)
			require.GreaterOrEqual(t, l.Completed, int64(all.complete), "every completed request is in the ledger (the spill kept the killed replica's)")
			require.LessOrEqual(t, l.Completed, int64(all.complete+cut.total), "only a request the kill cut can be completed in the ledger and not at its client")
			require.LessOrEqual(t, l.Cost-l.ExpiredCost, b.Cost, "settled rows never exceed the bill")
			require.GreaterOrEqual(t, l.Cost, b.Cost, "with the expired reservations' worst case, the ledger covers the bill")
			require.LessOrEqual(t, l.Expired, int64(12), "at most the requests in flight on the killed replica expire")
		})
	}
}

// TestFaultStrictBudgetAcrossReplicas: 64 clients spread over three replicas
// spend one strict budget until every client is refused with budget_exceeded;
// the provider's bill never exceeds the budget, and the ledger equals it.
func TestFaultStrictBudgetAcrossReplicas(t *testing.T) {
	const budget = 10_000_000 // $0.01 in nano-USD
	for _, tc := range []struct {
		shortfall    string
		redisRestart bool // Redis stopped 3 s mid-run and restarted empty
	}{{"clamp", false}, {"reject", false}, {"clamp", true}} {
		shortfall := tc.shortfall
		name := "sb" + shortfall
		if tc.redisRestart {
			name += "-redis-restart"
		}
		t.Run(name, func(t *testing.T) {
			c := startCluster(t, "closed")
			c.sys.catalog(name)
			keyID, secret := c.sys.createKey("--alias", "budget-"+shortfall, "--models", "m-"+name,
				"--budget", "0.01", "--shortfall", shortfall)
			c.waitKey(secret)

			var refused, served, other, unavailable atomic.Int64
			var wg sync.WaitGroup
			deadline := time.Now().Add(90 * time.Second)
			for w := range 64 {
				wg.Go(func() {
					for i := 0; time.Now().Before(deadline); i++ {
						r := c.replicas[(w+i)%len(c.replicas)]
						req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions",
							strings.NewReader(chatBody("m-"+name, i%2 == 0, true, 8)))
						req.Header.Set("Authorization", "Bearer "+secret)
						req.Header.Set("Content-Type", "application/json")
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							other.Add(1)
							continue
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						switch {
						case resp.StatusCode == http.StatusOK:
							served.Add(1)
						case resp.StatusCode == http.StatusServiceUnavailable && tc.redisRestart:
							unavailable.Add(1)
							time.Sleep(50 * time.Millisecond)
						case strings.Contains(string(b), "budget_exceeded"):
							refused.Add(1)
							return
						default:
							other.Add(1)
						}
					}
				})
			}
			if tc.redisRestart {
				require.Eventually(t, func() bool { return c.bill(name).Cost > budget/2 }, 60*time.Second, 20*time.Millisecond)
				c.redis.Stop()
				time.Sleep(3 * time.Second)
				c.redis.Start(t) // empty: the windows are re-seeded from the ledger
			}
			wg.Wait()
			l, b := c.settleDown(name, keyID, func(l ledgerSum, b bill) bool { return l.Cost == b.Cost })
			t.Logf("strict budget %d n$, shortfall %s, 64 clients on 3 replicas: %d served, %d clients refused, %d 503 (Redis down), %d other; "+
				"bill %d n$ (%.1f %% of the budget), ledger %d n$", budget, shortfall, served.Load(), refused.Load(), unavailable.Load(), other.Load(),
				b.Cost, 100*float64(b.Cost)/budget, l.Cost)
			require.Equal(t, int64(64), refused.Load(), "every client ends on budget_exceeded")
			require.Zero(t, other.Load())
			// Across a Redis restart too: each replica re-registers its open
			// reservations and uncommitted settlements before any window is
			// seeded again (accounting/redis_rejoin.go).
			require.LessOrEqual(t, b.Cost, int64(budget), "the provider's bill never exceeds a strict budget")
			require.Equal(t, b.Cost, l.Cost, "Σ ledger == the provider's bill")
		})
	}
}
