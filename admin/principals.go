package admin

import (
	"context"
	"slices"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// Users, teams, organizations and customers: CRUD, membership and their own limits.

func userView(u *store.User) *adminv1.User {
	return &adminv1.User{Id: u.ID, Email: u.Email, OrgId: u.OrgID, Teams: slices.Clone(u.Teams), Limits: limitsOut(u.Limits)}
}

func teamView(t *store.Team) *adminv1.Team {
	return &adminv1.Team{Id: t.ID, Name: t.Name, OrgId: t.OrgID, Members: slices.Clone(t.Members), Limits: limitsOut(t.Limits)}
}

func orgView(o *store.Org) *adminv1.Org {
	return &adminv1.Org{Id: o.ID, Name: o.Name, Limits: limitsOut(o.Limits)}
}

func customerView(c *store.Customer) *adminv1.Customer {
	return &adminv1.Customer{Id: c.ID, Name: c.Name, Limits: limitsOut(c.Limits)}
}

func teamMembers(t *store.Team) *[]string { return &t.Members }

func userTeams(u *store.User) *[]string { return &u.Teams }

// unlink removes id from a list (team members, a user's teams) of each entity
// in owners, skipping owners that are gone.
func unlink[T store.Entity](ctx context.Context, c store.Config, owners []string, id string, list func(*T) *[]string) error {
	for _, owner := range owners {
		_, err := update(ctx, c, owner, func(v *T) error {
			l := list(v)
			*l = slices.DeleteFunc(*l, func(x string) bool { return x == id })
			return nil
		})
		if err != nil && !isNotFound(err) {
			return err
		}
	}
	return nil
}

// CreateUser creates a user.
func (s *Server) CreateUser(ctx context.Context, req *adminv1.CreateUserRequest) (*adminv1.CreateUserResponse, error) {
	in := req.GetUser()
	l, err := limitsIn("user.limits", in.GetLimits())
	if err == nil && in.GetOrgId() != "" {
		_, _, err = get[store.Org](ctx, s.st, in.GetOrgId())
	}
	u := store.User{ID: in.GetId(), Email: in.GetEmail(), OrgID: in.GetOrgId(), Limits: l}
	if err == nil {
		err = create(ctx, s.st, u.ID, &u)
	}
	if err == nil {
		err = s.record(ctx, "user.create", store.KindUser, u.ID, u)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateUserResponse{User: userView(&u)}, nil
}

// GetUser returns a user; a team admin sees the members of its team only.
func (s *Server) GetUser(ctx context.Context, req *adminv1.GetUserRequest) (*adminv1.GetUserResponse, error) {
	u, _, err := get[store.User](ctx, s.st, req.GetId())
	if err == nil {
		if g := teamGuard(ctx); g != "" && !slices.Contains(u.Teams, g) {
			err = errorf(ErrDenied, "user %q is not a member of team %q", u.ID, g)
		}
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetUserResponse{User: userView(&u)}, nil
}

// ListUsers lists users by id.
func (s *Server) ListUsers(ctx context.Context, req *adminv1.ListUsersRequest) (*adminv1.ListUsersResponse, error) {
	users, next, err := listPage[store.User](ctx, s.st, req.GetPageToken(), req.GetPageSize(), nil)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListUsersResponse{NextPageToken: next}
	for i := range users {
		out.Users = append(out.Users, userView(&users[i]))
	}
	return out, nil
}

// UpdateUser changes the fields named by the update mask.
func (s *Server) UpdateUser(ctx context.Context, req *adminv1.UpdateUserRequest) (*adminv1.UpdateUserResponse, error) {
	in, paths := req.GetUser(), req.GetUpdateMask().GetPaths()
	l, err := limitsIn("user.limits", in.GetLimits())
	if err == nil && hasPath(paths, "org_id") && in.GetOrgId() != "" {
		_, _, err = get[store.Org](ctx, s.st, in.GetOrgId())
	}
	var u store.User
	if err == nil {
		u, err = update(ctx, s.st, in.GetId(), func(u *store.User) error {
			if hasPath(paths, "email") {
				u.Email = in.GetEmail()
			}
			if hasPath(paths, "org_id") {
				u.OrgID = in.GetOrgId()
			}
			applyLimitsMask(&u.Limits, l, limitsPaths(paths))
			return nil
		})
	}
	if err == nil {
		err = s.record(ctx, "user.update", store.KindUser, u.ID, map[string]any{"fields": paths, "user": u})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateUserResponse{User: userView(&u)}, nil
}

// DeleteUser deletes a user and removes it from its teams.
func (s *Server) DeleteUser(ctx context.Context, req *adminv1.DeleteUserRequest) (*adminv1.DeleteUserResponse, error) {
	u, _, err := get[store.User](ctx, s.st, req.GetId())
	if err == nil {
		err = unlink(ctx, s.st, u.Teams, u.ID, teamMembers)
	}
	if err == nil {
		err = remove[store.User](ctx, s.st, req.GetId())
	}
	if err == nil {
		err = s.record(ctx, "user.delete", store.KindUser, req.GetId(), nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteUserResponse{}, nil
}

// CreateTeam creates a team.
func (s *Server) CreateTeam(ctx context.Context, req *adminv1.CreateTeamRequest) (*adminv1.CreateTeamResponse, error) {
	in := req.GetTeam()
	l, err := limitsIn("team.limits", in.GetLimits())
	if err == nil && in.GetOrgId() != "" {
		_, _, err = get[store.Org](ctx, s.st, in.GetOrgId())
	}
	t := store.Team{ID: in.GetId(), Name: in.GetName(), OrgID: in.GetOrgId(), Limits: l}
	if err == nil {
		err = create(ctx, s.st, t.ID, &t)
	}
	if err == nil {
		err = s.record(ctx, "team.create", store.KindTeam, t.ID, t)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateTeamResponse{Team: teamView(&t)}, nil
}

// GetTeam returns a team; a team admin sees its own team only.
func (s *Server) GetTeam(ctx context.Context, req *adminv1.GetTeamRequest) (*adminv1.GetTeamResponse, error) {
	err := denyOtherTeam(ctx, req.GetId())
	var t store.Team
	if err == nil {
		t, _, err = get[store.Team](ctx, s.st, req.GetId())
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetTeamResponse{Team: teamView(&t)}, nil
}

// ListTeams lists teams, optionally of one organization.
func (s *Server) ListTeams(ctx context.Context, req *adminv1.ListTeamsRequest) (*adminv1.ListTeamsResponse, error) {
	teams, next, err := listPage(ctx, s.st, req.GetPageToken(), req.GetPageSize(), func(t *store.Team) bool {
		return req.GetOrgId() == "" || t.OrgID == req.GetOrgId()
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListTeamsResponse{NextPageToken: next}
	for i := range teams {
		out.Teams = append(out.Teams, teamView(&teams[i]))
	}
	return out, nil
}

// UpdateTeam changes the fields named by the update mask.
func (s *Server) UpdateTeam(ctx context.Context, req *adminv1.UpdateTeamRequest) (*adminv1.UpdateTeamResponse, error) {
	in, paths := req.GetTeam(), req.GetUpdateMask().GetPaths()
	l, err := limitsIn("team.limits", in.GetLimits())
	if err == nil && hasPath(paths, "org_id") && in.GetOrgId() != "" {
		_, _, err = get[store.Org](ctx, s.st, in.GetOrgId())
	}
	var t store.Team
	if err == nil {
		t, err = update(ctx, s.st, in.GetId(), func(t *store.Team) error {
			if hasPath(paths, "name") {
				t.Name = in.GetName()
			}
			if hasPath(paths, "org_id") {
				t.OrgID = in.GetOrgId()
			}
			applyLimitsMask(&t.Limits, l, limitsPaths(paths))
			return nil
		})
	}
	if err == nil {
		err = s.record(ctx, "team.update", store.KindTeam, t.ID, map[string]any{"fields": paths, "team": t})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateTeamResponse{Team: teamView(&t)}, nil
}

// DeleteTeam deletes a team that no key belongs to, and removes it from its members.
func (s *Server) DeleteTeam(ctx context.Context, req *adminv1.DeleteTeamRequest) (*adminv1.DeleteTeamResponse, error) {
	id := req.GetId()
	t, _, err := get[store.Team](ctx, s.st, id)
	if err == nil {
		var keys []store.Key
		keys, _, err = listPage(ctx, s.st, "", 1, func(k *store.Key) bool { return k.TeamID == id && !k.Revoked })
		if err == nil && len(keys) > 0 {
			err = errorf(ErrInvalid, "team %q still has active keys (e.g. %q): revoke them first", id, keys[0].ID)
		}
	}
	if err == nil {
		err = unlink(ctx, s.st, t.Members, id, userTeams)
	}
	if err == nil {
		err = remove[store.Team](ctx, s.st, id)
	}
	if err == nil {
		err = s.record(ctx, "team.delete", store.KindTeam, id, nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteTeamResponse{}, nil
}

// AddTeamMember adds a user to a team (creating the user when missing).
func (s *Server) AddTeamMember(ctx context.Context, req *adminv1.AddTeamMemberRequest) (*adminv1.AddTeamMemberResponse, error) {
	team, user := req.GetTeamId(), req.GetUserId()
	err := denyOtherTeam(ctx, team)
	var t store.Team
	if err == nil {
		t, err = update(ctx, s.st, team, func(t *store.Team) error {
			if !slices.Contains(t.Members, user) {
				t.Members = append(t.Members, user)
			}
			return nil
		})
	}
	if err == nil {
		_, err = update(ctx, s.st, user, func(u *store.User) error {
			if !slices.Contains(u.Teams, team) {
				u.Teams = append(u.Teams, team)
			}
			return nil
		})
		if isNotFound(err) {
			u := store.User{ID: user, OrgID: t.OrgID, Teams: []string{team}}
			err = create(ctx, s.st, user, &u)
		}
	}
	if err == nil {
		err = s.record(ctx, "team.member.add", store.KindTeam, team, map[string]string{"user_id": user})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.AddTeamMemberResponse{Team: teamView(&t)}, nil
}

// RemoveTeamMember removes a user from a team.
func (s *Server) RemoveTeamMember(ctx context.Context, req *adminv1.RemoveTeamMemberRequest) (*adminv1.RemoveTeamMemberResponse, error) {
	team, user := req.GetTeamId(), req.GetUserId()
	err := denyOtherTeam(ctx, team)
	var t store.Team
	if err == nil {
		t, err = update(ctx, s.st, team, func(t *store.Team) error {
			if !slices.Contains(t.Members, user) {
				return errorf(ErrNotFound, "user %q is not a member of team %q", user, team)
			}
			t.Members = slices.DeleteFunc(t.Members, func(m string) bool { return m == user })
			return nil
		})
	}
	if err == nil {
		err = unlink(ctx, s.st, []string{user}, team, userTeams)
	}
	if err == nil {
		err = s.record(ctx, "team.member.remove", store.KindTeam, team, map[string]string{"user_id": user})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.RemoveTeamMemberResponse{Team: teamView(&t)}, nil
}

// CreateOrg creates an organization.
func (s *Server) CreateOrg(ctx context.Context, req *adminv1.CreateOrgRequest) (*adminv1.CreateOrgResponse, error) {
	in := req.GetOrg()
	l, err := limitsIn("org.limits", in.GetLimits())
	o := store.Org{ID: in.GetId(), Name: in.GetName(), Limits: l}
	if err == nil {
		err = create(ctx, s.st, o.ID, &o)
	}
	if err == nil {
		err = s.record(ctx, "org.create", store.KindOrg, o.ID, o)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateOrgResponse{Org: orgView(&o)}, nil
}

// GetOrg returns an organization.
func (s *Server) GetOrg(ctx context.Context, req *adminv1.GetOrgRequest) (*adminv1.GetOrgResponse, error) {
	o, _, err := get[store.Org](ctx, s.st, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetOrgResponse{Org: orgView(&o)}, nil
}

// ListOrgs lists organizations.
func (s *Server) ListOrgs(ctx context.Context, req *adminv1.ListOrgsRequest) (*adminv1.ListOrgsResponse, error) {
	orgs, next, err := listPage[store.Org](ctx, s.st, req.GetPageToken(), req.GetPageSize(), nil)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListOrgsResponse{NextPageToken: next}
	for i := range orgs {
		out.Orgs = append(out.Orgs, orgView(&orgs[i]))
	}
	return out, nil
}

// UpdateOrg changes the fields named by the update mask.
func (s *Server) UpdateOrg(ctx context.Context, req *adminv1.UpdateOrgRequest) (*adminv1.UpdateOrgResponse, error) {
	in, paths := req.GetOrg(), req.GetUpdateMask().GetPaths()
	l, err := limitsIn("org.limits", in.GetLimits())
	var o store.Org
	if err == nil {
		o, err = update(ctx, s.st, in.GetId(), func(o *store.Org) error {
			if hasPath(paths, "name") {
				o.Name = in.GetName()
			}
			applyLimitsMask(&o.Limits, l, limitsPaths(paths))
			return nil
		})
	}
	if err == nil {
		err = s.record(ctx, "org.update", store.KindOrg, o.ID, map[string]any{"fields": paths, "org": o})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateOrgResponse{Org: orgView(&o)}, nil
}

// DeleteOrg deletes an organization no team belongs to.
func (s *Server) DeleteOrg(ctx context.Context, req *adminv1.DeleteOrgRequest) (*adminv1.DeleteOrgResponse, error) {
	id := req.GetId()
	teams, _, err := listPage(ctx, s.st, "", 1, func(t *store.Team) bool { return t.OrgID == id })
	if err == nil && len(teams) > 0 {
		err = errorf(ErrInvalid, "organization %q still has teams (e.g. %q): move or delete them first", id, teams[0].ID)
	}
	if err == nil {
		err = remove[store.Org](ctx, s.st, id)
	}
	if err == nil {
		err = s.record(ctx, "org.delete", store.KindOrg, id, nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteOrgResponse{}, nil
}

// CreateCustomer creates an end customer.
func (s *Server) CreateCustomer(ctx context.Context, req *adminv1.CreateCustomerRequest) (*adminv1.CreateCustomerResponse, error) {
	in := req.GetCustomer()
	l, err := limitsIn("customer.limits", in.GetLimits())
	c := store.Customer{ID: in.GetId(), Name: in.GetName(), Limits: l}
	if err == nil {
		err = create(ctx, s.st, c.ID, &c)
	}
	if err == nil {
		err = s.record(ctx, "customer.create", store.KindCustomer, c.ID, c)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateCustomerResponse{Customer: customerView(&c)}, nil
}

// GetCustomer returns an end customer.
func (s *Server) GetCustomer(ctx context.Context, req *adminv1.GetCustomerRequest) (*adminv1.GetCustomerResponse, error) {
	c, _, err := get[store.Customer](ctx, s.st, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetCustomerResponse{Customer: customerView(&c)}, nil
}

// ListCustomers lists end customers.
func (s *Server) ListCustomers(ctx context.Context, req *adminv1.ListCustomersRequest) (*adminv1.ListCustomersResponse, error) {
	cs, next, err := listPage[store.Customer](ctx, s.st, req.GetPageToken(), req.GetPageSize(), nil)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListCustomersResponse{NextPageToken: next}
	for i := range cs {
		out.Customers = append(out.Customers, customerView(&cs[i]))
	}
	return out, nil
}

// UpdateCustomer changes the fields named by the update mask.
func (s *Server) UpdateCustomer(ctx context.Context, req *adminv1.UpdateCustomerRequest) (*adminv1.UpdateCustomerResponse, error) {
	in, paths := req.GetCustomer(), req.GetUpdateMask().GetPaths()
	l, err := limitsIn("customer.limits", in.GetLimits())
	var c store.Customer
	if err == nil {
		c, err = update(ctx, s.st, in.GetId(), func(c *store.Customer) error {
			if hasPath(paths, "name") {
				c.Name = in.GetName()
			}
			applyLimitsMask(&c.Limits, l, limitsPaths(paths))
			return nil
		})
	}
	if err == nil {
		err = s.record(ctx, "customer.update", store.KindCustomer, c.ID, map[string]any{"fields": paths, "customer": c})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateCustomerResponse{Customer: customerView(&c)}, nil
}

// DeleteCustomer deletes an end customer.
func (s *Server) DeleteCustomer(ctx context.Context, req *adminv1.DeleteCustomerRequest) (*adminv1.DeleteCustomerResponse, error) {
	err := remove[store.Customer](ctx, s.st, req.GetId())
	if err == nil {
		err = s.record(ctx, "customer.delete", store.KindCustomer, req.GetId(), nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteCustomerResponse{}, nil
}
