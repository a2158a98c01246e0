package admin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// fixture is a populated admin API and one credential per role.
type fixture struct {
	*env
	roles   map[string]string // role name → secret
	extraID string            // an admin credential nobody uses
}

func mask(paths ...string) *fieldmaskpb.FieldMask { return &fieldmaskpb.FieldMask{Paths: paths} }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	e := newEnv(t, memstore.New())
	ctx := e.admin(t)
	c := clients(e)
	must := func(_ any, err error) { t.Helper(); require.NoError(t, err) }
	must(c.orgs.CreateOrg(ctx, &adminv1.CreateOrgRequest{Org: &adminv1.Org{Id: "acme"}}))
	must(c.orgs.CreateOrg(ctx, &adminv1.CreateOrgRequest{Org: &adminv1.Org{Id: "empty-org"}}))
	must(c.teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: "red", OrgId: "acme", Limits: &adminv1.Limits{
		Rpm: 100, Budgets: []*adminv1.BudgetWindow{monthly("50")},
	}}}))
	must(c.teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: "blue", OrgId: "acme"}}))
	must(c.teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: "empty"}}))
	must(c.teams.AddTeamMember(ctx, &adminv1.AddTeamMemberRequest{TeamId: "red", UserId: "u-red"}))
	must(c.teams.AddTeamMember(ctx, &adminv1.AddTeamMemberRequest{TeamId: "blue", UserId: "u-blue"}))
	must(c.customers.CreateCustomer(ctx, &adminv1.CreateCustomerRequest{Customer: &adminv1.Customer{Id: "cust"}}))
	must(c.providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{Provider: &adminv1.Provider{
		Id: "prov", Type: adminv1.ProviderType_PROVIDER_TYPE_OPENAI, BaseUrl: "https://api.openai.com/v1",
	}, Credential: "sk-test"}))
	must(c.providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{Provider: &adminv1.Provider{
		Id: "prov2", Type: adminv1.ProviderType_PROVIDER_TYPE_ANTHROPIC, BaseUrl: "https://api.anthropic.com/v1",
	}}))
	must(c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "dep", Provider: "prov", ProviderModel: "gpt-4o"}}))
	must(c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "dep2", Provider: "prov", ProviderModel: "gpt-4o-mini"}}))
	must(c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "gpt-4o", Deployments: []string{"dep"}}}))
	must(c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{Price: &adminv1.Price{Model: "gpt-4o", Input: &adminv1.Money{Dollars: "2.5"}, Output: &adminv1.Money{Dollars: "10"}}}))
	must(c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "red-key", TeamId: "red", Limits: &adminv1.Limits{Rpm: 10, Budgets: []*adminv1.BudgetWindow{monthly("10")}}}))
	must(c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "blue-key", TeamId: "blue"}))
	extra, err := c.creds.CreateAdminCredential(ctx, &adminv1.CreateAdminCredentialRequest{Role: adminv1.AdminRole_ADMIN_ROLE_VIEWER})
	require.NoError(t, err)
	return &fixture{env: e, extraID: extra.GetCredential().GetId(), roles: map[string]string{
		"admin":      e.adminKey,
		"team-admin": e.credential(t, adminv1.AdminRole_ADMIN_ROLE_TEAM_ADMIN, "red"),
		"viewer":     e.credential(t, adminv1.AdminRole_ADMIN_ROLE_VIEWER, ""),
	}}
}

type apiClients struct {
	keys        adminv1.KeyServiceClient
	users       adminv1.UserServiceClient
	teams       adminv1.TeamServiceClient
	orgs        adminv1.OrgServiceClient
	customers   adminv1.CustomerServiceClient
	providers   adminv1.ProviderServiceClient
	deployments adminv1.DeploymentServiceClient
	models      adminv1.ModelServiceClient
	prices      adminv1.PriceServiceClient
	spend       adminv1.SpendServiceClient
	audit       adminv1.AuditServiceClient
	creds       adminv1.AdminCredentialServiceClient
	config      adminv1.ConfigServiceClient
}

func clients(e *env) apiClients { return clientsOn(e.conn) }

// clientsOn returns the API clients over a connection: gRPC (env.conn) or the
// REST API (restConn).
func clientsOn(cc grpc.ClientConnInterface) apiClients {
	return apiClients{
		keys: adminv1.NewKeyServiceClient(cc), users: adminv1.NewUserServiceClient(cc),
		teams: adminv1.NewTeamServiceClient(cc), orgs: adminv1.NewOrgServiceClient(cc),
		customers: adminv1.NewCustomerServiceClient(cc), providers: adminv1.NewProviderServiceClient(cc),
		deployments: adminv1.NewDeploymentServiceClient(cc), models: adminv1.NewModelServiceClient(cc),
		prices: adminv1.NewPriceServiceClient(cc), spend: adminv1.NewSpendServiceClient(cc),
		audit: adminv1.NewAuditServiceClient(cc), creds: adminv1.NewAdminCredentialServiceClient(cc),
		config: adminv1.NewConfigServiceClient(cc),
	}
}

const (
	A = "admin"
	T = "team-admin"
	V = "viewer"
)

// TestRoleMatrix calls every RPC with every role, on a fresh fixture each time,
// over gRPC, over the REST API's POST paths and over its resource paths (GET
// /v1/keys …, resourceConn), and checks it succeeds for the allowed
// roles and is PermissionDenied (HTTP 403 over REST) for the others.
func TestRoleMatrix(t *testing.T) {
	type call func(ctx context.Context, c apiClients, f *fixture) error
	ok := func(_ any, err error) error { return err }
	tests := []struct {
		name    string
		call    call
		allowed []string
	}{
		// Keys: team admins on their own team only, within its limits.
		{"CreateKey own team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{TeamId: "red", Limits: &adminv1.Limits{Rpm: 10, Budgets: []*adminv1.BudgetWindow{monthly("5")}}}))
		}, []string{A, T}},
		{"CreateKey other team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{TeamId: "blue"}))
		}, []string{A}},
		{"CreateKey above team rpm", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{TeamId: "red", Limits: &adminv1.Limits{Rpm: 1000, Budgets: []*adminv1.BudgetWindow{monthly("5")}}}))
		}, []string{A}},
		{"CreateKey above team budget", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{TeamId: "red", Limits: &adminv1.Limits{Rpm: 10, Budgets: []*adminv1.BudgetWindow{monthly("50.000000001")}}}))
		}, []string{A}},
		{"CreateKey without budget under a team budget", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{TeamId: "red", Limits: &adminv1.Limits{Rpm: 10}}))
		}, []string{A}},
		{"GetKey own team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.GetKey(ctx, &adminv1.GetKeyRequest{Id: "red-key"}))
		}, []string{A, T, V}},
		{"GetKey other team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.GetKey(ctx, &adminv1.GetKeyRequest{Id: "blue-key"}))
		}, []string{A, V}},
		{"ListKeys", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.ListKeys(ctx, &adminv1.ListKeysRequest{}))
		}, []string{A, T, V}},
		{"ListKeys other team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.ListKeys(ctx, &adminv1.ListKeysRequest{TeamId: "blue"}))
		}, []string{A, V}},
		{"UpdateKey own team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Id: "red-key", Limits: &adminv1.Limits{Rpm: 20}, UpdateMask: mask("limits.rpm")}))
		}, []string{A, T}},
		{"UpdateKey own team above its limits", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Id: "red-key", UpdateMask: mask("limits.rpm")}))
		}, []string{A}},
		{"UpdateKey other team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Id: "blue-key", Alias: "x", UpdateMask: mask("alias")}))
		}, []string{A}},
		{"RevokeKey own team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.RevokeKey(ctx, &adminv1.RevokeKeyRequest{Id: "red-key"}))
		}, []string{A, T}},
		{"RevokeKey other team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.RevokeKey(ctx, &adminv1.RevokeKeyRequest{Id: "blue-key"}))
		}, []string{A}},
		{"RotateKey own team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.RotateKey(ctx, &adminv1.RotateKeyRequest{Id: "red-key"}))
		}, []string{A, T}},
		{"RotateKey other team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.keys.RotateKey(ctx, &adminv1.RotateKeyRequest{Id: "blue-key"}))
		}, []string{A}},
		// Users.
		{"CreateUser", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.users.CreateUser(ctx, &adminv1.CreateUserRequest{User: &adminv1.User{Id: "new"}}))
		}, []string{A}},
		{"GetUser own team member", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.users.GetUser(ctx, &adminv1.GetUserRequest{Id: "u-red"}))
		}, []string{A, T, V}},
		{"GetUser other team member", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.users.GetUser(ctx, &adminv1.GetUserRequest{Id: "u-blue"}))
		}, []string{A, V}},
		{"ListUsers", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.users.ListUsers(ctx, &adminv1.ListUsersRequest{}))
		}, []string{A, V}},
		{"UpdateUser", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.users.UpdateUser(ctx, &adminv1.UpdateUserRequest{User: &adminv1.User{Id: "u-red", Email: "r@example.com"}, UpdateMask: mask("email")}))
		}, []string{A}},
		{"DeleteUser", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.users.DeleteUser(ctx, &adminv1.DeleteUserRequest{Id: "u-blue"}))
		}, []string{A}},
		// Teams.
		{"CreateTeam", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: "green"}}))
		}, []string{A}},
		{"GetTeam own", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.GetTeam(ctx, &adminv1.GetTeamRequest{Id: "red"}))
		}, []string{A, T, V}},
		{"GetTeam other", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.GetTeam(ctx, &adminv1.GetTeamRequest{Id: "blue"}))
		}, []string{A, V}},
		{"ListTeams", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.ListTeams(ctx, &adminv1.ListTeamsRequest{}))
		}, []string{A, V}},
		{"UpdateTeam own", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.UpdateTeam(ctx, &adminv1.UpdateTeamRequest{Team: &adminv1.Team{Id: "red", Limits: &adminv1.Limits{Rpm: 1000}}, UpdateMask: mask("limits.rpm")}))
		}, []string{A}},
		{"DeleteTeam", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.DeleteTeam(ctx, &adminv1.DeleteTeamRequest{Id: "empty"}))
		}, []string{A}},
		{"AddTeamMember own", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.AddTeamMember(ctx, &adminv1.AddTeamMemberRequest{TeamId: "red", UserId: "carol"}))
		}, []string{A, T}},
		{"AddTeamMember other", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.AddTeamMember(ctx, &adminv1.AddTeamMemberRequest{TeamId: "blue", UserId: "carol"}))
		}, []string{A}},
		{"RemoveTeamMember own", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.RemoveTeamMember(ctx, &adminv1.RemoveTeamMemberRequest{TeamId: "red", UserId: "u-red"}))
		}, []string{A, T}},
		{"RemoveTeamMember other", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.teams.RemoveTeamMember(ctx, &adminv1.RemoveTeamMemberRequest{TeamId: "blue", UserId: "u-blue"}))
		}, []string{A}},
		// Organizations.
		{"CreateOrg", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.orgs.CreateOrg(ctx, &adminv1.CreateOrgRequest{Org: &adminv1.Org{Id: "o2"}}))
		}, []string{A}},
		{"GetOrg", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.orgs.GetOrg(ctx, &adminv1.GetOrgRequest{Id: "acme"}))
		}, []string{A, V}},
		{"ListOrgs", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.orgs.ListOrgs(ctx, &adminv1.ListOrgsRequest{}))
		}, []string{A, V}},
		{"UpdateOrg", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.orgs.UpdateOrg(ctx, &adminv1.UpdateOrgRequest{Org: &adminv1.Org{Id: "acme", Name: "Acme"}, UpdateMask: mask("name")}))
		}, []string{A}},
		{"DeleteOrg", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.orgs.DeleteOrg(ctx, &adminv1.DeleteOrgRequest{Id: "empty-org"}))
		}, []string{A}},
		// Customers.
		{"CreateCustomer", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.customers.CreateCustomer(ctx, &adminv1.CreateCustomerRequest{Customer: &adminv1.Customer{Id: "c2"}}))
		}, []string{A}},
		{"GetCustomer", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.customers.GetCustomer(ctx, &adminv1.GetCustomerRequest{Id: "cust"}))
		}, []string{A, V}},
		{"ListCustomers", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.customers.ListCustomers(ctx, &adminv1.ListCustomersRequest{}))
		}, []string{A, V}},
		{"UpdateCustomer", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.customers.UpdateCustomer(ctx, &adminv1.UpdateCustomerRequest{Customer: &adminv1.Customer{Id: "cust", Name: "C"}, UpdateMask: mask("name")}))
		}, []string{A}},
		{"DeleteCustomer", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.customers.DeleteCustomer(ctx, &adminv1.DeleteCustomerRequest{Id: "cust"}))
		}, []string{A}},
		// Providers.
		{"CreateProvider", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{Provider: &adminv1.Provider{
				Id: "p3", Type: adminv1.ProviderType_PROVIDER_TYPE_AZURE, BaseUrl: "https://x.openai.azure.com/openai",
			}, Credential: "k"}))
		}, []string{A}},
		{"GetProvider", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.providers.GetProvider(ctx, &adminv1.GetProviderRequest{Id: "prov"}))
		}, []string{A, V}},
		{"ListProviders", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.providers.ListProviders(ctx, &adminv1.ListProvidersRequest{}))
		}, []string{A, V}},
		{"UpdateProvider", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.providers.UpdateProvider(ctx, &adminv1.UpdateProviderRequest{Provider: &adminv1.Provider{Id: "prov"}, Credential: "sk-new", UpdateMask: mask("credential")}))
		}, []string{A}},
		{"DeleteProvider", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.providers.DeleteProvider(ctx, &adminv1.DeleteProviderRequest{Id: "prov2"}))
		}, []string{A}},
		// Deployments.
		{"CreateDeployment", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "d3", Provider: "prov", ProviderModel: "o3"}}))
		}, []string{A}},
		{"GetDeployment", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.deployments.GetDeployment(ctx, &adminv1.GetDeploymentRequest{Id: "dep"}))
		}, []string{A, V}},
		{"ListDeployments", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.deployments.ListDeployments(ctx, &adminv1.ListDeploymentsRequest{}))
		}, []string{A, V}},
		{"UpdateDeployment", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.deployments.UpdateDeployment(ctx, &adminv1.UpdateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "dep", Weight: 3}, UpdateMask: mask("weight")}))
		}, []string{A}},
		{"DeleteDeployment", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.deployments.DeleteDeployment(ctx, &adminv1.DeleteDeploymentRequest{Id: "dep2"}))
		}, []string{A}},
		// Models.
		{"CreateModel", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "mini", Deployments: []string{"dep2"}}}))
		}, []string{A}},
		{"GetModel", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.models.GetModel(ctx, &adminv1.GetModelRequest{Id: "gpt-4o"}))
		}, []string{A, T, V}},
		{"ListModels", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.models.ListModels(ctx, &adminv1.ListModelsRequest{}))
		}, []string{A, T, V}},
		{"UpdateModel", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.models.UpdateModel(ctx, &adminv1.UpdateModelRequest{Model: &adminv1.Model{Id: "gpt-4o", DefaultMaxTokens: 100}, UpdateMask: mask("default_max_tokens")}))
		}, []string{A}},
		{"DeleteModel", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.models.DeleteModel(ctx, &adminv1.DeleteModelRequest{Id: "gpt-4o"}))
		}, []string{A}},
		// Prices.
		{"SetPrice", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{Price: &adminv1.Price{Model: "o3", Input: &adminv1.Money{Dollars: "2"}, Output: &adminv1.Money{Dollars: "8"}}}))
		}, []string{A}},
		{"GetPrice", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.prices.GetPrice(ctx, &adminv1.GetPriceRequest{Model: "gpt-4o"}))
		}, []string{A, T, V}},
		{"ListPrices", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.prices.ListPrices(ctx, &adminv1.ListPricesRequest{}))
		}, []string{A, T, V}},
		{"DeletePrice", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.prices.DeletePrice(ctx, &adminv1.DeletePriceRequest{Model: "gpt-4o"}))
		}, []string{A}},
		{"LoadDefaultPrices", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.prices.LoadDefaultPrices(ctx, &adminv1.LoadDefaultPricesRequest{}))
		}, []string{A}},
		{"ListMissingPrices", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.prices.ListMissingPrices(ctx, &adminv1.ListMissingPricesRequest{}))
		}, []string{A, V}},
		// Spend: team admins read their team (the default) and its keys.
		{"GetSpend default scope", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.spend.GetSpend(ctx, &adminv1.GetSpendRequest{}))
		}, []string{A, T, V}},
		{"GetSpend other team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.spend.GetSpend(ctx, &adminv1.GetSpendRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_TEAM, Id: "blue"}}))
		}, []string{A, V}},
		{"GetSpend global", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.spend.GetSpend(ctx, &adminv1.GetSpendRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_GLOBAL}}))
		}, []string{A, V}},
		{"GetSpendSeries own key", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.spend.GetSpendSeries(ctx, &adminv1.GetSpendSeriesRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_KEY, Id: "red-key"}}))
		}, []string{A, T, V}},
		{"GetSpendSeries other key", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.spend.GetSpendSeries(ctx, &adminv1.GetSpendSeriesRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_KEY, Id: "blue-key"}}))
		}, []string{A, V}},
		{"ListSpendEntries default scope", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.spend.ListSpendEntries(ctx, &adminv1.ListSpendEntriesRequest{}))
		}, []string{A, T, V}},
		{"ListSpendEntries other team", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.spend.ListSpendEntries(ctx, &adminv1.ListSpendEntriesRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_TEAM, Id: "blue"}}))
		}, []string{A, V}},
		{"GetSpendBreakdown by key", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.spend.GetSpendBreakdown(ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: "key"}))
		}, []string{A, T, V}},
		{"GetSpendBreakdown by user", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.spend.GetSpendBreakdown(ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: "user"}))
		}, []string{A, V}},
		// Audit, credentials, apply.
		{"ListAudit", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.audit.ListAudit(ctx, &adminv1.ListAuditRequest{}))
		}, []string{A, V}},
		{"CreateAdminCredential", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.creds.CreateAdminCredential(ctx, &adminv1.CreateAdminCredentialRequest{Role: adminv1.AdminRole_ADMIN_ROLE_ADMIN}))
		}, []string{A}},
		{"ListAdminCredentials", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.creds.ListAdminCredentials(ctx, &adminv1.ListAdminCredentialsRequest{}))
		}, []string{A}},
		{"DeleteAdminCredential", func(ctx context.Context, c apiClients, f *fixture) error {
			return ok(c.creds.DeleteAdminCredential(ctx, &adminv1.DeleteAdminCredentialRequest{Id: f.extraID}))
		}, []string{A}},
		{"WhoAmI", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.creds.WhoAmI(ctx, &adminv1.WhoAmIRequest{}))
		}, []string{A, T, V}},
		{"Apply", func(ctx context.Context, c apiClients, _ *fixture) error {
			return ok(c.config.Apply(ctx, &adminv1.ApplyRequest{Document: "orgs: [{id: o3}]\n"}))
		}, []string{A}},
	}
	for _, tt := range tests {
		for _, role := range []string{A, T, V} {
			for _, transport := range []string{"grpc", "rest", "resource"} {
				t.Run(tt.name+"/"+role+"/"+transport, func(t *testing.T) {
					f := newFixture(t)
					err := tt.call(as(t, f.roles[role]), clientsOn(f.transport(t, transport)), f)
					for _, r := range tt.allowed {
						if r == role {
							require.NoError(t, err)
							return
						}
					}
					requireCode(t, codes.PermissionDenied, err)
				})
			}
		}
	}
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t)
	c := clients(f.env)
	tests := []struct {
		name   string
		secret string
		want   codes.Code
	}{
		{"no credential", "", codes.Unauthenticated},
		{"unknown credential", "tga-nope", codes.Unauthenticated},
		{"admin", f.adminKey, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.keys.ListKeys(as(t, tt.secret), &adminv1.ListKeysRequest{})
			if tt.want == codes.OK {
				require.NoError(t, err)
				return
			}
			requireCode(t, tt.want, err)
		})
	}

	// Health and reflection need no credential (grpcurl works).
	h, err := healthpb.NewHealthClient(f.conn).Check(as(t, ""), &healthpb.HealthCheckRequest{Service: "tollgate.admin.v1.KeyService"})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, h.GetStatus())
	stream, err := reflectionpb.NewServerReflectionClient(f.conn).ServerReflectionInfo(as(t, ""))
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	require.Contains(t, names, "tollgate.admin.v1.KeyService")
	require.Contains(t, names, "tollgate.admin.v1.SpendService")
	require.NoError(t, stream.CloseSend())
}
