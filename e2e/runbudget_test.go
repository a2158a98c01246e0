package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// Costs of the run-budget test, in nano-USD, each call's exact worst case: a
// chat call is 10 output tokens at $1000 per million (input free, --shortfall
// reject: all or nothing), a tool call is $0.005 flat. The run budget is 20
// chat calls' worth, and 50 calls of each loop would spend 0.375.
const (
	runChatCost  = 10_000_000
	runToolCost  = 5_000_000
	runBudget    = 200_000_000
	runLoopCalls = 50
)

// runCall is one call of an agent's loop as the agent saw it.
type runCall struct {
	i          int
	tool       bool
	cost       int64
	admitted   bool
	start, end time.Time
}

// runTransport names the key and the run on every MCP request.
type runTransport struct{ key, run string }

func (r runTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("x-tollgate-run-id", r.run)
	return http.DefaultTransport.RoundTrip(req)
}

// TestRunBudgetAcrossReplicas: an agent's loop of 50 calls — model calls and
// MCP tool calls alternating, all naming the same run with x-tollgate-run-id
// — spread over three replicas on PostgreSQL and Redis, is stopped by the
// run's budget with no overspend: the ledger's sum for the run never exceeds
// the budget, and a call is refused only when it would overspend (once in
// sequence, where the refusals are exactly predictable, then with eight
// concurrent agents' workers on one run).
func TestRunBudgetAcrossReplicas(t *testing.T) {
	c := startCluster(t, "closed")
	s := c.sys
	s.cli(nil, []string{"CRED=sk-run"}, "provider", "create", "p-run", "--type", "openai", "--base-url", s.mockURL+"/v1", "--credential-env", "CRED")
	s.cli(nil, nil, "deployment", "create", "d-run", "--provider", "p-run", "--model", "mock-gpt")
	s.cli(nil, nil, "model", "create", "m-run", "--deployments", "d-run")
	s.cli(nil, nil, "price", "set", "m-run", "--input", "0", "--output", "1000")
	s.cli(nil, nil, "mcp-server", "create", "tools", "--url", s.mockURL+"/mcp", "--price-per-call", "0.005")
	keyID, key := s.createKey("--alias", "agent", "--models", "m-run", "--mcp-tools", "tools/*",
		"--run-budget", "0.2", "--shortfall", "reject")
	c.waitKey(key)

	// One MCP client per replica and run (2026-07-28: no session, the run is
	// the header's).
	sessions := map[string]*sdk.ClientSession{}
	var sessMu sync.Mutex
	session := func(url, run string) *sdk.ClientSession {
		sessMu.Lock()
		defer sessMu.Unlock()
		if cs := sessions[url+" "+run]; cs != nil {
			return cs
		}
		cl := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
		var cs *sdk.ClientSession
		require.Eventually(t, func() bool { // the server reaches every replica's configuration
			var err error
			cs, err = cl.Connect(t.Context(), &sdk.StreamableClientTransport{
				Endpoint: url + "/mcp", DisableStandaloneSSE: true,
				HTTPClient: &http.Client{Transport: runTransport{key, run}, Timeout: 30 * time.Second},
			}, &sdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
			if err != nil {
				return false
			}
			tools, err := cs.ListTools(t.Context(), nil)
			if err == nil && len(tools.Tools) > 0 {
				return true
			}
			_ = cs.Close()
			return false
		}, 10*time.Second, 100*time.Millisecond, "the tools server on %s", url)
		t.Cleanup(func() { _ = cs.Close() })
		sessions[url+" "+run] = cs
		return cs
	}
	runScope := "key:" + keyID + "/"

	// call makes call i of run on replica i mod 3: even calls are chat
	// completions, odd ones tool calls. It returns an error for anything but
	// an admission or a budget refusal naming the run.
	call := func(run string, i int) (runCall, error) {
		r := c.replicas[i%len(c.replicas)]
		rc := runCall{i: i, tool: i%2 == 1, cost: runChatCost, start: time.Now()}
		if rc.tool {
			rc.cost = runToolCost
			sessMu.Lock()
			cs := sessions[r.url+" "+run]
			sessMu.Unlock()
			if cs == nil {
				return rc, fmt.Errorf("call %d: no MCP session on %s for %s", i, r.name, run)
			}
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{
				Name: "tools__echo", Arguments: map[string]any{"text": fmt.Sprint("step ", i)},
			})
			var rpc *jsonrpc.Error
			switch {
			case err == nil && !res.IsError:
				rc.admitted = true
			case err == nil:
				return rc, fmt.Errorf("call %d: tool error %+v", i, res.Content)
			case errors.As(err, &rpc) && rpc.Code == -32043 && strings.Contains(rpc.Message, "the budget of run "+runScope+run):
			default:
				return rc, fmt.Errorf("call %d: %w", i, err)
			}
			rc.end = time.Now()
			return rc, nil
		}
		req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(chatBody("m-run", false, false, 10)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-tollgate-run-id", run)
		req.Header.Set("x-mock-output-tokens", "100") // the reply is max_tokens long: the worst case is the cost
		req.Header.Set("x-mock-latency", "30ms")      // calls of the concurrent loop overlap
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return rc, fmt.Errorf("call %d: %w", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			return rc, fmt.Errorf("call %d: %w", i, err)
		case resp.StatusCode == http.StatusOK:
			rc.admitted = true
		case !strings.Contains(string(b), "budget_exceeded") || !strings.Contains(string(b), "Budget exceeded for the run."):
			return rc, fmt.Errorf("call %d: %d %s", i, resp.StatusCode, b)
		}
		rc.end = time.Now()
		return rc, nil
	}
	mustCall := func(run string, i int) runCall {
		t.Helper()
		rc, err := call(run, i)
		require.NoError(t, err)
		return rc
	}

	// ledger is the run's rows in PostgreSQL, and what `tollgate spend total
	// --run` reports for it.
	ledger := func(run string, rows int) (sum int64, n int) {
		var total struct {
			Total struct {
				NanoUSD int64 `json:"nano_usd,string"`
			} `json:"total"`
			Requests int64 `json:"requests,string"`
		}
		require.Eventually(t, func() bool { // settlements reach the ledger asynchronously
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, c.pg.URL)
			require.NoError(t, err)
			defer func() { _ = conn.Close(ctx) }()
			require.NoError(t, conn.QueryRow(ctx, `SELECT coalesce(sum(cost),0), count(*) FROM ledger WHERE run_id=$1`,
				runScope+run).Scan(&sum, &n))
			return n == rows
		}, 30*time.Second, 100*time.Millisecond, "the ledger holds the run's %d calls", rows)
		require.Eventually(t, func() bool {
			s.cli(&total, nil, "spend", "total", "--run", runScope+run)
			return total.Total.NanoUSD == sum && total.Requests == int64(n)
		}, 30*time.Second, 200*time.Millisecond, "tollgate spend total --run agrees with the ledger (%d n$, %d calls)", sum, n)
		return sum, n
	}

	t.Run("sequential", func(t *testing.T) {
		// One call at a time, rotating replicas: call i is admitted exactly
		// when the run's spend so far plus its cost fits the budget.
		const run = "loop-seq"
		for _, r := range c.replicas {
			session(r.url, run)
		}
		var spent, admitted int64
		firstRefusal := -1
		for i := range runLoopCalls {
			rc := mustCall(run, i)
			want := spent+rc.cost <= runBudget
			require.Equal(t, want, rc.admitted, "call %d (%d n$, tool %v) with %d n$ of the run spent", i, rc.cost, rc.tool, spent)
			if rc.admitted {
				spent += rc.cost
				admitted++
			} else if firstRefusal < 0 {
				firstRefusal = i
			}
		}
		sum, rows := ledger(run, int(admitted))
		t.Logf("sequential loop of %d calls on 3 replicas: %d admitted, first refusal at call %d, ledger %d n$ of the %d n$ run budget",
			runLoopCalls, admitted, firstRefusal, sum, runBudget)
		require.Equal(t, spent, sum)
		require.LessOrEqual(t, sum, int64(runBudget), "no overspend")
		require.Equal(t, int64(runBudget), sum, "the loop used the whole budget (tool calls fill the last $0.005)")
		require.Equal(t, int(admitted), rows)
	})

	t.Run("concurrent", func(t *testing.T) {
		// Eight workers share one loop of 50 calls on one run.
		const run = "loop-conc"
		for _, r := range c.replicas {
			session(r.url, run) // connect first: the loop's calls overlap
		}
		var (
			next  atomic.Int64
			mu    sync.Mutex
			calls []runCall
			errs  []error
			wg    sync.WaitGroup
		)
		for range 8 {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < runLoopCalls; i = int(next.Add(1) - 1) {
					rc, err := call(run, i)
					mu.Lock()
					calls, errs = append(calls, rc), append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		require.Len(t, calls, runLoopCalls)
		sort.Slice(calls, func(a, b int) bool { return calls[a].start.Before(calls[b].start) })
		var admittedCost int64
		var admitted, refusedChat, refusedTool int
		for _, rc := range calls {
			if rc.admitted {
				admittedCost += rc.cost
				admitted++
			} else if rc.tool {
				refusedTool++
			} else {
				refusedChat++
			}
		}
		// A refusal is legitimate only when the call could not fit: even
		// counting every admitted call that may have been in flight or done
		// when it was decided (started before the refusal's reply), the run's
		// spend and reservations plus the refused call's cost exceed the
		// budget. Costs are exact (reservation == settlement), so nothing
		// was released that a later call could use.
		for _, r := range calls {
			if r.admitted {
				continue
			}
			var upper int64
			for _, a := range calls {
				if a.admitted && a.start.Before(r.end) {
					upper += a.cost
				}
			}
			require.Greater(t, upper+r.cost, int64(runBudget), "call %d (%d n$) refused while the run could hold it (at most %d n$ admitted then)", r.i, r.cost, upper)
		}
		sum, rows := ledger(run, admitted)
		t.Logf("concurrent loop of %d calls, 8 workers on 3 replicas: %d admitted (%d n$), refused %d chat and %d tool calls; ledger %d n$ of the %d n$ run budget",
			runLoopCalls, admitted, admittedCost, refusedChat, refusedTool, sum, runBudget)
		require.LessOrEqual(t, sum, int64(runBudget), "no overspend under concurrency")
		require.Equal(t, admittedCost, sum, "every admitted call is in the ledger at its cost")
		require.Equal(t, admitted, rows)
		require.Positive(t, refusedTool, "the budget stopped tool calls too")
		require.Positive(t, refusedChat, "the budget stopped model calls")
		// Costs are multiples of the tool call's: once the run is refused a
		// tool call, its budget is spent to the last nano-dollar.
		require.Equal(t, int64(runBudget), sum)
	})

	t.Run("other-runs-go-on", func(t *testing.T) {
		// The key's other runs are not stopped by a spent one.
		session(c.replicas[1].url, "loop-next")
		require.True(t, mustCall("loop-next", 0).admitted)
		require.True(t, mustCall("loop-next", 1).admitted)
		require.False(t, mustCall("loop-seq", 1).admitted, "the spent run stays spent")
	})
}
