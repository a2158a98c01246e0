package admin_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/internal/secret"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

func monthly(dollars string) *adminv1.BudgetWindow {
	return &adminv1.BudgetWindow{Limit: &adminv1.Money{Dollars: dollars}, Period: adminv1.PeriodKind_PERIOD_KIND_MONTHLY}
}

func TestKeyLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		keys := adminv1.NewKeyServiceClient(e.conn)
		ctx := e.admin(t)

		created, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{
			Id: "k1", Alias: "ci", Metadata: map[string]string{"env": "ci"},
			Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{monthly("10.50")}, Rpm: 60, Models: []string{"gpt-4o"}},
		})
		require.NoError(t, err)
		sec := created.GetSecret()
		require.Regexp(t, `^tg-[0-9A-Za-z]{43}$`, sec)
		require.Equal(t, sec[:7], created.GetKey().GetPrefix())
		want := &adminv1.Key{
			Id: "k1", Alias: "ci", Prefix: sec[:7], Metadata: map[string]string{"env": "ci"},
			Status: adminv1.KeyStatus_KEY_STATUS_ACTIVE, CreatedAt: timestamppb.New(e.clock.Now()),
			Limits: &adminv1.Limits{
				Budgets: []*adminv1.BudgetWindow{{Limit: &adminv1.Money{NanoUsd: 10_500_000_000, Dollars: "10.5"}, Period: adminv1.PeriodKind_PERIOD_KIND_MONTHLY}},
				Rpm:     60, Models: []string{"gpt-4o"},
				Mode: adminv1.BudgetMode_BUDGET_MODE_STRICT, Shortfall: adminv1.Shortfall_SHORTFALL_CLAMP,
			},
		}
		require.Empty(t, cmpDiff(want, created.GetKey()))

		// Stored: only the hash, the budget exact in nano-USD.
		k, _, err := store.Get[store.Key](ctx, e.st, "k1")
		require.NoError(t, err)
		require.Equal(t, []store.KeyHash{{Hash: secret.Hash(sec)}}, k.Hashes)
		require.EqualValues(t, 10_500_000_000, k.Limits.Budgets[0].Limit)

		got, err := keys.GetKey(ctx, &adminv1.GetKeyRequest{Id: "k1"})
		require.NoError(t, err)
		require.Empty(t, cmpDiff(want, got.GetKey()))

		_, err = keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "k1"})
		requireCode(t, codes.AlreadyExists, err)
		_, err = keys.GetKey(ctx, &adminv1.GetKeyRequest{Id: "nope"})
		requireCode(t, codes.NotFound, err)

		upd, err := keys.UpdateKey(ctx, &adminv1.UpdateKeyRequest{
			Id: "k1", Alias: "ci-2",
			Limits:     &adminv1.Limits{Tpm: 1000, Rpm: 5, Mode: adminv1.BudgetMode_BUDGET_MODE_ESTIMATE},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"alias", "limits.tpm", "limits.mode"}},
		})
		require.NoError(t, err)
		require.Equal(t, "ci-2", upd.GetKey().GetAlias())
		require.EqualValues(t, 1000, upd.GetKey().GetLimits().GetTpm())
		require.EqualValues(t, 60, upd.GetKey().GetLimits().GetRpm(), "rpm not in the mask: unchanged")
		require.Equal(t, adminv1.BudgetMode_BUDGET_MODE_ESTIMATE, upd.GetKey().GetLimits().GetMode())
		require.Len(t, upd.GetKey().GetLimits().GetBudgets(), 1)

		// Rotate with the default grace: the old secret stays valid 24h.
		rot, err := keys.RotateKey(ctx, &adminv1.RotateKeyRequest{Id: "k1"})
		require.NoError(t, err)
		require.NotEqual(t, sec, rot.GetSecret())
		require.Equal(t, e.clock.Now().Add(24*time.Hour), rot.GetKey().GetPreviousSecretValidUntil().AsTime())
		k, _, err = store.Get[store.Key](ctx, e.st, "k1")
		require.NoError(t, err)
		require.Equal(t, []store.KeyHash{
			{Hash: secret.Hash(rot.GetSecret())},
			{Hash: secret.Hash(sec), ValidUntil: e.clock.Now().Add(24 * time.Hour)},
		}, k.Hashes)

		// Rotate again with no grace, 25h later: only the newest secret remains.
		e.clock.Advance(25 * time.Hour)
		rot2, err := keys.RotateKey(ctx, &adminv1.RotateKeyRequest{Id: "k1", GracePeriod: durationpb.New(0)})
		require.NoError(t, err)
		k, _, err = store.Get[store.Key](ctx, e.st, "k1")
		require.NoError(t, err)
		require.Equal(t, []store.KeyHash{{Hash: secret.Hash(rot2.GetSecret())}}, k.Hashes)
		require.Nil(t, rot2.GetKey().GetPreviousSecretValidUntil())

		rev, err := keys.RevokeKey(ctx, &adminv1.RevokeKeyRequest{Id: "k1"})
		require.NoError(t, err)
		require.Equal(t, adminv1.KeyStatus_KEY_STATUS_REVOKED, rev.GetKey().GetStatus())
		require.NotNil(t, rev.GetKey().GetRevokedAt())
		_, err = keys.RotateKey(ctx, &adminv1.RotateKeyRequest{Id: "k1"})
		requireCode(t, codes.InvalidArgument, err)
	})
}

func TestListKeysFiltersAndPages(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		keys := adminv1.NewKeyServiceClient(e.conn)
		teams := adminv1.NewTeamServiceClient(e.conn)
		ctx := e.admin(t)
		for _, id := range []string{"red", "blue"} {
			_, err := teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: id}})
			require.NoError(t, err)
		}
		for i, spec := range []struct{ id, team, alias string }{
			{"a", "red", "x"}, {"b", "blue", "x"}, {"c", "red", "y"}, {"d", "red", "x"}, {"e", "", "x"},
		} {
			exp := (*timestamppb.Timestamp)(nil)
			if i == 3 {
				exp = timestamppb.New(e.clock.Now().Add(-time.Hour))
			}
			_, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{
				Id: spec.id, TeamId: spec.team, Alias: spec.alias,
				Limits: &adminv1.Limits{ExpiresAt: exp},
			})
			require.NoError(t, err)
		}
		_, err := keys.RevokeKey(ctx, &adminv1.RevokeKeyRequest{Id: "e"})
		require.NoError(t, err)

		ids := func(req *adminv1.ListKeysRequest) []string {
			t.Helper()
			var out []string
			for {
				resp, err := keys.ListKeys(ctx, req)
				require.NoError(t, err)
				for _, k := range resp.GetKeys() {
					out = append(out, k.GetId())
				}
				if resp.GetNextPageToken() == "" {
					return out
				}
				req.PageToken = resp.GetNextPageToken()
			}
		}
		tests := []struct {
			name string
			req  *adminv1.ListKeysRequest
			want []string
		}{
			{"all", &adminv1.ListKeysRequest{}, []string{"a", "b", "c", "d", "e"}},
			{"all by pages of 2", &adminv1.ListKeysRequest{PageSize: 2}, []string{"a", "b", "c", "d", "e"}},
			{"team", &adminv1.ListKeysRequest{TeamId: "red", PageSize: 1}, []string{"a", "c", "d"}},
			{"alias", &adminv1.ListKeysRequest{Alias: "x"}, []string{"a", "b", "d", "e"}},
			{"team and alias", &adminv1.ListKeysRequest{TeamId: "red", Alias: "x"}, []string{"a", "d"}},
			{"active", &adminv1.ListKeysRequest{Status: adminv1.KeyStatus_KEY_STATUS_ACTIVE}, []string{"a", "b", "c"}},
			{"expired", &adminv1.ListKeysRequest{Status: adminv1.KeyStatus_KEY_STATUS_EXPIRED}, []string{"d"}},
			{"revoked", &adminv1.ListKeysRequest{Status: adminv1.KeyStatus_KEY_STATUS_REVOKED}, []string{"e"}},
			{"user", &adminv1.ListKeysRequest{UserId: "nobody"}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { require.Equal(t, tt.want, ids(tt.req)) })
		}
		_, err = keys.ListKeys(ctx, &adminv1.ListKeysRequest{PageToken: "!!"})
		requireCode(t, codes.InvalidArgument, err)
	})
}

// A calendar budget keeps its time zone through the API and the store, and
// its window starts at that zone's midnight.
func TestBudgetTimeZone(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		keys := adminv1.NewKeyServiceClient(e.conn)
		ctx := e.admin(t)
		w := &adminv1.BudgetWindow{Limit: &adminv1.Money{Dollars: "5"}, Period: adminv1.PeriodKind_PERIOD_KIND_DAILY, TimeZone: "Asia/Tokyo"}
		created, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "tz", Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{w}}})
		require.NoError(t, err)
		require.Equal(t, "Asia/Tokyo", created.GetKey().GetLimits().GetBudgets()[0].GetTimeZone())

		k, _, err := store.Get[store.Key](ctx, e.st, "tz")
		require.NoError(t, err)
		p := k.Limits.Budgets[0].Period
		require.NotNil(t, p.Location)
		require.Equal(t, "Asia/Tokyo", p.Location.String())
		start, _ := p.Window(time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC)) // 01:00 on March 2 in Tokyo
		require.Equal(t, time.Date(2026, 3, 1, 15, 0, 0, 0, time.UTC), start.UTC())

		got, err := keys.GetKey(ctx, &adminv1.GetKeyRequest{Id: "tz"})
		require.NoError(t, err)
		require.Equal(t, "Asia/Tokyo", got.GetKey().GetLimits().GetBudgets()[0].GetTimeZone())
	})
}

func TestKeyValidation(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		keys := adminv1.NewKeyServiceClient(e.conn)
		ctx := e.admin(t)
		tests := []struct {
			name  string
			call  func() error
			field string
		}{
			{"bad id", func() error {
				_, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "has space"})
				return err
			}, "invalid id"},
			{"bad dollars", func() error {
				_, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{monthly("1.0000000001")}}})
				return err
			}, "invalid limits.budgets[0].limit"},
			{"zero budget", func() error {
				_, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{monthly("0")}}})
				return err
			}, "invalid limits.budgets[0].limit"},
			{"negative rpm", func() error {
				_, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Limits: &adminv1.Limits{Rpm: -1}})
				return err
			}, "invalid limits.rpm"},
			{"rolling without every", func() error {
				_, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{
					{Limit: &adminv1.Money{Dollars: "1"}, Period: adminv1.PeriodKind_PERIOD_KIND_ROLLING},
				}}})
				return err
			}, "invalid limits.budgets[0].every"},
			{"unknown time zone", func() error {
				_, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{
					{Limit: &adminv1.Money{Dollars: "1"}, Period: adminv1.PeriodKind_PERIOD_KIND_DAILY, TimeZone: "Mars/Olympus"},
				}}})
				return err
			}, "invalid limits.budgets[0].time_zone"},
			{"time zone on a total budget", func() error {
				_, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{
					{Limit: &adminv1.Money{Dollars: "1"}, Period: adminv1.PeriodKind_PERIOD_KIND_TOTAL, TimeZone: "Europe/Paris"},
				}}})
				return err
			}, "invalid limits.budgets[0].time_zone"},
			{"update without mask", func() error {
				_, err := keys.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Id: "k"})
				return err
			}, "invalid update_mask"},
			{"update unknown path", func() error {
				_, err := keys.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Id: "k", UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"secret"}}})
				return err
			}, "invalid update_mask"},
			{"negative grace", func() error {
				_, err := keys.RotateKey(ctx, &adminv1.RotateKeyRequest{Id: "k", GracePeriod: durationpb.New(-time.Second)})
				return err
			}, "invalid grace_period"},
			{"page size", func() error {
				_, err := keys.ListKeys(ctx, &adminv1.ListKeysRequest{PageSize: 5000})
				return err
			}, "invalid page_size"},
			{"unknown user", func() error {
				_, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{UserId: "ghost"})
				return err
			}, `user "ghost" not found`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.call()
				require.Error(t, err)
				require.Contains(t, err.Error(), tt.field)
			})
		}
	})
}

func cmpDiff(want, got any) string { return cmp.Diff(want, got, protocmp.Transform()) }

func TestKeyTakesItsTeamsOrg(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		for _, o := range []string{"acme", "other"} {
			_, err := c.orgs.CreateOrg(ctx, &adminv1.CreateOrgRequest{Org: &adminv1.Org{Id: o}})
			require.NoError(t, err)
		}
		_, err := c.teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: "t", OrgId: "acme"}})
		require.NoError(t, err)

		k, err := c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "k-team", TeamId: "t"})
		require.NoError(t, err)
		require.Equal(t, "acme", k.GetKey().GetOrgId(), "a key without an org takes its team's")
		k, err = c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "k-org", TeamId: "t", OrgId: "other"})
		require.NoError(t, err)
		require.Equal(t, "other", k.GetKey().GetOrgId(), "an org given is kept")
		k, err = c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "k-none"})
		require.NoError(t, err)
		require.Empty(t, k.GetKey().GetOrgId())
		_, err = c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "k-ghost", TeamId: "ghost"})
		requireCode(t, codes.NotFound, err)
	})
}
