package admin

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tollgate-ai/tollgate/internal/secret"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// ListAudit lists the admin change log, oldest first.
func (s *Server) ListAudit(ctx context.Context, req *adminv1.ListAuditRequest) (*adminv1.ListAuditResponse, error) {
	var after int64
	if t := req.GetPageToken(); t != "" {
		v, err := decodeToken(t)
		if err == nil {
			after, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return nil, s.toStatus(ctx, errorf(ErrInvalid, "page_token: not a token this API returned"))
		}
	}
	n := int(req.GetPageSize())
	if n <= 0 {
		n = defaultPageSize
	}
	entries, err := s.st.ListAudit(ctx, after, n+1)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListAuditResponse{}
	if len(entries) > n {
		entries = entries[:n]
		out.NextPageToken = encodeToken(strconv.FormatInt(entries[n-1].ID, 10))
	}
	for _, e := range entries {
		out.Entries = append(out.Entries, &adminv1.AuditEntry{
			Id: e.ID, At: tsOut(e.At), Actor: e.Actor, Action: e.Action, Kind: string(e.Kind),
			Target: e.Target, Detail: e.Detail,
		})
	}
	return out, nil
}

var (
	rolesIn = map[adminv1.AdminRole]store.Role{
		adminv1.AdminRole_ADMIN_ROLE_ADMIN:      store.RoleAdmin,
		adminv1.AdminRole_ADMIN_ROLE_TEAM_ADMIN: store.RoleTeamAdmin,
		adminv1.AdminRole_ADMIN_ROLE_VIEWER:     store.RoleViewer,
	}
	rolesOut = inverse(rolesIn)
)

func adminView(a *store.Admin) *adminv1.AdminCredential {
	return &adminv1.AdminCredential{Id: a.ID, Role: rolesOut[a.Role], TeamId: a.TeamID, CreatedAt: tsOut(a.CreatedAt)}
}

// CreateAdminCredential creates an admin credential and returns its secret, once.
func (s *Server) CreateAdminCredential(ctx context.Context, req *adminv1.CreateAdminCredentialRequest) (*adminv1.CreateAdminCredentialResponse, error) {
	// A team admin without a team would be limited by nothing (teamGuard
	// returns ""): formal/coq/Admin.v, team_admin_without_team.
	if rolesIn[req.GetRole()] == store.RoleTeamAdmin && req.GetTeamId() == "" {
		return nil, s.toStatus(ctx, errorf(ErrInvalid, "team_id: a team_admin credential must name its team"))
	}
	if req.GetTeamId() != "" {
		if _, _, err := get[store.Team](ctx, s.st, req.GetTeamId()); err != nil {
			return nil, s.toStatus(ctx, err)
		}
	}
	sec := secret.New(AdminSecretPrefix)
	h := secret.Hash(sec)
	a := store.Admin{ID: adminID(h), Hash: h, Role: rolesIn[req.GetRole()], TeamID: req.GetTeamId(), CreatedAt: s.now().UTC()}
	if err := create(ctx, s.st, a.ID, &a); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if err := s.record(ctx, "admin.create", store.KindAdmin, a.ID, map[string]string{"role": string(a.Role), "team_id": a.TeamID}); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateAdminCredentialResponse{Credential: adminView(&a), Secret: sec}, nil
}

// ListAdminCredentials lists admin credentials (without hashes).
func (s *Server) ListAdminCredentials(ctx context.Context, _ *adminv1.ListAdminCredentialsRequest) (*adminv1.ListAdminCredentialsResponse, error) {
	all, err := store.List[store.Admin](ctx, s.st)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListAdminCredentialsResponse{}
	for i := range all {
		out.Credentials = append(out.Credentials, adminView(&all[i]))
	}
	return out, nil
}

// DeleteAdminCredential deletes an admin credential. The caller cannot delete
// its own credential, so that the last admin cannot lock everyone out.
func (s *Server) DeleteAdminCredential(ctx context.Context, req *adminv1.DeleteAdminCredentialRequest) (*adminv1.DeleteAdminCredentialResponse, error) {
	if p, _ := principalOf(ctx); p.ID == req.GetId() {
		return nil, s.toStatus(ctx, fmt.Errorf("%w: cannot delete the credential you are using", ErrInvalid))
	}
	if err := remove[store.Admin](ctx, s.st, req.GetId()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if err := s.record(ctx, "admin.delete", store.KindAdmin, req.GetId(), nil); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteAdminCredentialResponse{}, nil
}

// WhoAmI describes the caller's credential.
func (s *Server) WhoAmI(ctx context.Context, _ *adminv1.WhoAmIRequest) (*adminv1.WhoAmIResponse, error) {
	p, _ := principalOf(ctx)
	a, _, err := get[store.Admin](ctx, s.st, p.ID)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.WhoAmIResponse{Credential: adminView(&a)}, nil
}
