package cli

import (
	"flag"
	"fmt"
	"strings"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func init() {
	register(
		&command{noun: "team", verb: "create", args: "ID", help: "create a team with its own limits", setup: teamCreate},
		&command{noun: "team", verb: "list", help: "list teams (--org)", setup: teamList},
		&command{noun: "team", verb: "get", args: "ID", help: "show a team and its members", setup: teamGet},
		&command{noun: "team", verb: "update", args: "ID", help: "change a team's name, org or limits", setup: teamUpdate},
		&command{noun: "team", verb: "delete", args: "ID", help: "delete a team without active keys", setup: teamDelete},
		&command{noun: "team", verb: "add-member", args: "TEAM USER", help: "add a user to a team (creates the user)", setup: teamAddMember},
		&command{noun: "team", verb: "remove-member", args: "TEAM USER", help: "remove a user from a team", setup: teamRemoveMember},

		&command{noun: "user", verb: "create", args: "ID", help: "create a user with its own limits", setup: userCreate},
		&command{noun: "user", verb: "list", help: "list users", setup: userList},
		&command{noun: "user", verb: "get", args: "ID", help: "show a user", setup: userGet},
		&command{noun: "user", verb: "update", args: "ID", help: "change a user's email, org or limits", setup: userUpdate},
		&command{noun: "user", verb: "delete", args: "ID", help: "delete a user", setup: userDelete},

		&command{noun: "org", verb: "create", args: "ID", help: "create an organization with its own limits", setup: orgCreate},
		&command{noun: "org", verb: "list", help: "list organizations", setup: orgList},
		&command{noun: "org", verb: "get", args: "ID", help: "show an organization", setup: orgGet},
		&command{noun: "org", verb: "update", args: "ID", help: "change an organization's name or limits", setup: orgUpdate},
		&command{noun: "org", verb: "delete", args: "ID", help: "delete an organization without teams", setup: orgDelete},

		&command{noun: "customer", verb: "create", args: "ID", help: "create an end customer (request `user` field) with limits", setup: customerCreate},
		&command{noun: "customer", verb: "list", help: "list end customers", setup: customerList},
		&command{noun: "customer", verb: "get", args: "ID", help: "show an end customer", setup: customerGet},
		&command{noun: "customer", verb: "update", args: "ID", help: "change an end customer's name or limits", setup: customerUpdate},
		&command{noun: "customer", verb: "delete", args: "ID", help: "delete an end customer", setup: customerDelete},
	)
}

func teamFields(t *adminv1.Team) [][2]string {
	return append([][2]string{
		{"ID", t.GetId()},
		{"NAME", orDash(t.GetName())},
		{"ORG", orDash(t.GetOrgId())},
		{"MEMBERS", orDash(strings.Join(t.GetMembers(), ", "))},
	}, limitsFields(t.GetLimits())...)
}

func userFields(u *adminv1.User) [][2]string {
	return append([][2]string{
		{"ID", u.GetId()},
		{"EMAIL", orDash(u.GetEmail())},
		{"ORG", orDash(u.GetOrgId())},
		{"TEAMS", orDash(strings.Join(u.GetTeams(), ", "))},
	}, limitsFields(u.GetLimits())...)
}

// namedLimits is an org or a customer: an id, a name and limits.
type namedLimits interface {
	GetId() string
	GetName() string
	GetLimits() *adminv1.Limits
}

// namedFields shows an org or a customer in a detail view.
func namedFields(n namedLimits) [][2]string {
	return append([][2]string{{"ID", n.GetId()}, {"NAME", orDash(n.GetName())}}, limitsFields(n.GetLimits())...)
}

// namedTable prints orgs or customers as one table.
func namedTable[T namedLimits](r *runner, items []T) {
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		rows = append(rows, append([]string{it.GetId(), orDash(it.GetName())}, limitsRow(it.GetLimits())...))
	}
	r.table(append([]string{"ID", "NAME"}, limitsHeader...), rows)
}

func limitsRow(l *adminv1.Limits) []string {
	return []string{budgets(l), num(l.GetRpm()), num(l.GetTpm()), models(l)}
}

var limitsHeader = []string{"BUDGETS", "RPM", "TPM", "MODELS"}

func deleted(r *runner, what, id string, err error) error {
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(r.out, "%s %s deleted\n", what, id)
	return err
}

func teamCreate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	name := fs.String("name", "", "display name")
	org := fs.String("org", "", "organization id")
	mcpTools := mcpToolsFlag(fs)
	lf.register(fs)
	return func(r *runner, pos []string) error {
		l, err := lf.build(r.now())
		if err != nil {
			return err
		}
		resp, err := adminv1.NewTeamServiceClient(r.conn).CreateTeam(r.ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: pos[0], Name: *name, OrgId: *org, Limits: l}})
		if err == nil {
			err = grantMCPTools(r, adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_TEAM, pos[0], *mcpTools)
		}
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(teamFields(resp.GetTeam())) })
	}
}

func teamList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	org := fs.String("org", "", "only teams of this organization")
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListTeamsResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewTeamServiceClient(r.conn).ListTeams(r.ctx, &adminv1.ListTeamsRequest{OrgId: *org, PageSize: size, PageToken: token})
			all.Teams = append(all.Teams, resp.GetTeams()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, t := range all.GetTeams() {
				rows = append(rows, append([]string{t.GetId(), orDash(t.GetName()), orDash(t.GetOrgId()), fmt.Sprint(len(t.GetMembers()))}, limitsRow(t.GetLimits())...))
			}
			r.table(append([]string{"ID", "NAME", "ORG", "MEMBERS"}, limitsHeader...), rows)
		})
	}
}

func teamGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewTeamServiceClient(r.conn).GetTeam(r.ctx, &adminv1.GetTeamRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(teamFields(resp.GetTeam())) })
	}
}

func teamUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	name := fs.String("name", "", "new display name")
	org := fs.String("org", "", "new organization id")
	mcpTools := mcpToolsFlag(fs)
	lf.register(fs)
	return func(r *runner, pos []string) error {
		l, err := lf.build(r.now())
		if err != nil {
			return err
		}
		mask, err := updateMask(r.set, map[string]string{"name": "name", "org": "org_id"}, &lf)
		mask, err = grantsOnly(r, adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_TEAM, pos[0], *mcpTools, mask, err)
		if err != nil {
			return err
		}
		if mask == nil {
			return teamGet(nil)(r, pos)
		}
		resp, err := adminv1.NewTeamServiceClient(r.conn).UpdateTeam(r.ctx, &adminv1.UpdateTeamRequest{
			Team: &adminv1.Team{Id: pos[0], Name: *name, OrgId: *org, Limits: l}, UpdateMask: mask,
		})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(teamFields(resp.GetTeam())) })
	}
}

func teamDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewTeamServiceClient(r.conn).DeleteTeam(r.ctx, &adminv1.DeleteTeamRequest{Id: pos[0]})
		return deleted(r, "team", pos[0], err)
	}
}

func teamAddMember(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewTeamServiceClient(r.conn).AddTeamMember(r.ctx, &adminv1.AddTeamMemberRequest{TeamId: pos[0], UserId: pos[1]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(teamFields(resp.GetTeam())) })
	}
}

func teamRemoveMember(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewTeamServiceClient(r.conn).RemoveTeamMember(r.ctx, &adminv1.RemoveTeamMemberRequest{TeamId: pos[0], UserId: pos[1]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(teamFields(resp.GetTeam())) })
	}
}

func userCreate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	email := fs.String("email", "", "email address")
	org := fs.String("org", "", "organization id")
	mcpTools := mcpToolsFlag(fs)
	lf.register(fs)
	return func(r *runner, pos []string) error {
		l, err := lf.build(r.now())
		if err != nil {
			return err
		}
		resp, err := adminv1.NewUserServiceClient(r.conn).CreateUser(r.ctx, &adminv1.CreateUserRequest{User: &adminv1.User{Id: pos[0], Email: *email, OrgId: *org, Limits: l}})
		if err == nil {
			err = grantMCPTools(r, adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_USER, pos[0], *mcpTools)
		}
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(userFields(resp.GetUser())) })
	}
}

func userList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListUsersResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewUserServiceClient(r.conn).ListUsers(r.ctx, &adminv1.ListUsersRequest{PageSize: size, PageToken: token})
			all.Users = append(all.Users, resp.GetUsers()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, u := range all.GetUsers() {
				rows = append(rows, append([]string{u.GetId(), orDash(u.GetEmail()), orDash(u.GetOrgId()), orDash(strings.Join(u.GetTeams(), ","))}, limitsRow(u.GetLimits())...))
			}
			r.table(append([]string{"ID", "EMAIL", "ORG", "TEAMS"}, limitsHeader...), rows)
		})
	}
}

func userGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewUserServiceClient(r.conn).GetUser(r.ctx, &adminv1.GetUserRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(userFields(resp.GetUser())) })
	}
}

func userUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	email := fs.String("email", "", "new email address")
	org := fs.String("org", "", "new organization id")
	mcpTools := mcpToolsFlag(fs)
	lf.register(fs)
	return func(r *runner, pos []string) error {
		l, err := lf.build(r.now())
		if err != nil {
			return err
		}
		mask, err := updateMask(r.set, map[string]string{"email": "email", "org": "org_id"}, &lf)
		mask, err = grantsOnly(r, adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_USER, pos[0], *mcpTools, mask, err)
		if err != nil {
			return err
		}
		if mask == nil {
			return userGet(nil)(r, pos)
		}
		resp, err := adminv1.NewUserServiceClient(r.conn).UpdateUser(r.ctx, &adminv1.UpdateUserRequest{
			User: &adminv1.User{Id: pos[0], Email: *email, OrgId: *org, Limits: l}, UpdateMask: mask,
		})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(userFields(resp.GetUser())) })
	}
}

func userDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewUserServiceClient(r.conn).DeleteUser(r.ctx, &adminv1.DeleteUserRequest{Id: pos[0]})
		return deleted(r, "user", pos[0], err)
	}
}

func orgCreate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	name := fs.String("name", "", "display name")
	mcpTools := mcpToolsFlag(fs)
	lf.register(fs)
	return func(r *runner, pos []string) error {
		l, err := lf.build(r.now())
		if err != nil {
			return err
		}
		resp, err := adminv1.NewOrgServiceClient(r.conn).CreateOrg(r.ctx, &adminv1.CreateOrgRequest{Org: &adminv1.Org{Id: pos[0], Name: *name, Limits: l}})
		if err == nil {
			err = grantMCPTools(r, adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_ORG, pos[0], *mcpTools)
		}
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(namedFields(resp.GetOrg())) })
	}
}

func orgList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListOrgsResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewOrgServiceClient(r.conn).ListOrgs(r.ctx, &adminv1.ListOrgsRequest{PageSize: size, PageToken: token})
			all.Orgs = append(all.Orgs, resp.GetOrgs()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() { namedTable(r, all.GetOrgs()) })
	}
}

func orgGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewOrgServiceClient(r.conn).GetOrg(r.ctx, &adminv1.GetOrgRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(namedFields(resp.GetOrg())) })
	}
}

func orgUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	name := fs.String("name", "", "new display name")
	mcpTools := mcpToolsFlag(fs)
	lf.register(fs)
	return func(r *runner, pos []string) error {
		l, err := lf.build(r.now())
		if err != nil {
			return err
		}
		mask, err := updateMask(r.set, map[string]string{"name": "name"}, &lf)
		mask, err = grantsOnly(r, adminv1.MCPToolsOwner_MCP_TOOLS_OWNER_ORG, pos[0], *mcpTools, mask, err)
		if err != nil {
			return err
		}
		if mask == nil {
			return orgGet(nil)(r, pos)
		}
		resp, err := adminv1.NewOrgServiceClient(r.conn).UpdateOrg(r.ctx, &adminv1.UpdateOrgRequest{Org: &adminv1.Org{Id: pos[0], Name: *name, Limits: l}, UpdateMask: mask})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(namedFields(resp.GetOrg())) })
	}
}

func orgDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewOrgServiceClient(r.conn).DeleteOrg(r.ctx, &adminv1.DeleteOrgRequest{Id: pos[0]})
		return deleted(r, "organization", pos[0], err)
	}
}

func customerCreate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	name := fs.String("name", "", "display name")
	lf.register(fs)
	return func(r *runner, pos []string) error {
		l, err := lf.build(r.now())
		if err != nil {
			return err
		}
		resp, err := adminv1.NewCustomerServiceClient(r.conn).CreateCustomer(r.ctx, &adminv1.CreateCustomerRequest{Customer: &adminv1.Customer{Id: pos[0], Name: *name, Limits: l}})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(namedFields(resp.GetCustomer())) })
	}
}

func customerList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListCustomersResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewCustomerServiceClient(r.conn).ListCustomers(r.ctx, &adminv1.ListCustomersRequest{PageSize: size, PageToken: token})
			all.Customers = append(all.Customers, resp.GetCustomers()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() { namedTable(r, all.GetCustomers()) })
	}
}

func customerGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewCustomerServiceClient(r.conn).GetCustomer(r.ctx, &adminv1.GetCustomerRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(namedFields(resp.GetCustomer())) })
	}
}

func customerUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	var lf limitsFlags
	name := fs.String("name", "", "new display name")
	lf.register(fs)
	return func(r *runner, pos []string) error {
		l, err := lf.build(r.now())
		if err != nil {
			return err
		}
		mask, err := updateMask(r.set, map[string]string{"name": "name"}, &lf)
		if err != nil {
			return err
		}
		resp, err := adminv1.NewCustomerServiceClient(r.conn).UpdateCustomer(r.ctx, &adminv1.UpdateCustomerRequest{Customer: &adminv1.Customer{Id: pos[0], Name: *name, Limits: l}, UpdateMask: mask})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(namedFields(resp.GetCustomer())) })
	}
}

func customerDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewCustomerServiceClient(r.conn).DeleteCustomer(r.ctx, &adminv1.DeleteCustomerRequest{Id: pos[0]})
		return deleted(r, "customer", pos[0], err)
	}
}
