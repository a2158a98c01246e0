package cli

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"gopkg.in/yaml.v3"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func init() {
	register(
		&command{noun: "spend", verb: "total", help: "total spend of a scope (--key/--user/--team/--org/--customer/--run/--tag, --model)", setup: spendTotal},
		&command{noun: "spend", verb: "daily", help: "spend per day (or --step) of a scope", setup: spendDaily},
		&command{noun: "spend", verb: "logs", help: "per-request ledger rows of a scope", setup: spendLogs},
		&command{noun: "audit", verb: "list", help: "admin changes: who did what, when", setup: auditList},
		&command{noun: "admin-key", verb: "create", help: "create an admin credential (--role admin|team-admin|viewer)", setup: adminKeyCreate},
		&command{noun: "admin-key", verb: "list", help: "list admin credentials", setup: adminKeyList},
		&command{noun: "admin-key", verb: "delete", args: "ID", help: "delete an admin credential", setup: adminKeyDelete},
		&command{noun: "admin-key", verb: "whoami", help: "show the admin credential in use", setup: adminKeyWhoami},
		&command{noun: "apply", verb: "-f", args: "FILE", help: "apply a declarative YAML configuration (idempotent)", setup: applyFile},
	)
}

// rangeFlags select the time range of a spend report.
type rangeFlags struct{ since, until string }

func (w *rangeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&w.since, "since", "", "start: a date, an RFC 3339 time or a duration ago (7d); default 30 days ago")
	fs.StringVar(&w.until, "until", "", "end (exclusive), same forms; default now")
}

// bounds are the range's ends (nil: the server's default).
func (w *rangeFlags) bounds(r *runner) (since, until *timestamppb.Timestamp, err error) {
	if w.since != "" {
		if since, err = parseWhen("since", w.since, r.now(), true); err != nil {
			return nil, nil, err
		}
	}
	if w.until != "" {
		if until, err = parseWhen("until", w.until, r.now(), true); err != nil {
			return nil, nil, err
		}
	}
	return since, until, nil
}

// breakdown is the spend of every group of groupBy over the range
// (spend by, spend cache).
func (w *rangeFlags) breakdown(r *runner, groupBy string) (*adminv1.GetSpendBreakdownResponse, error) {
	since, until, err := w.bounds(r)
	if err != nil {
		return nil, err
	}
	return adminv1.NewSpendServiceClient(r.conn).GetSpendBreakdown(r.ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: groupBy, Since: since, Until: until})
}

// scopeFlags select the scope of a spend report; none means global.
type scopeFlags struct {
	key, user, team, org, customer string
	run, tag                       string
	model                          string
	rangeFlags
}

func (s *scopeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.key, "key", "", "spend of this key")
	fs.StringVar(&s.user, "user", "", "spend of this user")
	fs.StringVar(&s.team, "team", "", "spend of this team")
	fs.StringVar(&s.org, "org", "", "spend of this organization")
	fs.StringVar(&s.customer, "customer", "", "spend of this end customer")
	fs.StringVar(&s.run, "run", "", "spend of this run: OWNER/RUN as the ledger names it, e.g. key:k1/loop-1")
	fs.StringVar(&s.tag, "tag", "", "spend of the requests carrying this tag, name=value")
	fs.StringVar(&s.model, "model", "", "only this public model name")
	s.rangeFlags.register(fs)
}

func (s *scopeFlags) scope() (*adminv1.Scope, string, error) {
	var out *adminv1.Scope
	label := "global"
	for _, c := range []struct {
		id   string
		kind adminv1.ScopeKind
		name string
	}{
		{s.key, adminv1.ScopeKind_SCOPE_KIND_KEY, "key"},
		{s.user, adminv1.ScopeKind_SCOPE_KIND_USER, "user"},
		{s.team, adminv1.ScopeKind_SCOPE_KIND_TEAM, "team"},
		{s.org, adminv1.ScopeKind_SCOPE_KIND_ORG, "org"},
		{s.customer, adminv1.ScopeKind_SCOPE_KIND_CUSTOMER, "customer"},
		{s.run, adminv1.ScopeKind_SCOPE_KIND_RUN, "run"},
		{s.tag, adminv1.ScopeKind_SCOPE_KIND_TAG, "tag"},
	} {
		if c.id == "" {
			continue
		}
		if out != nil {
			return nil, "", fmt.Errorf("%w: give one of --key, --user, --team, --org, --customer, --run, --tag", ErrUsage)
		}
		out, label = &adminv1.Scope{Kind: c.kind, Id: c.id}, c.name+" "+c.id
	}
	return out, label, nil
}

// request is the spend query the flags describe (scope, model and time range)
// and a label naming its scope.
func (s *scopeFlags) request(r *runner) (*adminv1.GetSpendRequest, string, error) {
	scope, label, err := s.scope()
	if err != nil {
		return nil, "", err
	}
	req := &adminv1.GetSpendRequest{Scope: scope, Model: s.model}
	if req.Since, req.Until, err = s.bounds(r); err != nil {
		return nil, "", err
	}
	return req, label, nil
}

func spendTotal(fs *flag.FlagSet) func(*runner, []string) error {
	var sf scopeFlags
	sf.register(fs)
	return func(r *runner, _ []string) error {
		req, label, err := sf.request(r)
		if err != nil {
			return err
		}
		resp, err := adminv1.NewSpendServiceClient(r.conn).GetSpend(r.ctx, req)
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			since := "30 days ago"
			if req.GetSince() != nil {
				since = when(req.GetSince())
			}
			until := "now"
			if req.GetUntil() != nil {
				until = when(req.GetUntil())
			}
			r.table([]string{"SCOPE", "MODEL", "SINCE", "UNTIL", "SPEND", "REQUESTS", "TOKENS"}, [][]string{{
				label, orDash(sf.model), since, until, usd(resp.GetTotal()), fmt.Sprint(resp.GetRequests()), fmt.Sprint(resp.GetTokens()),
			}})
		})
	}
}

func spendDaily(fs *flag.FlagSet) func(*runner, []string) error {
	var sf scopeFlags
	sf.register(fs)
	step := fs.String("step", "24h", "bucket length, whole hours (e.g. 1h, 24h, 7d)")
	return func(r *runner, _ []string) error {
		w, _, err := sf.request(r)
		if err != nil {
			return err
		}
		d, err := parseDuration(*step)
		if err != nil {
			return fmt.Errorf("%w: --step: %w", ErrUsage, err)
		}
		resp, err := adminv1.NewSpendServiceClient(r.conn).GetSpendSeries(r.ctx, &adminv1.GetSpendSeriesRequest{
			Scope: w.GetScope(), Model: w.GetModel(), Since: w.GetSince(), Until: w.GetUntil(), Step: durationpb.New(d),
		})
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			layout := time.DateOnly
			if d%(24*time.Hour) != 0 {
				layout = "2006-01-02 15:04"
			}
			var rows [][]string
			for _, p := range resp.GetPoints() {
				rows = append(rows, []string{p.GetStart().AsTime().UTC().Format(layout), usd(p.GetCost()), fmt.Sprint(p.GetRequests()), fmt.Sprint(p.GetTokens())})
			}
			r.table([]string{"START", "SPEND", "REQUESTS", "TOKENS"}, rows)
		})
	}
}

var statusNames = map[adminv1.RequestStatus]string{
	adminv1.RequestStatus_REQUEST_STATUS_COMPLETED: "completed", adminv1.RequestStatus_REQUEST_STATUS_ABORTED: "aborted",
	adminv1.RequestStatus_REQUEST_STATUS_FAILED: "failed", adminv1.RequestStatus_REQUEST_STATUS_EXPIRED: "expired",
	adminv1.RequestStatus_REQUEST_STATUS_REFUSED: "refused",
}

func spendLogs(fs *flag.FlagSet) func(*runner, []string) error {
	var sf scopeFlags
	var pf pageFlags
	sf.register(fs)
	pf.register(fs)
	return func(r *runner, _ []string) error {
		w, _, err := sf.request(r)
		if err != nil {
			return err
		}
		all := &adminv1.ListSpendEntriesResponse{}
		err = pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewSpendServiceClient(r.conn).ListSpendEntries(r.ctx, &adminv1.ListSpendEntriesRequest{
				Scope: w.GetScope(), Model: w.GetModel(), Since: w.GetSince(), Until: w.GetUntil(), PageSize: size, PageToken: token,
			})
			all.Entries = append(all.Entries, resp.GetEntries()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, e := range all.GetEntries() {
				u := e.GetUsage()
				cost := usd(e.GetCost())
				if e.GetUnpriced() { // no price: never shown as a plain $0
					cost = "unpriced"
				}
				model := e.GetModel()
				if rm := e.GetRequestedModel(); rm != "" { // the client's name, its group beside it
					model = rm + " (" + model + ")"
				}
				dep := orDash(e.GetDeployment())
				if c := e.GetCache(); c == "hit" || c == "semantic_hit" { // answered by the gateway
					dep = "(cache " + c + ")"
				}
				in, out := fmt.Sprint(u.GetInput()+u.GetCachedInput()+u.GetCacheWrite()), fmt.Sprint(u.GetOutput()+u.GetReasoning())
				units := "-"
				if e.GetUnit() != "" {
					units = fmt.Sprint(e.GetQuantity(), " ", e.GetUnit())
					if u.GetInput() == e.GetQuantity() && in == fmt.Sprint(e.GetQuantity()) && out == "0" {
						in, out = "-", "-" // charged per unit: the usage's input is the quantity, not tokens
					}
				}
				rows = append(rows, []string{
					when(e.GetEndedAt()), e.GetRequestId(), e.GetKeyId(), model, dep, in, out, units,
					cost, statusNames[e.GetStatus()], fmt.Sprint(e.GetHttpStatus()),
				})
			}
			r.table([]string{"ENDED", "REQUEST", "KEY", "MODEL", "DEPLOYMENT", "IN", "OUT", "UNITS", "COST", "STATUS", "HTTP"}, rows)
		})
	}
}

func auditList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListAuditResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewAuditServiceClient(r.conn).ListAudit(r.ctx, &adminv1.ListAuditRequest{PageSize: size, PageToken: token})
			all.Entries = append(all.Entries, resp.GetEntries()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, e := range all.GetEntries() {
				rows = append(rows, []string{fmt.Sprint(e.GetId()), when(e.GetAt()), e.GetActor(), e.GetAction(), orDash(e.GetKind() + "/" + e.GetTarget()), orDash(e.GetDetail())})
			}
			r.table([]string{"ID", "AT", "ACTOR", "ACTION", "TARGET", "DETAIL"}, rows)
		})
	}
}

var roleNames = map[string]adminv1.AdminRole{
	"admin": adminv1.AdminRole_ADMIN_ROLE_ADMIN, "team-admin": adminv1.AdminRole_ADMIN_ROLE_TEAM_ADMIN,
	"viewer": adminv1.AdminRole_ADMIN_ROLE_VIEWER,
}

func roleName(r adminv1.AdminRole) string {
	for k, v := range roleNames {
		if v == r {
			return k
		}
	}
	return "-"
}

func credRow(c *adminv1.AdminCredential) []string {
	return []string{c.GetId(), roleName(c.GetRole()), orDash(c.GetTeamId()), when(c.GetCreatedAt())}
}

var credHeader = []string{"ID", "ROLE", "TEAM", "CREATED"}

func adminKeyCreate(fs *flag.FlagSet) func(*runner, []string) error {
	role := fs.String("role", "", "admin, team-admin or viewer (required)")
	team := fs.String("team", "", "the team of a team-admin")
	return func(r *runner, _ []string) error {
		rl, ok := roleNames[*role]
		if !ok {
			return fmt.Errorf("%w: --role %q: use admin, team-admin or viewer", ErrUsage, *role)
		}
		resp, err := adminv1.NewAdminCredentialServiceClient(r.conn).CreateAdminCredential(r.ctx, &adminv1.CreateAdminCredentialRequest{Role: rl, TeamId: *team})
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			row := credRow(resp.GetCredential())
			r.fields([][2]string{{"SECRET", resp.GetSecret()}, {"ID", row[0]}, {"ROLE", row[1]}, {"TEAM", row[2]}, {"CREATED", row[3]}})
			_, _ = fmt.Fprintln(r.errOut, "The secret is shown only now: store it safely.")
		})
	}
}

func adminKeyList(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, _ []string) error {
		resp, err := adminv1.NewAdminCredentialServiceClient(r.conn).ListAdminCredentials(r.ctx, &adminv1.ListAdminCredentialsRequest{})
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			var rows [][]string
			for _, c := range resp.GetCredentials() {
				rows = append(rows, credRow(c))
			}
			r.table(credHeader, rows)
		})
	}
}

func adminKeyDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewAdminCredentialServiceClient(r.conn).DeleteAdminCredential(r.ctx, &adminv1.DeleteAdminCredentialRequest{Id: pos[0]})
		return deleted(r, "admin credential", pos[0], err)
	}
}

func adminKeyWhoami(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, _ []string) error {
		resp, err := adminv1.NewAdminCredentialServiceClient(r.conn).WhoAmI(r.ctx, &adminv1.WhoAmIRequest{})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.table(credHeader, [][]string{credRow(resp.GetCredential())}) })
	}
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandDocument replaces ${NAME} references in the document's values with
// this process's environment; references to unset variables are left for the
// server to resolve (it fails when it cannot).
func expandDocument(doc []byte) ([]byte, error) {
	if !envRef.Match(doc) {
		return doc, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("%w: the file is not valid YAML: %w", ErrUsage, err)
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && envRef.MatchString(n.Value) {
			n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
				if v, ok := os.LookupEnv(m[2 : len(m)-1]); ok {
					return v
				}
				return m
			})
			n.Style = yaml.DoubleQuotedStyle
			n.Tag = "!!str"
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&root)
	out, err := yaml.Marshal(&root)
	if err != nil {
		return nil, fmt.Errorf("re-encode the document: %w", err)
	}
	return out, nil
}

// applyFile is `tollgate apply -f FILE`: the verb slot holds "-f".
func applyFile(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		var doc []byte
		var err error
		if pos[0] == "-" {
			doc, err = io.ReadAll(io.LimitReader(os.Stdin, 8<<20))
		} else {
			doc, err = os.ReadFile(pos[0])
		}
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", pos[0], err)
		}
		if doc, err = expandDocument(doc); err != nil {
			return err
		}
		resp, err := adminv1.NewConfigServiceClient(r.conn).Apply(r.ctx, &adminv1.ApplyRequest{Document: string(doc)})
		if err != nil {
			return err
		}
		r.warnings(resp.GetWarnings())
		return r.emit(resp, func() {
			var rows [][]string
			for _, s := range []struct {
				what  string
				names []string
			}{{"created", resp.GetCreated()}, {"updated", resp.GetUpdated()}, {"unchanged", resp.GetUnchanged()}} {
				for _, n := range s.names {
					rows = append(rows, []string{s.what, n})
				}
			}
			r.table([]string{"CHANGE", "OBJECT"}, rows)
			_, _ = fmt.Fprintf(r.out, "%d created, %d updated, %d unchanged\n", len(resp.GetCreated()), len(resp.GetUpdated()), len(resp.GetUnchanged()))
			for _, id := range slices.Sorted(maps.Keys(resp.GetSecrets())) {
				_, _ = fmt.Fprintf(r.out, "secret of key %s (shown only now): %s\n", id, resp.GetSecrets()[id])
			}
		})
	}
}
