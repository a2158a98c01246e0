package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestResponsesChainIsARun (issue 36): a chain of responses linked by
// previous_response_id is one run — named by the id of its first response,
// whose request carried no run — on a translated and on a native provider,
// its turns served by different replicas on PostgreSQL and Redis, one of
// them restarted mid-chain. The run's budget, three turns' worth, admits
// the second and third turns and refuses the fourth (the first, admitted
// before its id existed, is in the run's ledger, which seeds the run), and
// `tollgate spend logs --run` lists the chain's three calls.
func TestResponsesChainIsARun(t *testing.T) {
	c := startCluster(t, "closed")
	s := c.sys
	for _, tc := range []struct {
		name   string
		native bool
	}{{"translated", false}, {"native", true}} {
		t.Run(tc.name, func(t *testing.T) {
			model := "m-chain-" + tc.name
			flags := []string{"--type", "openai", "--base-url", s.mockURL + "/v1", "--credential-env", "CRED"}
			if tc.native {
				flags = append(flags, "--responses-api")
			}
			s.cli(nil, []string{"CRED=sk-chain-" + tc.name}, append([]string{"provider", "create", "p-" + model}, flags...)...)
			s.cli(nil, nil, "deployment", "create", "d-"+model, "--provider", "p-"+model, "--model", "mock-gpt")
			s.cli(nil, nil, "model", "create", model, "--deployments", "d-"+model)
			// 10 output tokens at $1000 per million: $0.01 a turn, the
			// history's input free, so a turn's worst case is its cost.
			s.cli(nil, nil, "price", "set", model, "--input", "0", "--output", "1000")
			keyID, key := s.createKey("--alias", "chain-"+tc.name, "--models", model, "--run-budget", "0.03", "--shortfall", "reject")
			c.waitKey(key)

			turn := func(r *faultReplica, prev string) (int, string, []byte) {
				return responsesTurn(s, r, key, model, prev, "x-mock-output-tokens", "100")
			}
			// committed waits until the key's n calls are in the ledger: a
			// native id's owner is written with its ledger row, which
			// another replica reads.
			committed := func(n int) {
				require.Eventually(t, func() bool {
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					defer cancel()
					conn, err := pgx.Connect(ctx, c.pg.URL)
					require.NoError(t, err)
					defer func() { _ = conn.Close(ctx) }()
					var got int
					require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM ledger WHERE key_id=$1`, keyID).Scan(&got))
					return got == n
				}, 10*time.Second, 50*time.Millisecond, "%d calls in the ledger", n)
			}

			code, first, b := turn(c.replicas[0], "")
			require.Equal(t, http.StatusOK, code, "%s", b)
			committed(1)
			code, id2, b := turn(c.replicas[1], first)
			require.Equal(t, http.StatusOK, code, "turn 2 on another replica: %s", b)
			committed(2)

			// Replica 0 restarts: the chain's run is in the store.
			r0 := c.replicas[0]
			r0.down.Store(true)
			require.NoError(t, r0.cmd.Signal(syscall.SIGTERM))
			select {
			case <-r0.done:
			case <-time.After(40 * time.Second):
				t.Fatal("replica 0 did not exit within 40s")
			}
			c.start(r0)
			c.waitKey(key)

			code, id3, b := turn(r0, id2)
			require.Equal(t, http.StatusOK, code, "turn 3 after the restart: %s", b)
			committed(3)
			code, _, b = turn(c.replicas[2], id3)
			require.NotEqual(t, http.StatusOK, code, "the fourth turn would overspend the run: %s", b)
			require.Contains(t, string(b), "budget_exceeded")
			require.Contains(t, string(b), "Budget exceeded for the run.")

			run := "key:" + keyID + "/" + first
			var logs struct {
				Entries []ledgerRow `json:"entries"`
			}
			s.cli(&logs, nil, "spend", "logs", "--run", run)
			require.Len(t, logs.Entries, 3, "the chain's three calls are the run's: %+v", logs.Entries)
			var total int64
			for _, e := range logs.Entries {
				total += e.Cost.NanoUSD
			}
			require.Equal(t, int64(30_000_000), total, "the run spent its budget, not more")
			t.Logf("%s: a chain of 3 responses on 3 replicas (one restarted) is run %s: $%.2f, the 4th turn refused", tc.name, run, float64(total)/1e9)
		})
	}
}

// TestResponsesNativeNextTurnOnAnotherReplica: an agent's next turn, sent
// the moment the reply arrives to another replica (before the replica that
// served the reply has committed the id's owner with its ledger row), is
// served, pinned to the deployment holding the response; an id no replica
// handed out is still refused. Five chains of two turns, each turn on the
// next replica, nothing waited for between them.
func TestResponsesNativeNextTurnOnAnotherReplica(t *testing.T) {
	c := startCluster(t, "closed")
	s := c.sys
	const model = "m-next-turn"
	s.cli(nil, []string{"CRED=sk-next-turn"}, "provider", "create", "p-"+model, "--type", "openai",
		"--base-url", s.mockURL+"/v1", "--credential-env", "CRED", "--responses-api")
	s.cli(nil, nil, "deployment", "create", "d-"+model, "--provider", "p-"+model, "--model", "mock-gpt")
	s.cli(nil, nil, "model", "create", model, "--deployments", "d-"+model)
	s.cli(nil, nil, "price", "set", model, "--input", "1", "--output", "2")
	_, key := s.createKey("--alias", "next-turn", "--models", model)
	c.waitKey(key)

	turn := func(r *faultReplica, prev string) (int, string, []byte) {
		return responsesTurn(s, r, key, model, prev)
	}
	for i := range 5 {
		a, b := c.replicas[i%3], c.replicas[(i+1)%3]
		code, id, body := turn(a, "")
		require.Equal(t, http.StatusOK, code, "%s", body)
		code, _, body = turn(b, id)
		require.Equal(t, http.StatusOK, code, "chain %d: the next turn on %s, at once: %s", i, b.name, body)
	}
	code, _, body := turn(c.replicas[0], "resp_never_handed_out")
	require.Equal(t, http.StatusNotFound, code, "%s", body)
	require.Contains(t, string(body), "previous_response_not_found")
}

// responsesTurn posts one Responses turn on model to replica r, continuing
// prev when it is set; it returns the status, the response's id (none for
// a refusal) and the body.
func responsesTurn(s *system, r *faultReplica, key, model, prev string, headers ...string) (int, string, []byte) {
	body := fmt.Sprintf(`{"model":%q,"input":"next step","max_output_tokens":10`, model)
	if prev != "" {
		body += fmt.Sprintf(`,"previous_response_id":%q`, prev)
	}
	code, _, b := s.postTo(r.url, key, "/v1/responses", body+"}", headers...)
	var out struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &out) // a refusal has no id
	return code, out.ID, b
}
