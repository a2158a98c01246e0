package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/cli"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
	"github.com/tollgate-ai/tollgate/store/postgres"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// server is an admin API on a loopback port.
type server struct {
	addr   string
	key    string
	st     store.Store
	sealer *secret.Sealer
}

func startServer(t *testing.T, st store.Store) *server {
	t.Helper()
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	key, created, err := admin.Bootstrap(context.Background(), st, "")
	require.NoError(t, err)
	require.True(t, created)
	srv := admin.New(st, sealer, admin.WithLogger(slog.New(slog.DiscardHandler)))
	g := grpc.NewServer(admin.ServerOptions(srv)...)
	srv.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return &server{addr: lis.Addr().String(), key: key, st: st, sealer: sealer}
}

// run runs one command line against the server with its admin key.
func (s *server) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return s.runAs(t, s.key, args...)
}

func (s *server) runAs(t *testing.T, key string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	full := append(append([]string{}, args...), "--addr", s.addr, "--admin-key", key)
	err := cli.Main(ctx, full, &out, &errOut)
	return out.String(), err
}

func stores(t *testing.T) map[string]func(t *testing.T) store.Store {
	t.Helper()
	return map[string]func(t *testing.T) store.Store{
		"memstore": func(t *testing.T) store.Store {
			t.Helper()
			st := memstore.New()
			t.Cleanup(func() { _ = st.Close(context.Background()) })
			return st
		},
		"sqlite": func(t *testing.T) store.Store {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tollgate.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close(context.Background()) })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := postgres.Open(ctx, testenv.FreshPostgres(t))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close(context.Background()) })
			return st
		},
	}
}

type step struct {
	args    []string
	want    []string // substrings of stdout
	wantErr string   // substring of the error
}

func runSteps(t *testing.T, s *server, steps []step) {
	t.Helper()
	for _, st := range steps {
		out, err := s.run(t, st.args...)
		if st.wantErr != "" {
			require.ErrorContains(t, err, st.wantErr, "%v", st.args)
			continue
		}
		require.NoError(t, err, "%v", st.args)
		for _, w := range st.want {
			require.Contains(t, out, w, "%v\n%s", st.args, out)
		}
	}
}

func TestCommands(t *testing.T) {
	t.Setenv("TEST_OPENAI_KEY", "sk-from-env")
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, open(t))
			runSteps(t, s, []step{
				// Organizations, teams, users, customers.
				{args: []string{"org", "create", "acme", "--name", "Acme", "--budget", "1000/monthly"}, want: []string{"acme", "$1000.00/monthly"}},
				{args: []string{"org", "update", "acme", "--rpm", "5000"}, want: []string{"5000"}},
				{args: []string{"org", "get", "acme"}, want: []string{"Acme", "5000"}},
				{args: []string{"org", "list"}, want: []string{"acme", "$1000.00/monthly"}},
				{args: []string{"team", "create", "platform", "--org", "acme", "--budget", "100", "--budget-period", "monthly", "--rpm", "600"}, want: []string{"$100.00/monthly", "600"}},
				{args: []string{"team", "add-member", "platform", "alice"}, want: []string{"alice"}},
				{args: []string{"user", "create", "bob", "--email", "bob@example.com"}, want: []string{"bob@example.com"}},
				{args: []string{"user", "update", "bob", "--org", "acme", "--max-parallel", "3"}, want: []string{"acme", "3"}},
				{args: []string{"team", "add-member", "platform", "bob"}, want: []string{"alice, bob"}},
				{args: []string{"user", "get", "bob"}, want: []string{"platform"}},
				{args: []string{"user", "list"}, want: []string{"alice", "bob@example.com"}},
				{args: []string{"team", "remove-member", "platform", "bob"}, want: []string{"MEMBERS"}},
				{args: []string{"team", "update", "platform", "--name", "Platform"}, want: []string{"Platform"}},
				{args: []string{"team", "get", "platform"}, want: []string{"Platform", "alice"}},
				{args: []string{"team", "list", "--org", "acme"}, want: []string{"platform", "Platform"}},
				{args: []string{"user", "delete", "bob"}, want: []string{"user bob deleted"}},
				{args: []string{"customer", "create", "cust-1", "--budget", "5/daily", "--shortfall", "reject"}, want: []string{"$5.00/daily", "reject"}},
				{args: []string{"customer", "update", "cust-1", "--name", "Customer One"}, want: []string{"Customer One"}},
				{args: []string{"customer", "get", "cust-1"}, want: []string{"Customer One"}},
				{args: []string{"customer", "list"}, want: []string{"cust-1"}},
				{args: []string{"customer", "delete", "cust-1"}, want: []string{"customer cust-1 deleted"}},
				{args: []string{"team", "create", "tmp"}, want: []string{"tmp"}},
				{args: []string{"team", "delete", "tmp"}, want: []string{"team tmp deleted"}},
				{args: []string{"org", "create", "tmp-org"}, want: []string{"tmp-org"}},
				{args: []string{"org", "delete", "tmp-org"}, want: []string{"organization tmp-org deleted"}},

				// Providers, deployments, models, prices.
				{args: []string{"provider", "create", "openai", "--type", "openai", "--base-url", "https://api.openai.com/v1", "--credential-env", "TEST_OPENAI_KEY"}, want: []string{"set (write-only)"}},
				{args: []string{"provider", "update", "openai", "--base-url", "https://proxy.example.com/v1"}, want: []string{"https://proxy.example.com/v1", "set (write-only)"}},
				{args: []string{"provider", "get", "openai"}, want: []string{"openai", "set (write-only)"}},
				{args: []string{"provider", "list"}, want: []string{"https://proxy.example.com/v1"}},
				{args: []string{"provider", "create", "az", "--type", "azure", "--base-url", "https://x.openai.azure.com/openai", "--api-version", "2024-10-21"}, want: []string{"2024-10-21", "none"}},
				{args: []string{"provider", "delete", "az"}, want: []string{"provider az deleted"}},
				{args: []string{"deployment", "create", "d1", "--provider", "openai", "--model", "gpt-4o", "--weight", "2"}, want: []string{"gpt-4o", "2"}},
				{args: []string{"deployment", "create", "d2", "--provider", "openai", "--model", "gpt-4o-mini"}, want: []string{"gpt-4o-mini"}},
				{args: []string{"deployment", "update", "d1", "--tpm", "100000"}, want: []string{"100000"}},
				{args: []string{"deployment", "get", "d1"}, want: []string{"100000"}},
				{args: []string{"deployment", "list", "--provider", "openai"}, want: []string{"d1", "d2"}},
				{args: []string{"deployment", "delete", "d2"}, want: []string{"deployment d2 deleted"}},
				{args: []string{"model", "create", "gpt-4o", "--deployments", "d1", "--default-max-tokens", "1024"}, want: []string{"d1", "1024"}},
				{args: []string{"model", "update", "gpt-4o", "--default-max-tokens", "2048"}, want: []string{"2048"}},
				{args: []string{"model", "get", "gpt-4o"}, want: []string{"2048"}},
				{args: []string{"model", "list"}, want: []string{"gpt-4o", "d1"}},
				// Routing: deployment policy, strategy, retries, fallbacks.
				{args: []string{"deployment", "create", "d3", "--provider", "openai", "--model", "gpt-4o", "--cooldown", "30s", "--allowed-fails", "3", "--timeout", "60s", "--first-byte-timeout", "10s"}, want: []string{"30s", "1m0s", "10s"}},
				{args: []string{"deployment", "update", "d3", "--cooldown", "5s"}, want: []string{"5s", "1m0s"}},
				{args: []string{"model", "create", "other", "--deployments", "d3"}, want: []string{"weighted"}},
				{args: []string{"model", "create", "routed", "--deployments", "d1,d3", "--routing", "least-busy", "--retries", "1", "--fallbacks", "other,gpt-4o", "--context-window-fallbacks", "gpt-4o", "--content-policy-fallbacks", "other"}, want: []string{"least-busy", "other, gpt-4o"}},
				{args: []string{"model", "update", "routed", "--routing", "latency", "--retries", "0"}, want: []string{"latency", "RETRIES"}},
				{args: []string{"model", "create", "bad", "--deployments", "d1", "--routing", "fastest"}, wantErr: "routing"},
				{args: []string{"model", "create", "bad", "--deployments", "d1", "--fallbacks", "ghost"}, wantErr: "ghost"},
				{args: []string{"model", "delete", "routed"}, want: []string{"deleted"}},
				{args: []string{"model", "delete", "other"}, want: []string{"deleted"}},
				{args: []string{"deployment", "delete", "d3"}, want: []string{"deleted"}},
				{args: []string{"model", "create", "tmp", "--deployments", "d1"}, want: []string{"tmp"}},
				{args: []string{"model", "delete", "tmp"}, want: []string{"model tmp deleted"}},
				{args: []string{"price", "set", "gpt-4o", "--input", "2.50", "--output", "10", "--cached-input", "1.25"}, want: []string{"$2.50", "$10.00", "$1.25"}},
				{args: []string{"price", "get", "gpt-4o"}, want: []string{"$2.50"}},
				{args: []string{"price", "defaults"}, want: []string{"default prices stored", "claude-sonnet-4-5"}},
				{args: []string{"price", "list"}, want: []string{"gpt-4o-mini", "$0.15", "$0.075", "claude-haiku-4-5", "$1.25"}},
				{args: []string{"price", "delete", "claude-haiku-4-5"}, want: []string{"deleted"}},

				// Keys.
				{args: []string{"key", "create", "--id", "k1", "--team", "platform", "--alias", "ci", "--budget", "10.50", "--budget-period", "monthly", "--rpm", "60", "--meta", "env=ci"}, want: []string{"SECRET", "tg-", "$10.50/monthly", "env=ci", "acme"}},
				{args: []string{"key", "list", "--team", "platform"}, want: []string{"k1", "ci", "active", "$10.50/monthly"}},
				{args: []string{"key", "update", "k1", "--tpm", "1000", "--alias", "ci2", "--budget", "20/monthly", "--budget", "1/daily", "--soft-budget", "15/monthly", "--run-budget", "2.50", "--run-rpm", "30", "--run-ttl", "30m"}, want: []string{"ci2", "1000", "$20.00/monthly, $1.00/daily, $15.00/monthly (soft)"}},
				{args: []string{"key", "get", "k1"}, want: []string{"ci2", "60"}},
				{args: []string{"key", "rotate", "k1", "--grace", "1h"}, want: []string{"SECRET", "OLD SECRET VALID UNTIL"}},
				{args: []string{"key", "revoke", "k1"}, want: []string{"key k1 revoked"}},
				{args: []string{"key", "list", "--status", "revoked"}, want: []string{"k1", "revoked"}},
			})

			ctx := context.Background()
			k, _, err := store.Get[store.Key](ctx, s.st, "k1")
			require.NoError(t, err)
			require.Equal(t, []kernel.BudgetWindow{
				{Limit: 20 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodMonthly}},
				{Limit: kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodDaily}},
				{Limit: 15 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodMonthly}, Soft: true},
			}, k.Limits.Budgets)
			require.Equal(t, &kernel.RunPolicy{Budget: 2_500_000_000, RPM: 30, TTL: 30 * time.Minute}, k.Limits.Run)
			p, _, err := store.Get[store.Provider](ctx, s.st, "openai")
			require.NoError(t, err)
			plain, err := s.sealer.Open(p.Credential)
			require.NoError(t, err)
			require.Equal(t, "sk-from-env", string(plain))

			// JSON output is exact: nano-USD and dollars.
			out, err := s.run(t, "key", "get", "k1", "-o", "json")
			require.NoError(t, err)
			var doc struct {
				Key struct {
					Limits struct {
						Budgets []struct {
							Limit struct {
								NanoUSD string `json:"nano_usd"`
								Dollars string `json:"dollars"`
							} `json:"limit"`
							Period string `json:"period"`
						} `json:"budgets"`
					} `json:"limits"`
					Status string `json:"status"`
				} `json:"key"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			require.Equal(t, "20000000000", doc.Key.Limits.Budgets[0].Limit.NanoUSD)
			require.Equal(t, "20", doc.Key.Limits.Budgets[0].Limit.Dollars)
			require.Equal(t, "PERIOD_KIND_MONTHLY", doc.Key.Limits.Budgets[0].Period)
			require.Equal(t, "KEY_STATUS_REVOKED", doc.Key.Status)

			out, err = s.run(t, "key", "list", "-o", "json")
			require.NoError(t, err)
			var list struct {
				Keys []struct {
					ID string `json:"id"`
				} `json:"keys"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &list))
			require.Len(t, list.Keys, 1)
		})
	}
}

func TestSpendAndAuditCommands(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, open(t))
			ctx := context.Background()
			day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
			var entries []store.LedgerEntry
			for i := range 3 {
				end := day.Add(time.Duration(i)*24*time.Hour + time.Hour)
				entries = append(entries, store.LedgerEntry{
					RequestID: "req-" + string(rune('a'+i)), KeyID: "k1", TeamID: "platform", Model: "gpt-4o",
					Usage: kernel.Usage{Input: 1000, Output: 100}, Cost: kernel.Money(i+1) * 1_250_000, HTTPStatus: 200,
					StartedAt: end.Add(-time.Second), EndedAt: end,
				})
			}
			entries[1].RunID = "key:k1/agent-7" // one call of a run
			entries[0].Tags = []string{"env=prod", "feature=search"}
			entries[2].Tags = []string{"feature=chat"}
			require.NoError(t, s.st.Append(ctx, entries...))
			require.NoError(t, s.st.Flush(ctx))
			runSteps(t, s, []step{
				{args: []string{"spend", "total", "--run", "key:k1/agent-7", "--since", "2026-03-01"}, want: []string{"run key:k1/agent-7", "$0.0025", " 1 ", "1100"}},
				{args: []string{"spend", "logs", "--run", "key:k1/agent-7", "--since", "2026-03-01"}, want: []string{"req-b", "$0.0025"}},
				{args: []string{"spend", "total", "--team", "platform", "--since", "2026-03-10", "--until", "2026-03-13"}, want: []string{"team platform", "$0.0075", "3", "3300"}},
				{args: []string{"spend", "total", "--model", "gpt-4o", "--since", "2026-03-11", "--until", "2026-03-13"}, want: []string{"$0.00625", "2"}},
				{args: []string{"spend", "daily", "--key", "k1", "--since", "2026-03-10", "--until", "2026-03-13"}, want: []string{"2026-03-10  $0.00125", "2026-03-11  $0.0025", "2026-03-12  $0.00375"}},
				{args: []string{"spend", "logs", "--team", "platform", "--since", "2026-03-01"}, want: []string{"req-a", "req-c", "1000", "$0.00375", "completed"}},
				{args: []string{"spend", "logs", "--since", "2026-03-01", "--page-size", "1"}, want: []string{"req-a"}},
				{args: []string{"org", "create", "acme"}, want: []string{"acme"}},
				{args: []string{"audit", "list"}, want: []string{"admin.create", "org.create", "org/acme"}},
				{args: []string{"audit", "list", "-o", "json"}, want: []string{`"org.create"`, `"actor"`}},
				{args: []string{"spend", "total", "--tag", "feature=search", "--since", "2026-03-01"}, want: []string{"tag feature=search", "$0.00125", " 1 "}},
				{args: []string{"spend", "by", "--group", "tag:feature", "--since", "2026-03-01"}, want: []string{"TAG:FEATURE", "chat         $0.00375  1", "search       $0.00125  1"}},
				{args: []string{"spend", "by", "--group", "nope", "--since", "2026-03-01"}, wantErr: "group_by"},
				{args: []string{"key", "create", "--id", "tagged", "--tags", "team=search,env=prod"}, want: []string{"tagged"}},
				{args: []string{"key", "get", "tagged", "-o", "json"}, want: []string{`"team": "search"`, `"env": "prod"`}},
				{args: []string{"key", "update", "tagged", "--tags", "env=dev"}, want: []string{"tagged"}},
				{args: []string{"key", "get", "tagged", "-o", "json"}, want: []string{`"env": "dev"`}},
				{args: []string{"key", "create", "--tags", "bad"}, wantErr: "not name=value"},
				{args: []string{"tag-budget", "set", "feature=search", "--budget", "10/monthly"}, want: []string{"feature=search", "$10"}},
				{args: []string{"tag-budget", "list"}, want: []string{"feature=search", "$10"}},
				{args: []string{"tag-budget", "set", "feature", "--budget", "10/monthly"}, wantErr: "not name=value"},
				{args: []string{"tag-budget", "delete", "feature=search"}, want: []string{"tag budget feature=search deleted"}},
				{args: []string{"spend", "total", "--team", "a", "--key", "b"}, wantErr: "give one of"},
				{args: []string{"spend", "total", "--since", "yesterday"}, wantErr: "--since"},
			})
		})
	}
}

func TestAdminKeyCommands(t *testing.T) {
	s := startServer(t, memstore.New())
	out, err := s.run(t, "team", "create", "red")
	require.NoError(t, err)
	require.Contains(t, out, "red")
	out, err = s.run(t, "admin-key", "create", "--role", "viewer")
	require.NoError(t, err)
	viewer := field(t, out, "SECRET")
	id := field(t, out, "ID")
	out, err = s.run(t, "admin-key", "create", "--role", "team-admin", "--team", "red")
	require.NoError(t, err)
	teamAdmin := field(t, out, "SECRET")

	out, err = s.runAs(t, viewer, "admin-key", "whoami")
	require.NoError(t, err)
	require.Contains(t, out, "viewer")
	_, err = s.runAs(t, viewer, "key", "create")
	require.ErrorContains(t, err, "not allowed: role viewer may not call /tollgate.admin.v1.KeyService/CreateKey")
	out, err = s.runAs(t, teamAdmin, "key", "create", "--alias", "mine")
	require.NoError(t, err)
	require.Contains(t, out, "red")
	_, err = s.runAs(t, teamAdmin, "key", "list", "--team", "blue")
	require.ErrorContains(t, err, "may act on its own team only")

	out, err = s.run(t, "admin-key", "list")
	require.NoError(t, err)
	require.Contains(t, out, "team-admin")
	require.Contains(t, out, id)
	out, err = s.run(t, "admin-key", "delete", id)
	require.NoError(t, err)
	require.Contains(t, out, "deleted")
	_, err = s.runAs(t, viewer, "key", "list")
	require.ErrorContains(t, err, "refused the admin key")
}

// field returns the value of a NAME row of a detail view.
func field(t *testing.T, out, name string) string {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no %s in\n%s", name, out)
	return ""
}

func TestApplyCommand(t *testing.T) {
	s := startServer(t, memstore.New())
	t.Setenv("TEST_CLI_CRED", "sk-cli: with a colon # and hash")
	path := filepath.Join(t.TempDir(), "tollgate.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`providers:
  - id: p
    type: anthropic
    base_url: https://api.anthropic.com/v1
    credential: ${TEST_CLI_CRED}
deployments:
  - {id: d, provider: p, provider_model: claude, cooldown: 30s, allowed_fails: 3, timeout: 60s, first_byte_timeout: 10s}
models:
  - {id: big, deployments: [d]}
  - {id: m, deployments: [d], routing: least-busy, retries: 2, fallbacks: [big], context_window_fallbacks: [big], content_policy_fallbacks: [big]}
keys:
  - {id: k, alias: generated}
`), 0o600))
	out, err := s.run(t, "apply", "-f", path)
	require.NoError(t, err)
	require.Contains(t, out, "5 created, 0 updated, 0 unchanged")
	require.Contains(t, out, "secret of key k (shown only now): tg-")
	out, err = s.run(t, "apply", "-f="+path)
	require.NoError(t, err)
	require.Contains(t, out, "0 created, 0 updated, 5 unchanged")
	m, _, err := store.Get[store.ModelGroup](context.Background(), s.st, "m")
	require.NoError(t, err)
	require.Equal(t, store.RoutingLeastBusy, m.Routing)
	require.Equal(t, []string{"big"}, m.ContentPolicyFallbacks)
	dep, _, err := store.Get[store.Deployment](context.Background(), s.st, "d")
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, dep.FirstByteTimeout)

	p, _, err := store.Get[store.Provider](context.Background(), s.st, "p")
	require.NoError(t, err)
	plain, err := s.sealer.Open(p.Credential)
	require.NoError(t, err)
	require.Equal(t, "sk-cli: with a colon # and hash", string(plain), "expanded by the CLI, quoted safely")

	_, err = s.run(t, "apply", "-f", filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "cannot read")
}

func TestErrorsSayWhatToDo(t *testing.T) {
	s := startServer(t, memstore.New())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := lis.Addr().String()
	require.NoError(t, lis.Close())

	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{
			"unreachable",
			[]string{"key", "list", "--addr", closed, "--admin-key", "x"},
			nil,
			"cannot reach the admin API at " + closed + ": is `tollgate run` running? set --addr or TOLLGATE_ADDR",
		},
		{"no admin key", []string{"key", "list", "--addr", s.addr}, map[string]string{cli.EnvAdminKey: ""}, "no admin key: set --admin-key or TOLLGATE_ADMIN_KEY"},
		{"env address and key", []string{"key", "get", "nope"}, map[string]string{cli.EnvAddr: s.addr, cli.EnvAdminKey: s.key}, `not found: key "nope" not found`},
		{"bad dollars", []string{"key", "create", "--budget", "1.2.3", "--addr", s.addr}, nil, `--budget "1.2.3"`},
		{"bad period", []string{"key", "create", "--budget", "1", "--budget-period", "yearly", "--addr", s.addr}, nil, "use total, daily, weekly, monthly (optionally @TIME/ZONE"},
		{"too many decimals", []string{"price", "set", "m", "--input", "0.0000000001", "--output", "1"}, nil, "at most 9 decimals"},
		{"unknown command", []string{"frobnicate"}, nil, "unknown command"},
		{"missing verb", []string{"key"}, nil, "tollgate key needs one of: create, list, get, update, revoke, rotate"},
		{"missing argument", []string{"key", "get"}, nil, "takes ID"},
		{"nothing to update", []string{"key", "update", "k", "--addr", s.addr}, nil, "nothing to change"},
		{"server validation", []string{"key", "create", "--id", "bad id", "--addr", s.addr, "--admin-key", s.key}, nil, "invalid request: invalid id"},
		{"already exists", []string{"org", "create", "o", "--addr", s.addr, "--admin-key", s.key}, nil, ""},
		{"already exists again", []string{"org", "create", "o", "--addr", s.addr, "--admin-key", s.key}, nil, "already exists"},
		{"bad output", []string{"key", "list", "-o", "yaml"}, nil, "-o must be table or json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			err := cli.Main(ctx, tt.args, &out, &errOut)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestUsage(t *testing.T) {
	var b bytes.Buffer
	cli.Usage(&b)
	for _, c := range []string{
		"key create", "key rotate ID", "team add-member TEAM USER", "user create", "org create", "customer create",
		"provider create", "deployment create", "model create", "price set MODEL", "price defaults", "spend daily", "audit list", "apply -f FILE",
	} {
		require.Contains(t, b.String(), "tollgate "+c)
	}
	var out bytes.Buffer
	require.NoError(t, cli.Main(context.Background(), []string{"help"}, &out, &out))
	require.Equal(t, b.String(), out.String())
}
