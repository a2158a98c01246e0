package admin_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

const ciKey = "tg-ci0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"

func TestApplyExampleIsIdempotent(t *testing.T) {
	doc, err := os.ReadFile("../deploy/tollgate.yaml")
	require.NoError(t, err)
	t.Setenv("OPENAI_API_KEY", "sk-openai")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant")
	t.Setenv("TOLLGATE_CI_KEY", ciKey)
	for name, open := range storeFactories(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			sealer := testSealer(t)
			ctx := context.Background()

			res, err := admin.Apply(ctx, st, sealer, doc, "ops")
			require.NoError(t, err)
			require.Empty(t, res.Updated)
			require.Subset(t, res.Created, []string{
				"provider/openai", "provider/anthropic", "deployment/openai-gpt-4o", "model/gpt-4o",
				"price/gpt-4o-mini", "price/claude-haiku-4-5", "org/acme", "team/platform", "user/alice", "user/bob",
				"customer/customer-42", "key/platform-ci", "global/global",
			})
			require.Empty(t, res.Secrets, "the key's secret came from the environment")

			// Second apply: nothing changes.
			again, err := admin.Apply(ctx, st, sealer, doc, "ops")
			require.NoError(t, err)
			require.Empty(t, again.Created)
			require.Empty(t, again.Updated)
			require.ElementsMatch(t, res.Created, again.Unchanged)

			p, _, err := store.Get[store.Provider](ctx, st, "openai")
			require.NoError(t, err)
			plain, err := sealer.Open(p.Credential)
			require.NoError(t, err)
			require.Equal(t, "sk-openai", string(plain))

			k, _, err := store.Get[store.Key](ctx, st, "platform-ci")
			require.NoError(t, err)
			require.Equal(t, []store.KeyHash{{Hash: secret.Hash(ciKey)}}, k.Hashes)
			require.EqualValues(t, 20_000_000_000, k.Limits.Budgets[0].Limit)

			bob, _, err := store.Get[store.User](ctx, st, "bob")
			require.NoError(t, err)
			require.Equal(t, []string{"platform"}, bob.Teams)
			alice, _, err := store.Get[store.User](ctx, st, "alice")
			require.NoError(t, err)
			require.Equal(t, "alice@example.com", alice.Email)
			require.Equal(t, []string{"platform"}, alice.Teams)

			// A changed credential is an update of the provider only.
			t.Setenv("OPENAI_API_KEY", "sk-openai-2")
			changed := []byte(string(doc) + "\n")
			third, err := admin.Apply(ctx, st, sealer, changed, "ops")
			require.NoError(t, err)
			require.Equal(t, []string{"provider/openai"}, third.Updated)

			audit, err := st.ListAudit(ctx, 0, 1000)
			require.NoError(t, err)
			for _, a := range audit {
				require.NotContains(t, a.Detail, "sk-openai")
				require.NotContains(t, a.Detail, ciKey)
			}
			require.Equal(t, "ops", audit[len(audit)-1].Actor)
		})
	}
}

func TestApplyMembershipAndGeneratedSecrets(t *testing.T) {
	st := memstore.New()
	ctx := context.Background()
	doc := "teams:\n  - {id: t1, members: [a, b]}\nkeys:\n  - {id: k1, team: t1, user: a}\n"
	res, err := admin.Apply(ctx, st, nil, []byte(doc), "ops")
	require.NoError(t, err)
	require.Equal(t, []string{"team/t1", "key/k1", "user/a", "user/b"}, res.Created)
	require.Regexp(t, `^tg-`, res.Secrets["k1"])
	k, _, err := store.Get[store.Key](ctx, st, "k1")
	require.NoError(t, err)
	require.Equal(t, secret.Hash(res.Secrets["k1"]), k.Hashes[0].Hash)

	res, err = admin.Apply(ctx, st, nil, []byte("teams:\n  - {id: t1, members: [b]}\n"), "ops")
	require.NoError(t, err)
	require.Equal(t, []string{"team/t1", "user/a"}, res.Updated)
	a, _, err := store.Get[store.User](ctx, st, "a")
	require.NoError(t, err)
	require.Empty(t, a.Teams)
	k2, _, err := store.Get[store.Key](ctx, st, "k1")
	require.NoError(t, err)
	require.Equal(t, k.Hashes, k2.Hashes, "keys not in the document are kept")
}

func TestApplyErrors(t *testing.T) {
	t.Setenv("TG_TEST_UNSET_VAR", "")
	require.NoError(t, os.Unsetenv("TG_TEST_UNSET_VAR"))
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"unknown field", "providerz: []\n", "field providerz not found"},
		{"missing env", "providers:\n  - {id: p, type: openai, base_url: 'https://x', credential: '${TG_TEST_UNSET_VAR}'}\n", "providers[0].credential: environment variable TG_TEST_UNSET_VAR is not set"},
		{"bad type", "providers:\n  - {id: p, type: watsonx, base_url: 'https://x'}\n", "providers[0].type"},
		{"unknown provider", "deployments:\n  - {id: d, provider: ghost, provider_model: m}\n", `deployments[0].provider: provider "ghost"`},
		{"unknown deployment", "models:\n  - {id: m, deployments: [ghost]}\n", "models[0].deployments[0]"},
		{"bad budget", "teams:\n  - {id: t, limits: {budgets: [{limit: '1.5.0', period: monthly}]}}\n", "teams[0].limits.budgets[0].limit"},
		{"bad period", "teams:\n  - {id: t, limits: {budgets: [{limit: '1', period: yearly}]}}\n", "teams[0].limits.budgets[0].period"},
		{"duplicate id", "orgs:\n  - {id: o}\n  - {id: o}\n", "orgs[1].id"},
		{"bad key secret", "keys:\n  - {id: k, secret: short}\n", "keys[0].secret"},
		{"bad price", "prices:\n  - {model: m, input: '1e3', output: '1'}\n", "prices[0] (m): input"},
		{"credential without master key", "providers:\n  - {id: p, type: openai, base_url: 'https://x', credential: sk}\n", "no master key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New()
			_, err := admin.Apply(context.Background(), st, nil, []byte(tt.doc), "ops")
			require.ErrorContains(t, err, tt.want)
			objs, err := st.List(context.Background(), store.KindOrg, "", 0)
			require.NoError(t, err)
			require.Empty(t, objs, "nothing written when the document is invalid")
		})
	}
}

func TestApplyRPC(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		resp, err := c.config.Apply(e.admin(t), &adminv1.ApplyRequest{Document: "orgs:\n  - {id: acme, name: Acme}\n"})
		require.NoError(t, err)
		require.Equal(t, []string{"org/acme"}, resp.GetCreated())
		resp, err = c.config.Apply(e.admin(t), &adminv1.ApplyRequest{Document: "orgs:\n  - {id: acme, name: Acme}\n"})
		require.NoError(t, err)
		require.Equal(t, []string{"org/acme"}, resp.GetUnchanged())
		_, err = c.config.Apply(e.admin(t), &adminv1.ApplyRequest{Document: "orgs: 3\n"})
		requireCode(t, codes.InvalidArgument, err)
		_, err = c.config.Apply(e.admin(t), &adminv1.ApplyRequest{})
		require.ErrorContains(t, err, "invalid document")
	})
}

func TestApplyGovernance(t *testing.T) {
	st := memstore.New()
	ctx := context.Background()
	doc := `teams:
  - id: agents
    limits:
      budgets:
        - {limit: "500", period: monthly}
        - {limit: "400", period: monthly, soft: true}
      run: {budget: "2.50", rpm: 30, ttl: 30m}
`
	_, err := admin.Apply(ctx, st, nil, []byte(doc), "ops")
	require.NoError(t, err)
	tm, _, err := store.Get[store.Team](ctx, st, "agents")
	require.NoError(t, err)
	require.Equal(t, []kernel.BudgetWindow{
		{Limit: 500 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodMonthly}},
		{Limit: 400 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodMonthly}, Soft: true},
	}, tm.Limits.Budgets)
	require.Equal(t, &kernel.RunPolicy{Budget: 2_500_000_000, RPM: 30, TTL: 30 * time.Minute}, tm.Limits.Run)

	_, err = admin.Apply(ctx, memstore.New(), nil, []byte("teams:\n  - {id: t, limits: {run: {ttl: soon}}}\n"), "ops")
	require.ErrorContains(t, err, "teams[0].limits.run.ttl")
}

// TestApplyPassthrough: keys' and teams' pass-through grants and a
// provider's price per call are applied, and a malformed grant is refused.
func TestApplyPassthrough(t *testing.T) {
	st := memstore.New()
	ctx := context.Background()
	doc := `providers:
  - {id: oai, type: openai, base_url: "https://api.openai.com/v1", price_per_call: "0.002"}
teams:
  - {id: t1, passthrough: ["oai:/v1/images/*"]}
keys:
  - {id: k1, team: t1, passthrough: ["oai:/v1/models", "oai:/v1/files/**"]}
`
	_, err := admin.Apply(ctx, st, nil, []byte(doc), "ops")
	require.NoError(t, err)
	p, _, err := store.Get[store.Provider](ctx, st, "oai")
	require.NoError(t, err)
	require.Equal(t, kernel.Money(2_000_000), p.PricePerCall)
	k, _, err := store.Get[store.Key](ctx, st, "k1")
	require.NoError(t, err)
	require.Equal(t, []string{"oai:/v1/models", "oai:/v1/files/**"}, k.Passthrough)
	tm, _, err := store.Get[store.Team](ctx, st, "t1")
	require.NoError(t, err)
	require.Equal(t, []string{"oai:/v1/images/*"}, tm.Passthrough)

	_, err = admin.Apply(ctx, st, nil, []byte("keys:\n  - {id: k2, passthrough: [\"/v1/models\"]}\n"), "ops")
	require.ErrorIs(t, err, admin.ErrInvalid)
}

// TestApplyTags: tag budgets and a key's default tags; a malformed tag is
// refused with its place in the document.
func TestApplyTags(t *testing.T) {
	st := memstore.New()
	ctx := context.Background()
	doc := `tag_budgets:
  - {tag: feature=search, limits: {budgets: [{limit: "10", period: monthly}]}}
keys:
  - {id: search-agent, tags: {team: search, env: prod}}
`
	res, err := admin.Apply(ctx, st, nil, []byte(doc), "ops")
	require.NoError(t, err)
	require.Contains(t, res.Created, "tag/feature=search")
	tb, _, err := store.Get[store.TagBudget](ctx, st, "feature=search")
	require.NoError(t, err)
	require.Equal(t, []kernel.BudgetWindow{{Limit: 10 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodMonthly}}}, tb.Limits.Budgets)
	k, _, err := store.Get[store.Key](ctx, st, "search-agent")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"team": "search", "env": "prod"}, k.Tags)
	res, err = admin.Apply(ctx, st, nil, []byte(doc), "ops")
	require.NoError(t, err)
	require.False(t, res.Changed(), "applying again changes nothing")

	_, err = admin.Apply(ctx, memstore.New(), nil, []byte("tag_budgets:\n  - {tag: feature}\n"), "ops")
	require.ErrorContains(t, err, "tag_budgets[0].tag")
	_, err = admin.Apply(ctx, memstore.New(), nil, []byte("tag_budgets:\n  - {tag: feature=x, limits: {run: {budget: 1}}}\n"), "ops")
	require.ErrorContains(t, err, "tag_budgets[0].limits: a tag has no runs", "as SetTagBudget refuses")
	_, err = admin.Apply(ctx, memstore.New(), nil, []byte("keys:\n  - {id: k, tags: {\"bad name\": x}}\n"), "ops")
	require.ErrorContains(t, err, "keys[0].tags")
}
