package adminv1

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Hand-written validation of the request messages. The protovalidate rules
// cannot be used: their .proto is not obtainable offline (see admin/doc.go).
// The validator interceptor of go-grpc-middleware calls Validate() on every
// request and turns an error into InvalidArgument; FieldError names the field.

// FieldError says which request field is invalid and why.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "invalid " + e.Field + ": " + e.Reason }

func bad(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// MaxIDLength bounds every id and name.
const MaxIDLength = 128

// MaxPageSize bounds page_size.
const MaxPageSize = 1000

// ValidID reports whether s may be an object id: 1 to 128 characters among
// letters, digits and . _ - : @ + /.
func ValidID(s string) bool {
	if s == "" || len(s) > MaxIDLength {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.' || c == '_' || c == '-' || c == ':' || c == '@' || c == '+' || c == '/':
		default:
			return false
		}
	}
	return true
}

func id(field, v string) error {
	if v == "" {
		return bad(field, "is required")
	}
	if !ValidID(v) {
		return bad(field, "must be 1 to %d letters, digits or . _ - : @ + /", MaxIDLength)
	}
	return nil
}

func optID(field, v string) error {
	if v == "" {
		return nil
	}
	return id(field, v)
}

func text(field, v string) error {
	if len(v) > 256 {
		return bad(field, "is longer than 256 bytes")
	}
	return nil
}

func page(prefix string, size int32) error {
	if size < 0 || size > MaxPageSize {
		return bad(prefix+"page_size", "must be between 0 and %d", MaxPageSize)
	}
	return nil
}

func nonNeg(field string, v int64) error {
	if v < 0 {
		return bad(field, "must not be negative")
	}
	return nil
}

func money(field string, m *Money) error {
	if _, err := m.Nanos(); err != nil {
		return bad(field, "%v", err)
	}
	return nil
}

func positiveMoney(field string, m *Money) error {
	n, err := m.Nanos()
	if err != nil {
		return bad(field, "%v", err)
	}
	if n <= 0 {
		return bad(field, "must be more than zero")
	}
	return nil
}

func duration(field string, d *durationpb.Duration) error {
	if d == nil {
		return nil
	}
	if err := d.CheckValid(); err != nil {
		return bad(field, "%v", err)
	}
	if d.AsDuration() < 0 {
		return bad(field, "must not be negative")
	}
	return nil
}

func enumValue[E ~int32](field string, v E, maxValue E) error {
	if v < 0 || v > maxValue {
		return bad(field, "unknown value %d", v)
	}
	return nil
}

func mask(field string, m *fieldmaskpb.FieldMask, allowed ...string) error {
	if m == nil || len(m.GetPaths()) == 0 {
		return bad(field, "is required: name the fields to change (%v)", allowed)
	}
	for _, p := range m.GetPaths() {
		if !slices.Contains(allowed, p) {
			return bad(field, "unknown path %q (allowed: %v)", p, allowed)
		}
	}
	return nil
}

// LimitsPaths are the update_mask paths that change limits.
var LimitsPaths = []string{
	"limits", "limits.budgets", "limits.rpm", "limits.tpm", "limits.max_parallel",
	"limits.models", "limits.expires_at", "limits.mode", "limits.shortfall", "limits.run",
}

func withLimits(paths ...string) []string { return append(paths, LimitsPaths...) }

// validate checks one set of limits; prefix is the field path of l.
func (l *Limits) validate(prefix string) error {
	if l == nil {
		return nil
	}
	for i, b := range l.GetBudgets() {
		f := fmt.Sprintf("%sbudgets[%d]", prefix, i)
		if err := positiveMoney(f+".limit", b.GetLimit()); err != nil {
			return err
		}
		if err := enumValue(f+".period", b.GetPeriod(), PeriodKind_PERIOD_KIND_ROLLING); err != nil {
			return err
		}
		if err := duration(f+".every", b.GetEvery()); err != nil {
			return err
		}
		rolling := b.GetPeriod() == PeriodKind_PERIOD_KIND_ROLLING
		if rolling && b.GetEvery().AsDuration() < time.Minute {
			return bad(f+".every", "a rolling period must last at least one minute")
		}
		if tz := b.GetTimeZone(); tz != "" {
			switch b.GetPeriod() {
			case PeriodKind_PERIOD_KIND_DAILY, PeriodKind_PERIOD_KIND_WEEKLY, PeriodKind_PERIOD_KIND_MONTHLY:
			default:
				return bad(f+".time_zone", "a time zone applies to daily, weekly and monthly periods only")
			}
			if _, err := time.LoadLocation(tz); err != nil {
				return bad(f+".time_zone", "%q is not an IANA time zone (e.g. Europe/Paris)", tz)
			}
		}
		if !rolling && (b.GetEvery() != nil || b.GetAnchor() != nil) {
			return bad(f+".every", "every and anchor apply to rolling periods only")
		}
		if b.GetAnchor() != nil {
			if err := b.GetAnchor().CheckValid(); err != nil {
				return bad(f+".anchor", "%v", err)
			}
		}
	}
	for f, v := range map[string]int64{"rpm": l.GetRpm(), "tpm": l.GetTpm(), "max_parallel": l.GetMaxParallel()} {
		if err := nonNeg(prefix+f, v); err != nil {
			return err
		}
	}
	for i, m := range l.GetModels() {
		if err := id(fmt.Sprintf("%smodels[%d]", prefix, i), m); err != nil {
			return err
		}
	}
	if l.GetExpiresAt() != nil {
		if err := l.GetExpiresAt().CheckValid(); err != nil {
			return bad(prefix+"expires_at", "%v", err)
		}
	}
	if err := enumValue(prefix+"mode", l.GetMode(), BudgetMode_BUDGET_MODE_ESTIMATE); err != nil {
		return err
	}
	return enumValue(prefix+"shortfall", l.GetShortfall(), Shortfall_SHORTFALL_REJECT)
}

func metadata(field string, md map[string]string) error {
	if len(md) > 64 {
		return bad(field, "has more than 64 entries")
	}
	for k, v := range md {
		if k == "" || len(k) > 128 || len(v) > 1024 {
			return bad(field, "keys must be 1 to 128 bytes, values at most 1024 bytes (key %q)", k)
		}
	}
	return nil
}

func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func scope(prefix string, s *Scope) error {
	if s == nil {
		return nil
	}
	if err := enumValue(prefix+"kind", s.GetKind(), ScopeKind_SCOPE_KIND_TAG); err != nil {
		return err
	}
	k := s.GetKind()
	if k == ScopeKind_SCOPE_KIND_RUN { // "<owner kind>:<owner id>/<run id>"
		owner, run, ok := strings.Cut(s.GetId(), "/")
		if !ok || run == "" || !strings.Contains(owner, ":") || len(s.GetId()) > 300 {
			return bad(prefix+"id", "a run is named OWNER/RUN, e.g. key:k1/loop-1")
		}
		return nil
	}
	if k == ScopeKind_SCOPE_KIND_TAG { // "name=value"
		if !strings.Contains(s.GetId(), "=") {
			return bad(prefix+"id", "a tag is named name=value, e.g. feature=search")
		}
		return tag(prefix+"id", s.GetId())
	}
	if k == ScopeKind_SCOPE_KIND_UNSPECIFIED || k == ScopeKind_SCOPE_KIND_GLOBAL {
		if s.GetId() != "" {
			return bad(prefix+"id", "must be empty for the global scope")
		}
		return nil
	}
	return id(prefix+"id", s.GetId())
}

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateKeyRequest) Validate() error {
	return first(optID("id", r.GetId()), text("alias", r.GetAlias()), optID("user_id", r.GetUserId()),
		optID("team_id", r.GetTeamId()), optID("org_id", r.GetOrgId()), r.GetLimits().validate("limits."),
		metadata("metadata", r.GetMetadata()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetKeyRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListKeysRequest) Validate() error {
	return first(optID("team_id", r.GetTeamId()), optID("user_id", r.GetUserId()), text("alias", r.GetAlias()),
		enumValue("status", r.GetStatus(), KeyStatus_KEY_STATUS_EXPIRED), page("", r.GetPageSize()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *UpdateKeyRequest) Validate() error {
	return first(id("id", r.GetId()), mask("update_mask", r.GetUpdateMask(), withLimits("alias", "metadata", "passthrough", "tags")...),
		text("alias", r.GetAlias()), r.GetLimits().validate("limits."), metadata("metadata", r.GetMetadata()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *RevokeKeyRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *RotateKeyRequest) Validate() error {
	return first(id("id", r.GetId()), duration("grace_period", r.GetGracePeriod()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateUserRequest) Validate() error {
	u := r.GetUser()
	if u == nil {
		return bad("user", "is required")
	}
	if len(u.GetTeams()) > 0 {
		return bad("user.teams", "is set by AddTeamMember, not on create")
	}
	return first(id("user.id", u.GetId()), text("user.email", u.GetEmail()), optID("user.org_id", u.GetOrgId()),
		u.GetLimits().validate("user.limits."))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetUserRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListUsersRequest) Validate() error { return page("", r.GetPageSize()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *UpdateUserRequest) Validate() error {
	u := r.GetUser()
	return first(id("user.id", u.GetId()), mask("update_mask", r.GetUpdateMask(), withLimits("email", "org_id")...),
		text("user.email", u.GetEmail()), optID("user.org_id", u.GetOrgId()), u.GetLimits().validate("user.limits."))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteUserRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateTeamRequest) Validate() error {
	t := r.GetTeam()
	if t == nil {
		return bad("team", "is required")
	}
	if len(t.GetMembers()) > 0 {
		return bad("team.members", "is set by AddTeamMember, not on create")
	}
	return first(id("team.id", t.GetId()), text("team.name", t.GetName()), optID("team.org_id", t.GetOrgId()),
		t.GetLimits().validate("team.limits."))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetTeamRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListTeamsRequest) Validate() error {
	return first(optID("org_id", r.GetOrgId()), page("", r.GetPageSize()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *UpdateTeamRequest) Validate() error {
	t := r.GetTeam()
	return first(id("team.id", t.GetId()), mask("update_mask", r.GetUpdateMask(), withLimits("name", "org_id")...),
		text("team.name", t.GetName()), optID("team.org_id", t.GetOrgId()), t.GetLimits().validate("team.limits."))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteTeamRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *AddTeamMemberRequest) Validate() error {
	return first(id("team_id", r.GetTeamId()), id("user_id", r.GetUserId()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *RemoveTeamMemberRequest) Validate() error {
	return first(id("team_id", r.GetTeamId()), id("user_id", r.GetUserId()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateOrgRequest) Validate() error {
	o := r.GetOrg()
	if o == nil {
		return bad("org", "is required")
	}
	return first(id("org.id", o.GetId()), text("org.name", o.GetName()), o.GetLimits().validate("org.limits."))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetOrgRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListOrgsRequest) Validate() error { return page("", r.GetPageSize()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *UpdateOrgRequest) Validate() error {
	o := r.GetOrg()
	return first(id("org.id", o.GetId()), mask("update_mask", r.GetUpdateMask(), withLimits("name")...),
		text("org.name", o.GetName()), o.GetLimits().validate("org.limits."))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteOrgRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateCustomerRequest) Validate() error {
	c := r.GetCustomer()
	if c == nil {
		return bad("customer", "is required")
	}
	return first(id("customer.id", c.GetId()), text("customer.name", c.GetName()),
		c.GetLimits().validate("customer.limits."))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetCustomerRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListCustomersRequest) Validate() error { return page("", r.GetPageSize()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *UpdateCustomerRequest) Validate() error {
	c := r.GetCustomer()
	return first(id("customer.id", c.GetId()), mask("update_mask", r.GetUpdateMask(), withLimits("name")...),
		text("customer.name", c.GetName()), c.GetLimits().validate("customer.limits."))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteCustomerRequest) Validate() error { return id("id", r.GetId()) }

func (p *Provider) validate(needType bool) error {
	if needType && p.GetType() == ProviderType_PROVIDER_TYPE_UNSPECIFIED {
		return bad("provider.type", "is required (openai, azure, anthropic, gemini, bedrock or vertex)")
	}
	if err := enumValue("provider.type", p.GetType(), ProviderType_PROVIDER_TYPE_VERTEX); err != nil {
		return err
	}
	if needType && p.GetBaseUrl() == "" {
		return bad("provider.base_url", "is required (e.g. https://api.openai.com/v1)")
	}
	if u := p.GetBaseUrl(); u != "" && !ValidBaseURL(u) {
		return bad("provider.base_url", "must be an absolute http or https URL without query or fragment")
	}
	if p.GetHasCredential() {
		return bad("provider.has_credential", "is output only; set credential instead")
	}
	return first(id("provider.id", p.GetId()), text("provider.api_version", p.GetApiVersion()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateProviderRequest) Validate() error {
	if r.GetProvider() == nil {
		return bad("provider", "is required")
	}
	return first(r.GetProvider().validate(true), credential(r.GetCredential()), adminCredential(r.GetAdminCredential()))
}

func credential(c string) error {
	if len(c) > 8192 {
		return bad("credential", "is longer than 8192 bytes")
	}
	return nil
}

// adminCredential bounds a provider's admin key like its API key.
func adminCredential(c string) error {
	if len(c) > 8192 {
		return bad("admin_credential", "is longer than 8192 bytes")
	}
	return nil
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetProviderRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListProvidersRequest) Validate() error { return page("", r.GetPageSize()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *UpdateProviderRequest) Validate() error {
	return first(mask("update_mask", r.GetUpdateMask(), "type", "base_url", "api_version", "credential", "admin_credential", "price_per_call", "responses_api"),
		r.GetProvider().validate(false), credential(r.GetCredential()), adminCredential(r.GetAdminCredential()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteProviderRequest) Validate() error { return id("id", r.GetId()) }

func (d *Deployment) validate() error {
	if d.GetWeight() < 0 {
		return bad("deployment.weight", "must not be negative")
	}
	return first(id("deployment.id", d.GetId()), optID("deployment.provider", d.GetProvider()),
		text("deployment.provider_model", d.GetProviderModel()), optID("deployment.base_model", d.GetBaseModel()),
		nonNeg("deployment.rpm", d.GetRpm()), nonNeg("deployment.tpm", d.GetTpm()), d.validateRouting())
}

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateDeploymentRequest) Validate() error {
	d := r.GetDeployment()
	if d == nil {
		return bad("deployment", "is required")
	}
	return first(d.validate(), id("deployment.provider", d.GetProvider()),
		id("deployment.provider_model", d.GetProviderModel()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetDeploymentRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListDeploymentsRequest) Validate() error {
	return first(optID("provider", r.GetProvider()), page("", r.GetPageSize()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *UpdateDeploymentRequest) Validate() error {
	return first(mask("update_mask", r.GetUpdateMask(), append([]string{"provider", "provider_model", "weight", "rpm", "tpm", "base_model", "free"}, DeploymentRoutingPaths...)...),
		r.GetDeployment().validate())
}

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteDeploymentRequest) Validate() error { return id("id", r.GetId()) }

func (m *Model) validate() error {
	for i, d := range m.GetDeployments() {
		if err := id(fmt.Sprintf("model.deployments[%d]", i), d); err != nil {
			return err
		}
	}
	return first(id("model.id", m.GetId()), nonNeg("model.default_max_tokens", m.GetDefaultMaxTokens()), m.validateRouting())
}

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateModelRequest) Validate() error {
	if r.GetModel() == nil {
		return bad("model", "is required")
	}
	return r.GetModel().validate()
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetModelRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListModelsRequest) Validate() error { return page("", r.GetPageSize()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *UpdateModelRequest) Validate() error {
	return first(mask("update_mask", r.GetUpdateMask(), append(append([]string{"deployments", "default_max_tokens", "aliases", "upstream_model_from_request"}, ModelRoutingPaths...), ModelCachePaths...)...), r.GetModel().validate())
}

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteModelRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *SetPriceRequest) Validate() error {
	p := r.GetPrice()
	if p == nil {
		return bad("price", "is required")
	}
	if r.GetUpdateMask() != nil {
		if err := mask("update_mask", r.GetUpdateMask(), PricePaths...); err != nil {
			return err
		}
	} else if p.GetInput() == nil || p.GetOutput() == nil {
		return bad("price.input", "input and output prices are required (dollars per million tokens), or an update_mask naming the prices to set")
	}
	for k, m := range p.GetPerImage() {
		if k == "" || len(k) > MaxIDLength {
			return bad("price.per_image", "%q is not SIZE/QUALITY, SIZE, */QUALITY or *", k)
		}
		if err := money("price.per_image["+k+"]", m); err != nil {
			return err
		}
	}
	return first(id("price.model", p.GetModel()), money("price.input", p.GetInput()),
		money("price.cached_input", p.GetCachedInput()), money("price.cache_write", p.GetCacheWrite()),
		money("price.output", p.GetOutput()), money("price.reasoning", p.GetReasoning()),
		money("price.per_second", p.GetPerSecond()), money("price.per_character", p.GetPerCharacter()),
		money("price.per_search_unit", p.GetPerSearchUnit()), money("price.image_input_tokens", p.GetImageInputTokens()),
		money("price.image_output_tokens", p.GetImageOutputTokens()))
}

// PricePaths are the update_mask paths of SetPriceRequest.
var PricePaths = []string{
	"input", "cached_input", "cache_write", "output", "reasoning",
	"per_image", "per_second", "per_character", "per_search_unit", "image_input_tokens", "image_output_tokens",
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetPriceRequest) Validate() error { return id("model", r.GetModel()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ListPricesRequest) Validate() error { return page("", r.GetPageSize()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *DeletePriceRequest) Validate() error { return id("model", r.GetModel()) }

type timeRanged interface {
	GetSince() *timestamppb.Timestamp
	GetUntil() *timestamppb.Timestamp
}

func timeRange(r timeRanged) error {
	if r.GetSince() != nil {
		if err := r.GetSince().CheckValid(); err != nil {
			return bad("since", "%v", err)
		}
	}
	if r.GetUntil() != nil {
		if err := r.GetUntil().CheckValid(); err != nil {
			return bad("until", "%v", err)
		}
		if r.GetSince() != nil && !r.GetUntil().AsTime().After(r.GetSince().AsTime()) {
			return bad("until", "must be after since")
		}
	}
	return nil
}

// ValidBaseURL reports whether u is an absolute http(s) URL with a host and
// no query or fragment.
func ValidBaseURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != "" &&
		p.RawQuery == "" && p.Fragment == "" && p.User == nil
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetSpendRequest) Validate() error {
	return first(scope("scope.", r.GetScope()), optID("model", r.GetModel()), timeRange(r))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetSpendSeriesRequest) Validate() error {
	if err := first(scope("scope.", r.GetScope()), optID("model", r.GetModel()), timeRange(r),
		duration("step", r.GetStep())); err != nil {
		return err
	}
	if s := r.GetStep(); s != nil && (s.AsDuration() < time.Hour || s.AsDuration()%time.Hour != 0) {
		return bad("step", "must be a whole number of hours")
	}
	return nil
}

// Validate implements the go-grpc-middleware validator interface.
func (r *GetSpendBreakdownRequest) Validate() error {
	switch g := r.GetGroupBy(); {
	case g == "key", g == "team", g == "user", g == "org", g == "customer", g == "model", g == "mcp_server", g == "mcp_tool", g == "tag", g == "run":
	case strings.HasPrefix(g, "tag:") && len(g) > len("tag:") && len(g) <= len("tag:")+64 && !strings.ContainsAny(g[len("tag:"):], "=,"):
	default:
		return bad("group_by", "must be key, team, user, org, customer, model, mcp_server, mcp_tool, run, tag or tag:NAME, not %q", r.GetGroupBy())
	}
	if err := first(timeRange(r), duration("step", r.GetStep())); err != nil {
		return err
	}
	if s := r.GetStep(); s != nil && (s.AsDuration() < time.Hour || s.AsDuration()%time.Hour != 0) {
		return bad("step", "must be a whole number of hours")
	}
	return nil
}

// Validate implements the go-grpc-middleware validator interface.
func (r *ListSpendEntriesRequest) Validate() error {
	return first(scope("scope.", r.GetScope()), optID("model", r.GetModel()), timeRange(r), page("", r.GetPageSize()))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *ListAuditRequest) Validate() error { return page("", r.GetPageSize()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *CreateAdminCredentialRequest) Validate() error {
	switch r.GetRole() {
	case AdminRole_ADMIN_ROLE_ADMIN, AdminRole_ADMIN_ROLE_VIEWER:
		if r.GetTeamId() != "" {
			return bad("team_id", "applies to the team-admin role only")
		}
		return nil
	case AdminRole_ADMIN_ROLE_TEAM_ADMIN:
		return id("team_id", r.GetTeamId())
	default:
		return bad("role", "is required (admin, team-admin or viewer)")
	}
}

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteAdminCredentialRequest) Validate() error { return id("id", r.GetId()) }

// Validate implements the go-grpc-middleware validator interface.
func (r *ApplyRequest) Validate() error {
	if r.GetDocument() == "" {
		return bad("document", "is required")
	}
	if len(r.GetDocument()) > 4<<20 {
		return bad("document", "is larger than 4 MiB")
	}
	return nil
}

// Validate implements the go-grpc-middleware validator interface.
func (r *ListMissingPricesRequest) Validate() error { return nil }
