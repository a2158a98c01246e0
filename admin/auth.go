package admin

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tollgate-ai/tollgate/internal/secret"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// AdminSecretPrefix starts every admin secret.
const AdminSecretPrefix = "tga-"

// principal is the authenticated caller.
type principal struct {
	ID     string
	Role   store.Role
	TeamID string
}

type principalKey struct{}

func principalOf(ctx context.Context) (principal, bool) {
	p, ok := ctx.Value(principalKey{}).(principal)
	return p, ok
}

// actorOf names the caller in the audit log.
func actorOf(ctx context.Context) string {
	if p, ok := principalOf(ctx); ok {
		return p.ID
	}
	return "system"
}

// roleSet is a set of roles allowed to call a method.
type roleSet uint8

const (
	roleAdmin roleSet = 1 << iota
	roleTeamAdmin
	roleViewer

	adminOnly = roleAdmin
	readers   = roleAdmin | roleViewer
	teamRead  = roleAdmin | roleViewer | roleTeamAdmin
	teamWrite = roleAdmin | roleTeamAdmin
)

func roleBit(r store.Role) roleSet {
	switch r {
	case store.RoleAdmin:
		return roleAdmin
	case store.RoleTeamAdmin:
		return roleTeamAdmin
	case store.RoleViewer:
		return roleViewer
	default:
		return 0
	}
}

// methodRoles says which roles may call each method. A method missing here is
// denied to everyone. Team admins are further limited to their own team by the
// handlers (teamGuard).
var methodRoles = map[string]roleSet{
	adminv1.KeyService_CreateKey_FullMethodName: teamWrite,
	adminv1.KeyService_GetKey_FullMethodName:    teamRead,
	adminv1.KeyService_ListKeys_FullMethodName:  teamRead,
	adminv1.KeyService_UpdateKey_FullMethodName: teamWrite,
	adminv1.KeyService_RevokeKey_FullMethodName: teamWrite,
	adminv1.KeyService_RotateKey_FullMethodName: teamWrite,

	adminv1.UserService_CreateUser_FullMethodName: adminOnly,
	adminv1.UserService_GetUser_FullMethodName:    teamRead,
	adminv1.UserService_ListUsers_FullMethodName:  readers,
	adminv1.UserService_UpdateUser_FullMethodName: adminOnly,
	adminv1.UserService_DeleteUser_FullMethodName: adminOnly,

	adminv1.TeamService_CreateTeam_FullMethodName:       adminOnly,
	adminv1.TeamService_GetTeam_FullMethodName:          teamRead,
	adminv1.TeamService_ListTeams_FullMethodName:        readers,
	adminv1.TeamService_UpdateTeam_FullMethodName:       adminOnly,
	adminv1.TeamService_DeleteTeam_FullMethodName:       adminOnly,
	adminv1.TeamService_AddTeamMember_FullMethodName:    teamWrite,
	adminv1.TeamService_RemoveTeamMember_FullMethodName: teamWrite,

	adminv1.OrgService_CreateOrg_FullMethodName: adminOnly,
	adminv1.OrgService_GetOrg_FullMethodName:    readers,
	adminv1.OrgService_ListOrgs_FullMethodName:  readers,
	adminv1.OrgService_UpdateOrg_FullMethodName: adminOnly,
	adminv1.OrgService_DeleteOrg_FullMethodName: adminOnly,

	adminv1.CustomerService_CreateCustomer_FullMethodName: adminOnly,
	adminv1.CustomerService_GetCustomer_FullMethodName:    readers,
	adminv1.CustomerService_ListCustomers_FullMethodName:  readers,
	adminv1.CustomerService_UpdateCustomer_FullMethodName: adminOnly,
	adminv1.CustomerService_DeleteCustomer_FullMethodName: adminOnly,

	adminv1.TagService_SetTagBudget_FullMethodName:    adminOnly,
	adminv1.TagService_ListTagBudgets_FullMethodName:  readers,
	adminv1.TagService_DeleteTagBudget_FullMethodName: adminOnly,

	adminv1.AlertService_CreateAlertSink_FullMethodName:     adminOnly,
	adminv1.AlertService_ListAlertSinks_FullMethodName:      readers,
	adminv1.AlertService_DeleteAlertSink_FullMethodName:     adminOnly,
	adminv1.AlertService_ListAlerts_FullMethodName:          readers,
	adminv1.AlertService_GetAlertSettings_FullMethodName:    readers,
	adminv1.AlertService_UpdateAlertSettings_FullMethodName: adminOnly,

	adminv1.ProviderService_CreateProvider_FullMethodName: adminOnly,
	adminv1.ProviderService_GetProvider_FullMethodName:    readers,
	adminv1.ProviderService_ListProviders_FullMethodName:  readers,
	adminv1.ProviderService_UpdateProvider_FullMethodName: adminOnly,
	adminv1.ProviderService_DeleteProvider_FullMethodName: adminOnly,

	adminv1.MCPService_CreateMCPServer_FullMethodName: adminOnly,
	adminv1.MCPService_GetMCPServer_FullMethodName:    readers,
	adminv1.MCPService_ListMCPServers_FullMethodName:  readers,
	adminv1.MCPService_UpdateMCPServer_FullMethodName: adminOnly,
	adminv1.MCPService_DeleteMCPServer_FullMethodName: adminOnly,
	adminv1.MCPService_SetMCPTools_FullMethodName:     adminOnly,
	adminv1.MCPService_GetMCPTools_FullMethodName:     readers,

	adminv1.DeploymentService_CreateDeployment_FullMethodName: adminOnly,
	adminv1.DeploymentService_GetDeployment_FullMethodName:    readers,
	adminv1.DeploymentService_ListDeployments_FullMethodName:  readers,
	adminv1.DeploymentService_UpdateDeployment_FullMethodName: adminOnly,
	adminv1.DeploymentService_DeleteDeployment_FullMethodName: adminOnly,

	// Team admins see the model catalogue and prices, to choose a key's models.
	adminv1.ModelService_CreateModel_FullMethodName: adminOnly,
	adminv1.ModelService_GetModel_FullMethodName:    teamRead,
	adminv1.ModelService_ListModels_FullMethodName:  teamRead,
	adminv1.ModelService_UpdateModel_FullMethodName: adminOnly,
	adminv1.ModelService_DeleteModel_FullMethodName: adminOnly,

	adminv1.PriceService_SetPrice_FullMethodName:          adminOnly,
	adminv1.PriceService_GetPrice_FullMethodName:          teamRead,
	adminv1.PriceService_ListPrices_FullMethodName:        teamRead,
	adminv1.PriceService_DeletePrice_FullMethodName:       adminOnly,
	adminv1.PriceService_LoadDefaultPrices_FullMethodName: adminOnly,
	adminv1.PriceService_ListMissingPrices_FullMethodName: readers, // it lists deployments

	adminv1.GuardrailService_CreateGuardrail_FullMethodName: adminOnly,
	adminv1.GuardrailService_GetGuardrail_FullMethodName:    teamRead,
	adminv1.GuardrailService_ListGuardrails_FullMethodName:  teamRead,
	adminv1.GuardrailService_UpdateGuardrail_FullMethodName: adminOnly,
	adminv1.GuardrailService_DeleteGuardrail_FullMethodName: adminOnly,
	adminv1.GuardrailService_SetGuardrails_FullMethodName:   adminOnly,
	adminv1.GuardrailService_GetGuardrails_FullMethodName:   teamRead,

	adminv1.SpendService_GetSpend_FullMethodName:          teamRead,
	adminv1.SpendService_GetSpendSeries_FullMethodName:    teamRead,
	adminv1.SpendService_ListSpendEntries_FullMethodName:  teamRead,
	adminv1.SpendService_GetSpendBreakdown_FullMethodName: teamRead,

	adminv1.AuditService_ListAudit_FullMethodName: readers,

	adminv1.AdminCredentialService_CreateAdminCredential_FullMethodName: adminOnly,
	adminv1.AdminCredentialService_ListAdminCredentials_FullMethodName:  adminOnly,
	adminv1.AdminCredentialService_DeleteAdminCredential_FullMethodName: adminOnly,
	adminv1.AdminCredentialService_WhoAmI_FullMethodName:                teamRead,

	adminv1.ConfigService_Apply_FullMethodName: adminOnly,

	// Reconciling calls the provider with its admin credential.
	adminv1.ReconcileService_Reconcile_FullMethodName:         adminOnly,
	adminv1.ReconcileService_ListReconcileRuns_FullMethodName: readers,
}

// public reports whether a method needs no credential (health, reflection).
func public(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.Health/") ||
		strings.HasPrefix(method, "/grpc.reflection.")
}

// adminID is the id of the admin credential whose secret has this hash, so
// that a credential is found with one read.
func adminID(hash string) string { return "adm-" + hash[:16] }

// authenticate is the auth interceptor's AuthFunc: it checks the Bearer admin
// secret and the role table.
func (s *Server) authenticate(ctx context.Context) (context.Context, error) {
	method, _ := grpc.Method(ctx)
	if public(method) {
		return ctx, nil
	}
	tok, err := auth.AuthFromMD(ctx, "bearer")
	if err != nil {
		return nil, status.Error(codes.Unauthenticated,
			"missing admin credential: send `authorization: Bearer <admin key>` (CLI: --admin-key or TOLLGATE_ADMIN_KEY)")
	}
	p, err := s.lookup(ctx, tok)
	if err != nil {
		return nil, err
	}
	if methodRoles[method]&roleBit(p.Role) == 0 {
		return nil, status.Errorf(codes.PermissionDenied, "role %s may not call %s", p.Role, method)
	}
	return context.WithValue(ctx, principalKey{}, p), nil
}

func (s *Server) lookup(ctx context.Context, tok string) (principal, error) {
	if strings.HasPrefix(tok, SessionTokenPrefix) {
		return s.lookupSession(ctx, tok)
	}
	h := secret.Hash(tok)
	a, _, err := store.Get[store.Admin](ctx, s.st, adminID(h))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return principal{}, s.toStatus(ctx, err)
	}
	if err != nil || subtle.ConstantTimeCompare([]byte(a.Hash), []byte(h)) != 1 {
		return principal{}, status.Error(codes.Unauthenticated, "unknown admin credential: check --admin-key or TOLLGATE_ADMIN_KEY")
	}
	return principal{ID: a.ID, Role: a.Role, TeamID: a.TeamID}, nil
}

// teamGuard returns the team a team-admin caller is limited to, or "" for
// callers that are not limited.
func teamGuard(ctx context.Context) string {
	p, _ := principalOf(ctx)
	if p.Role == store.RoleTeamAdmin {
		return p.TeamID
	}
	return ""
}

// denyOtherTeam fails unless the caller may act on team.
func denyOtherTeam(ctx context.Context, team string) error {
	if g := teamGuard(ctx); g != "" && g != team {
		return fmt.Errorf("%w: a team admin of %q may act on its own team only", ErrDenied, g)
	}
	return nil
}

// Bootstrap creates the first admin credential when no admin credential
// exists. The secret is fromEnv when not empty (e.g. TOLLGATE_ADMIN_KEY), else
// a generated one, returned so the caller can print it once. When a credential
// already exists it does nothing and returns ("", false, nil).
func Bootstrap(ctx context.Context, st ConfigStore, fromEnv string) (string, bool, error) {
	existing, err := st.List(ctx, store.KindAdmin, "", 1)
	if err != nil {
		return "", false, fmt.Errorf("admin: bootstrap: %w", err)
	}
	if len(existing) > 0 {
		return "", false, nil
	}
	sec := fromEnv
	if sec == "" {
		sec = secret.New(AdminSecretPrefix)
	}
	h := secret.Hash(sec)
	a := store.Admin{ID: adminID(h), Hash: h, Role: store.RoleAdmin, CreatedAt: time.Now().UTC()}
	_, err = store.Put(ctx, st, a.ID, &a, 0)
	if errors.Is(err, store.ErrConflict) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("admin: bootstrap: %w", err)
	}
	if err := recordAudit(ctx, st, a.CreatedAt, "bootstrap", "admin.create", store.KindAdmin, a.ID,
		map[string]string{"role": string(a.Role)}); err != nil {
		return "", false, err
	}
	return sec, true, nil
}
