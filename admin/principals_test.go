package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func TestTeamsAndMembers(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		_, err := c.orgs.CreateOrg(ctx, &adminv1.CreateOrgRequest{Org: &adminv1.Org{Id: "acme", Name: "Acme"}})
		require.NoError(t, err)
		_, err = c.teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: "t", OrgId: "ghost"}})
		requireCode(t, codes.NotFound, err)
		team, err := c.teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{
			Id: "t", Name: "Team", OrgId: "acme",
			Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{monthly("100")}, Tpm: 5000},
		}})
		require.NoError(t, err)
		require.Equal(t, "100", team.GetTeam().GetLimits().GetBudgets()[0].GetLimit().GetDollars())

		_, err = c.users.CreateUser(ctx, &adminv1.CreateUserRequest{User: &adminv1.User{Id: "alice", Email: "a@example.com", OrgId: "acme"}})
		require.NoError(t, err)
		_, err = c.users.CreateUser(ctx, &adminv1.CreateUserRequest{User: &adminv1.User{Id: "alice"}})
		requireCode(t, codes.AlreadyExists, err)

		for _, u := range []string{"alice", "bob", "alice"} { // bob is created; adding twice is a no-op
			_, err = c.teams.AddTeamMember(ctx, &adminv1.AddTeamMemberRequest{TeamId: "t", UserId: u})
			require.NoError(t, err)
		}
		got, err := c.teams.GetTeam(ctx, &adminv1.GetTeamRequest{Id: "t"})
		require.NoError(t, err)
		require.Equal(t, []string{"alice", "bob"}, got.GetTeam().GetMembers())
		bob, err := c.users.GetUser(ctx, &adminv1.GetUserRequest{Id: "bob"})
		require.NoError(t, err)
		require.Empty(t, cmpDiff(&adminv1.User{Id: "bob", OrgId: "acme", Teams: []string{"t"}, Limits: &adminv1.Limits{
			Mode: adminv1.BudgetMode_BUDGET_MODE_STRICT, Shortfall: adminv1.Shortfall_SHORTFALL_CLAMP,
		}}, bob.GetUser()))

		rm, err := c.teams.RemoveTeamMember(ctx, &adminv1.RemoveTeamMemberRequest{TeamId: "t", UserId: "alice"})
		require.NoError(t, err)
		require.Equal(t, []string{"bob"}, rm.GetTeam().GetMembers())
		_, err = c.teams.RemoveTeamMember(ctx, &adminv1.RemoveTeamMemberRequest{TeamId: "t", UserId: "alice"})
		requireCode(t, codes.NotFound, err)
		alice, err := c.users.GetUser(ctx, &adminv1.GetUserRequest{Id: "alice"})
		require.NoError(t, err)
		require.Empty(t, alice.GetUser().GetTeams())

		upd, err := c.teams.UpdateTeam(ctx, &adminv1.UpdateTeamRequest{Team: &adminv1.Team{Id: "t", Name: "Renamed", Limits: &adminv1.Limits{Rpm: 9}}, UpdateMask: mask("name", "limits.rpm")})
		require.NoError(t, err)
		require.Equal(t, "Renamed", upd.GetTeam().GetName())
		require.EqualValues(t, 9, upd.GetTeam().GetLimits().GetRpm())
		require.EqualValues(t, 5000, upd.GetTeam().GetLimits().GetTpm())
		require.Len(t, upd.GetTeam().GetLimits().GetBudgets(), 1)

		list, err := c.teams.ListTeams(ctx, &adminv1.ListTeamsRequest{OrgId: "acme"})
		require.NoError(t, err)
		require.Len(t, list.GetTeams(), 1)
		users, err := c.users.ListUsers(ctx, &adminv1.ListUsersRequest{PageSize: 1})
		require.NoError(t, err)
		require.Len(t, users.GetUsers(), 1)
		require.NotEmpty(t, users.GetNextPageToken())

		uu, err := c.users.UpdateUser(ctx, &adminv1.UpdateUserRequest{User: &adminv1.User{Id: "bob", Email: "b@example.com", Limits: &adminv1.Limits{MaxParallel: 2}}, UpdateMask: mask("email", "limits")})
		require.NoError(t, err)
		require.Equal(t, "b@example.com", uu.GetUser().GetEmail())
		require.EqualValues(t, 2, uu.GetUser().GetLimits().GetMaxParallel())
		require.Equal(t, []string{"t"}, uu.GetUser().GetTeams(), "membership is not touched by UpdateUser")

		// A team with active keys cannot be deleted; an org with teams neither.
		_, err = c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "k", TeamId: "t"})
		require.NoError(t, err)
		_, err = c.teams.DeleteTeam(ctx, &adminv1.DeleteTeamRequest{Id: "t"})
		requireCode(t, codes.InvalidArgument, err)
		_, err = c.orgs.DeleteOrg(ctx, &adminv1.DeleteOrgRequest{Id: "acme"})
		requireCode(t, codes.InvalidArgument, err)
		_, err = c.keys.RevokeKey(ctx, &adminv1.RevokeKeyRequest{Id: "k"})
		require.NoError(t, err)
		_, err = c.teams.DeleteTeam(ctx, &adminv1.DeleteTeamRequest{Id: "t"})
		require.NoError(t, err)
		bob, err = c.users.GetUser(ctx, &adminv1.GetUserRequest{Id: "bob"})
		require.NoError(t, err)
		require.Empty(t, bob.GetUser().GetTeams())
		_, err = c.users.DeleteUser(ctx, &adminv1.DeleteUserRequest{Id: "bob"})
		require.NoError(t, err)
		_, err = c.users.GetUser(ctx, &adminv1.GetUserRequest{Id: "bob"})
		requireCode(t, codes.NotFound, err)
		_, err = c.orgs.DeleteOrg(ctx, &adminv1.DeleteOrgRequest{Id: "acme"})
		require.NoError(t, err)
	})
}

func TestOrgsAndCustomers(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		o, err := c.orgs.CreateOrg(ctx, &adminv1.CreateOrgRequest{Org: &adminv1.Org{Id: "o", Name: "O", Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{
			{Limit: &adminv1.Money{Dollars: "1000"}, Period: adminv1.PeriodKind_PERIOD_KIND_WEEKLY},
		}}}})
		require.NoError(t, err)
		require.Equal(t, adminv1.PeriodKind_PERIOD_KIND_WEEKLY, o.GetOrg().GetLimits().GetBudgets()[0].GetPeriod())
		uo, err := c.orgs.UpdateOrg(ctx, &adminv1.UpdateOrgRequest{Org: &adminv1.Org{Id: "o", Name: "O2"}, UpdateMask: mask("name")})
		require.NoError(t, err)
		require.Equal(t, "O2", uo.GetOrg().GetName())
		go1, err := c.orgs.GetOrg(ctx, &adminv1.GetOrgRequest{Id: "o"})
		require.NoError(t, err)
		require.Empty(t, cmpDiff(uo.GetOrg(), go1.GetOrg()))
		lo, err := c.orgs.ListOrgs(ctx, &adminv1.ListOrgsRequest{})
		require.NoError(t, err)
		require.Len(t, lo.GetOrgs(), 1)

		cu, err := c.customers.CreateCustomer(ctx, &adminv1.CreateCustomerRequest{Customer: &adminv1.Customer{Id: "end-user-1", Limits: &adminv1.Limits{
			Budgets:   []*adminv1.BudgetWindow{{Limit: &adminv1.Money{Dollars: "5"}, Period: adminv1.PeriodKind_PERIOD_KIND_DAILY}},
			Shortfall: adminv1.Shortfall_SHORTFALL_REJECT,
		}}})
		require.NoError(t, err)
		require.Equal(t, adminv1.Shortfall_SHORTFALL_REJECT, cu.GetCustomer().GetLimits().GetShortfall())
		uc, err := c.customers.UpdateCustomer(ctx, &adminv1.UpdateCustomerRequest{Customer: &adminv1.Customer{Id: "end-user-1"}, UpdateMask: mask("limits.budgets")})
		require.NoError(t, err)
		require.Empty(t, uc.GetCustomer().GetLimits().GetBudgets())
		gc, err := c.customers.GetCustomer(ctx, &adminv1.GetCustomerRequest{Id: "end-user-1"})
		require.NoError(t, err)
		require.Equal(t, adminv1.Shortfall_SHORTFALL_REJECT, gc.GetCustomer().GetLimits().GetShortfall())
		lc, err := c.customers.ListCustomers(ctx, &adminv1.ListCustomersRequest{})
		require.NoError(t, err)
		require.Len(t, lc.GetCustomers(), 1)
		_, err = c.customers.DeleteCustomer(ctx, &adminv1.DeleteCustomerRequest{Id: "end-user-1"})
		require.NoError(t, err)
		_, err = c.customers.DeleteCustomer(ctx, &adminv1.DeleteCustomerRequest{Id: "end-user-1"})
		requireCode(t, codes.NotFound, err)
	})
}

func TestTeamAdminScope(t *testing.T) {
	f := newFixture(t)
	ctx := as(t, f.roles[T])
	c := clients(f.env)
	// A team admin's new key lands in its team; list shows only its team.
	k, err := c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Limits: &adminv1.Limits{Rpm: 5, Budgets: []*adminv1.BudgetWindow{monthly("1")}}})
	require.NoError(t, err)
	require.Equal(t, "red", k.GetKey().GetTeamId())
	require.Equal(t, "acme", k.GetKey().GetOrgId())
	list, err := c.keys.ListKeys(ctx, &adminv1.ListKeysRequest{})
	require.NoError(t, err)
	for _, key := range list.GetKeys() {
		require.Equal(t, "red", key.GetTeamId())
	}
	require.Len(t, list.GetKeys(), 2)
	_, err = c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Limits: &adminv1.Limits{Rpm: 5, Budgets: []*adminv1.BudgetWindow{monthly("51")}}})
	require.ErrorContains(t, err, "above the team's budget of $50")
	who, err := c.creds.WhoAmI(ctx, &adminv1.WhoAmIRequest{})
	require.NoError(t, err)
	require.Equal(t, adminv1.AdminRole_ADMIN_ROLE_TEAM_ADMIN, who.GetCredential().GetRole())
	require.Equal(t, "red", who.GetCredential().GetTeamId())
}

func TestAuditAndCredentials(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		_, err := c.orgs.CreateOrg(ctx, &adminv1.CreateOrgRequest{Org: &adminv1.Org{Id: "o"}})
		require.NoError(t, err)
		created, err := c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "k"})
		require.NoError(t, err)
		_, err = c.keys.RotateKey(ctx, &adminv1.RotateKeyRequest{Id: "k"})
		require.NoError(t, err)

		var actions []string
		req := &adminv1.ListAuditRequest{PageSize: 2}
		for {
			resp, err := c.audit.ListAudit(ctx, req)
			require.NoError(t, err)
			for _, a := range resp.GetEntries() {
				actions = append(actions, a.GetAction()+" "+a.GetTarget())
				require.NotContains(t, a.GetDetail(), created.GetSecret())
				require.NotEmpty(t, a.GetActor())
			}
			if resp.GetNextPageToken() == "" {
				break
			}
			req.PageToken = resp.GetNextPageToken()
		}
		require.Equal(t, "org.create o", actions[1])
		require.Equal(t, []string{"key.create k", "key.rotate k"}, actions[2:])

		v, err := c.creds.CreateAdminCredential(ctx, &adminv1.CreateAdminCredentialRequest{Role: adminv1.AdminRole_ADMIN_ROLE_VIEWER})
		require.NoError(t, err)
		require.Regexp(t, `^tga-`, v.GetSecret())
		_, err = c.creds.CreateAdminCredential(ctx, &adminv1.CreateAdminCredentialRequest{Role: adminv1.AdminRole_ADMIN_ROLE_TEAM_ADMIN})
		require.ErrorContains(t, err, "invalid team_id")
		_, err = c.creds.CreateAdminCredential(ctx, &adminv1.CreateAdminCredentialRequest{Role: adminv1.AdminRole_ADMIN_ROLE_TEAM_ADMIN, TeamId: "ghost"})
		requireCode(t, codes.NotFound, err)
		all, err := c.creds.ListAdminCredentials(ctx, &adminv1.ListAdminCredentialsRequest{})
		require.NoError(t, err)
		require.Len(t, all.GetCredentials(), 2)
		me, err := c.creds.WhoAmI(ctx, &adminv1.WhoAmIRequest{})
		require.NoError(t, err)
		_, err = c.creds.DeleteAdminCredential(ctx, &adminv1.DeleteAdminCredentialRequest{Id: me.GetCredential().GetId()})
		requireCode(t, codes.InvalidArgument, err)
		_, err = c.creds.DeleteAdminCredential(ctx, &adminv1.DeleteAdminCredentialRequest{Id: v.GetCredential().GetId()})
		require.NoError(t, err)
		_, err = c.keys.ListKeys(as(t, v.GetSecret()), &adminv1.ListKeysRequest{})
		requireCode(t, codes.Unauthenticated, err)
	})
}

func TestDeleteUserLeavesItsTeams(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		for _, team := range []string{"red", "blue"} {
			_, err := c.teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: team}})
			require.NoError(t, err)
			for _, u := range []string{"carol", "dave"} {
				_, err = c.teams.AddTeamMember(ctx, &adminv1.AddTeamMemberRequest{TeamId: team, UserId: u})
				require.NoError(t, err)
			}
		}
		_, err := c.teams.DeleteTeam(ctx, &adminv1.DeleteTeamRequest{Id: "blue"})
		require.NoError(t, err)
		_, err = c.users.DeleteUser(ctx, &adminv1.DeleteUserRequest{Id: "carol"})
		require.NoError(t, err)
		red, err := c.teams.GetTeam(ctx, &adminv1.GetTeamRequest{Id: "red"})
		require.NoError(t, err)
		require.Equal(t, []string{"dave"}, red.GetTeam().GetMembers())
		dave, err := c.users.GetUser(ctx, &adminv1.GetUserRequest{Id: "dave"})
		require.NoError(t, err)
		require.Equal(t, []string{"red"}, dave.GetUser().GetTeams())
	})
}
