package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// Declarative configuration: a YAML document of providers, deployments, model
// groups, prices, organizations, teams, users, customers, keys and global
// limits, applied idempotently. Objects absent from the document are left
// alone (Apply never deletes). See deploy/tollgate.yaml.

// Document is the YAML configuration applied by Apply.
type Document struct {
	Providers     []ProviderDoc   `yaml:"providers"`
	Deployments   []DeploymentDoc `yaml:"deployments"`
	Models        []ModelDoc      `yaml:"models"`
	Prices        []priceDoc      `yaml:"prices"`
	DefaultPrices bool            `yaml:"default_prices"` // store the built-in prices not already set
	Orgs          []OrgDoc        `yaml:"orgs"`
	Teams         []TeamDoc       `yaml:"teams"`
	Users         []UserDoc       `yaml:"users"`
	Customers     []CustomerDoc   `yaml:"customers"`
	Keys          []KeyDoc        `yaml:"keys"`
	Global        *LimitsHolder   `yaml:"global"`
	MCPServers    []MCPServerDoc  `yaml:"mcp_servers"` // apply_mcp.go
	// Guardrails and their attachments (apply_guardrails.go).
	Guardrails           []GuardrailDoc           `yaml:"guardrails"`
	GuardrailAttachments []GuardrailAttachmentDoc `yaml:"guardrail_attachments"`
	// TagBudgets are the limits of tags (tags.go).
	TagBudgets []TagBudgetDoc `yaml:"tag_budgets"`
	// AlertSinks and Alerts (the settings) are apply_alerts.go's.
	AlertSinks []AlertSinkDoc `yaml:"alert_sinks"`
	Alerts     *AlertsDoc     `yaml:"alerts"`
}

// TagBudgetDoc is the limits of one tag, "name=value".
type TagBudgetDoc struct {
	Tag    string    `yaml:"tag"`
	Limits LimitsDoc `yaml:"limits"`
}

// ProviderDoc is a provider; credential may be a ${ENV_VAR} reference.
type ProviderDoc struct {
	ID         string `yaml:"id"`
	Type       string `yaml:"type"` // openai | azure | anthropic | gemini | bedrock | vertex
	BaseURL    string `yaml:"base_url"`
	APIVersion string `yaml:"api_version"`
	Credential string `yaml:"credential"`
	// ResponsesAPI: the upstream serves the Responses API itself.
	ResponsesAPI bool `yaml:"responses_api"`
	// AdminCredential is the provider's admin key for its usage and cost
	// reports (docs/reconcile.md), usually ${ENV_VAR}; kept when absent.
	AdminCredential string `yaml:"admin_credential"`
	// PricePerCall is the dollars of a pass-through call without a readable
	// usage or a model price (docs/endpoints.md), e.g. "0.002".
	PricePerCall string `yaml:"price_per_call"`
}

// DeploymentDoc is a deployment.
type DeploymentDoc struct {
	ID            string `yaml:"id"`
	Provider      string `yaml:"provider"`
	ProviderModel string `yaml:"provider_model"`
	Weight        int    `yaml:"weight"`
	RPM           int64  `yaml:"rpm"`
	TPM           int64  `yaml:"tpm"`
	// BaseModel names the model to price ProviderModel by; Free declares the
	// deployment free of charge (store.Deployment).
	BaseModel string `yaml:"base_model"`
	Free      bool   `yaml:"free"`

	DeploymentRoutingDoc `yaml:",inline"`
}

// ModelDoc is a model group.
type ModelDoc struct {
	ID               string   `yaml:"id"` // the public model name
	Deployments      []string `yaml:"deployments"`
	DefaultMaxTokens int64    `yaml:"default_max_tokens"`
	Aliases          []string `yaml:"aliases"` // other names clients may ask for
	// UpstreamModelFromRequest sends the client's model name upstream as is.
	UpstreamModelFromRequest bool `yaml:"upstream_model_from_request"`

	ModelRoutingDoc `yaml:",inline"`
	Cache           *ModelCacheDoc `yaml:"cache"` // admin/cache.go
}

// LimitsDoc is kernel.Limits as written in YAML: money in dollars.
type LimitsDoc struct {
	Budgets     []BudgetDoc `yaml:"budgets"`
	RPM         int64       `yaml:"rpm"`
	TPM         int64       `yaml:"tpm"`
	MaxParallel int64       `yaml:"max_parallel"`
	Models      []string    `yaml:"models"`
	ExpiresAt   time.Time   `yaml:"expires_at"`
	Mode        string      `yaml:"mode"`      // strict (default) | estimate
	Shortfall   string      `yaml:"shortfall"` // clamp (default) | reject
	Run         *RunDoc     `yaml:"run"`       // each run's limits (x-tollgate-run-id)
}

// RunDoc is kernel.RunPolicy as written in YAML.
type RunDoc struct {
	Budget string `yaml:"budget"` // dollars
	RPM    int64  `yaml:"rpm"`
	TTL    string `yaml:"ttl"` // a Go duration, e.g. 1h; default 1h
}

// BudgetDoc is one budget window.
type BudgetDoc struct {
	Limit  string    `yaml:"limit"`  // dollars, e.g. "100" or "12.50"
	Period string    `yaml:"period"` // total | daily | weekly | monthly | rolling
	Every  string    `yaml:"every"`  // rolling only, a Go duration such as 72h
	Anchor time.Time `yaml:"anchor"` // rolling only
	// TimeZone is the IANA zone of daily/weekly/monthly periods; empty is UTC.
	TimeZone string `yaml:"time_zone"`
	// Soft budgets never refuse: past the limit they warn and alert.
	Soft bool `yaml:"soft"`
}

// LimitsHolder carries only limits (the global scope).
type LimitsHolder struct {
	Limits LimitsDoc `yaml:"limits"`
}

// OrgDoc is an organization.
type OrgDoc struct {
	ID       string    `yaml:"id"`
	Name     string    `yaml:"name"`
	Limits   LimitsDoc `yaml:"limits"`
	MCPTools []string  `yaml:"mcp_tools"` // SERVER/TOOL globs (apply_mcp.go)
}

// TeamDoc is a team; members is the full list of its user ids.
type TeamDoc struct {
	ID      string    `yaml:"id"`
	Name    string    `yaml:"name"`
	Org     string    `yaml:"org"`
	Members []string  `yaml:"members"`
	Limits  LimitsDoc `yaml:"limits"`
	// MCPTools are SERVER/TOOL globs (apply_mcp.go).
	MCPTools []string `yaml:"mcp_tools"`
	// Passthrough grants every key of the team pass-through routes.
	Passthrough []string `yaml:"passthrough"`
}

// UserDoc is a user (team membership is declared on teams).
type UserDoc struct {
	ID     string    `yaml:"id"`
	Email  string    `yaml:"email"`
	Org    string    `yaml:"org"`
	Limits LimitsDoc `yaml:"limits"`
	// MCPTools are SERVER/TOOL globs (apply_mcp.go).
	MCPTools []string `yaml:"mcp_tools"`
}

// CustomerDoc is an end customer.
type CustomerDoc struct {
	ID     string    `yaml:"id"`
	Name   string    `yaml:"name"`
	Limits LimitsDoc `yaml:"limits"`
}

// KeyDoc is a virtual key. secret may be a ${ENV_VAR} reference; without one a
// new key gets a generated secret, returned once in ApplyResult.Secrets.
type KeyDoc struct {
	ID       string            `yaml:"id"`
	Alias    string            `yaml:"alias"`
	Team     string            `yaml:"team"`
	User     string            `yaml:"user"`
	Org      string            `yaml:"org"`
	Secret   string            `yaml:"secret"`
	Metadata map[string]string `yaml:"metadata"`
	Limits   LimitsDoc         `yaml:"limits"`
	MCPTools []string          `yaml:"mcp_tools"` // SERVER/TOOL globs (apply_mcp.go)
	// Passthrough grants pass-through routes: "PROVIDER_ID:PATH_GLOB" each.
	Passthrough []string `yaml:"passthrough"`
	// Tags are the key's default tags (name: value).
	Tags map[string]string `yaml:"tags"`
}

// ApplyResult says what Apply changed, as "kind/id".
type ApplyResult struct {
	Created   []string
	Updated   []string
	Unchanged []string
	// Secrets are the generated secrets of keys created without one, by key id.
	Secrets map[string]string
}

// Changed reports whether anything was created or updated.
func (r *ApplyResult) Changed() bool { return len(r.Created)+len(r.Updated) > 0 }

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${NAME} references with the environment's values; an
// unset variable is an error naming the field.
func expandEnv(field, s string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", errorf(ErrInvalid, "%s: environment variable %s is not set", field, strings.Join(missing, ", "))
	}
	return out, nil
}

func limitsFromDoc(field string, d LimitsDoc) (kernel.Limits, error) {
	l := kernel.Limits{RPM: d.RPM, TPM: d.TPM, MaxParallel: d.MaxParallel, Models: d.Models}
	if d.RPM < 0 || d.TPM < 0 || d.MaxParallel < 0 {
		return l, errorf(ErrInvalid, "%s: rpm, tpm and max_parallel must not be negative", field)
	}
	for i, m := range d.Models {
		if !validModelName(m) {
			return l, errorf(ErrInvalid, "%s.models[%d]: %q is not a valid model name", field, i, m)
		}
	}
	if !d.ExpiresAt.IsZero() {
		l.ExpiresAt = d.ExpiresAt.UTC()
	}
	switch d.Mode {
	case "", "strict":
	case "estimate":
		l.Mode = kernel.Estimate
	default:
		return l, errorf(ErrInvalid, "%s.mode: %q is not strict or estimate", field, d.Mode)
	}
	switch d.Shortfall {
	case "", "clamp":
	case "reject":
		l.Shortfall = kernel.Reject
	default:
		return l, errorf(ErrInvalid, "%s.shortfall: %q is not clamp or reject", field, d.Shortfall)
	}
	for i, b := range d.Budgets {
		f := fmt.Sprintf("%s.budgets[%d]", field, i)
		n, err := kernel.ParseDollars(b.Limit)
		if err != nil || n == 0 {
			return l, errorf(ErrInvalid, "%s.limit: %q must be a dollar amount above zero", f, b.Limit)
		}
		p, err := periodFromDoc(f, b)
		if err != nil {
			return l, err
		}
		l.Budgets = append(l.Budgets, kernel.BudgetWindow{Limit: n, Period: p, Soft: b.Soft})
	}
	if r := d.Run; r != nil {
		l.Run = &kernel.RunPolicy{RPM: r.RPM}
		if r.Budget != "" {
			n, err := kernel.ParseDollars(r.Budget)
			if err != nil || n <= 0 {
				return l, errorf(ErrInvalid, "%s.run.budget: %q must be a dollar amount above zero", field, r.Budget)
			}
			l.Run.Budget = n
		}
		if r.TTL != "" {
			d, err := time.ParseDuration(r.TTL)
			if err != nil || d <= 0 {
				return l, errorf(ErrInvalid, "%s.run.ttl: %q must be a positive duration such as 1h", field, r.TTL)
			}
			l.Run.TTL = d
		}
		if r.RPM < 0 {
			return l, errorf(ErrInvalid, "%s.run.rpm must not be negative", field)
		}
	}
	return l, nil
}

func periodFromDoc(f string, b BudgetDoc) (kernel.Period, error) {
	name := b.Period
	if name == "" {
		name = "total"
	}
	kind, err := kernel.ParsePeriodKind(name)
	if err != nil {
		return kernel.Period{}, errorf(ErrInvalid, "%s.period: %q is not total, daily, weekly, monthly or rolling", f, b.Period)
	}
	p := kernel.Period{Kind: kind}
	if b.TimeZone != "" {
		if kind == kernel.PeriodTotal || kind == kernel.PeriodRolling {
			return p, errorf(ErrInvalid, "%s.time_zone: a time zone applies to daily, weekly and monthly periods only", f)
		}
		loc, err := time.LoadLocation(b.TimeZone)
		if err != nil {
			return p, errorf(ErrInvalid, "%s.time_zone: %q is not an IANA time zone (e.g. Europe/Paris)", f, b.TimeZone)
		}
		p.Location = loc
	}
	if kind != kernel.PeriodRolling {
		if b.Every != "" || !b.Anchor.IsZero() {
			return p, errorf(ErrInvalid, "%s.every: every and anchor apply to rolling periods only", f)
		}
		return p, nil
	}
	every, err := time.ParseDuration(b.Every)
	if err != nil || every < time.Minute {
		return p, errorf(ErrInvalid, "%s.every: %q must be a duration of at least 1m (e.g. 72h)", f, b.Every)
	}
	p.Every = every
	if !b.Anchor.IsZero() {
		p.Anchor = b.Anchor.UTC()
	}
	return p, nil
}

// Apply applies a YAML document idempotently: objects are created or replaced
// to match the document (a second apply of the same document changes nothing);
// objects not in the document are kept. Provider credentials and key secrets
// may be ${ENV_VAR} references, resolved from the process environment.
// Everything is checked before anything is written. actor names the caller in
// the audit log.
func Apply(ctx context.Context, st ConfigStore, sealer *secret.Sealer, doc []byte, actor string) (ApplyResult, error) {
	a := applier{st: st, sealer: sealer, actor: actor, now: time.Now().UTC(), lookup: os.LookupEnv}
	return a.apply(ctx, doc)
}

type applier struct {
	st     ConfigStore
	sealer *secret.Sealer
	actor  string
	now    time.Time
	lookup func(string) (string, bool)
	res    ApplyResult
}

// ParseDocument decodes a YAML document strictly (unknown fields are errors).
func ParseDocument(doc []byte) (*Document, error) {
	var d Document
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return nil, errorf(ErrInvalid, "document: %v", err)
	}
	return &d, nil
}

// plan is one object to write: its kind, id and a function computing the
// desired entity from the stored one.
type plan struct {
	kind  store.Kind
	id    string
	write func(ctx context.Context) (outcome, error)
}

type outcome int

const (
	unchanged outcome = iota
	created
	updated
)

func (a *applier) apply(ctx context.Context, raw []byte) (ApplyResult, error) {
	d, err := ParseDocument(raw)
	if err != nil {
		return a.res, err
	}
	plans, err := a.plan(ctx, d)
	if err != nil {
		return a.res, err
	}
	// An object may be written by two plans (a user declared and a team
	// member): it is reported once, by its strongest outcome.
	outcomes := map[string]outcome{}
	var order []string
	for _, p := range plans {
		o, err := p.write(ctx)
		if err != nil {
			return a.res, fmt.Errorf("%s %q: %w", p.kind, p.id, err)
		}
		name := string(p.kind) + "/" + p.id
		prev, seen := outcomes[name]
		if !seen {
			order = append(order, name)
		}
		if !seen || (prev != created && o != unchanged) {
			outcomes[name] = o
		}
	}
	for _, name := range order {
		switch outcomes[name] {
		case created:
			a.res.Created = append(a.res.Created, name)
		case updated:
			a.res.Updated = append(a.res.Updated, name)
		default:
			a.res.Unchanged = append(a.res.Unchanged, name)
		}
	}
	return a.res, nil
}

// exists reports whether an object exists in the store or is declared.
func (a *applier) exists(ctx context.Context, kind store.Kind, id string, declared map[string]bool) (bool, error) {
	if declared[id] {
		return true, nil
	}
	_, err := a.st.Get(ctx, kind, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ref fails unless the object a field refers to exists.
func (a *applier) ref(ctx context.Context, field string, kind store.Kind, id string, declared map[string]bool) error {
	if id == "" {
		return nil
	}
	ok, err := a.exists(ctx, kind, id, declared)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(ErrInvalid, "%s: %s %q is neither in the document nor stored", field, kind, id)
	}
	return nil
}

func ids[T any](items []T, id func(*T) string, what string) (map[string]bool, error) {
	out := make(map[string]bool, len(items))
	for i := range items {
		v := id(&items[i])
		if !adminv1.ValidID(v) {
			return nil, errorf(ErrInvalid, "%s[%d].id: %q must be 1 to 128 letters, digits or . _ - : @ + /", what, i, v)
		}
		if out[v] {
			return nil, errorf(ErrInvalid, "%s[%d].id: %q is declared twice", what, i, v)
		}
		out[v] = true
	}
	return out, nil
}

//nolint:gocognit,gocyclo // one flat pass over the document, kind by kind
func (a *applier) plan(ctx context.Context, d *Document) ([]plan, error) {
	orgIDs, err := ids(d.Orgs, func(o *OrgDoc) string { return o.ID }, "orgs")
	if err != nil {
		return nil, err
	}
	teamIDs, err := ids(d.Teams, func(t *TeamDoc) string { return t.ID }, "teams")
	if err != nil {
		return nil, err
	}
	userIDs, err := ids(d.Users, func(u *UserDoc) string { return u.ID }, "users")
	if err != nil {
		return nil, err
	}
	if _, err := ids(d.Customers, func(c *CustomerDoc) string { return c.ID }, "customers"); err != nil {
		return nil, err
	}
	provIDs, err := ids(d.Providers, func(p *ProviderDoc) string { return p.ID }, "providers")
	if err != nil {
		return nil, err
	}
	depIDs, err := ids(d.Deployments, func(p *DeploymentDoc) string { return p.ID }, "deployments")
	if err != nil {
		return nil, err
	}
	modelIDs, err := ids(d.Models, func(m *ModelDoc) string { return m.ID }, "models")
	if err != nil {
		return nil, err
	}
	if _, err := ids(d.Keys, func(k *KeyDoc) string { return k.ID }, "keys"); err != nil {
		return nil, err
	}
	if _, err := ids(d.Prices, func(p *priceDoc) string { return p.Model }, "prices"); err != nil {
		return nil, err
	}

	var plans []plan
	for i, o := range d.Orgs {
		f := fmt.Sprintf("orgs[%d]", i)
		l, err := limitsFromDoc(f+".limits", o.Limits)
		if err != nil {
			return nil, err
		}
		want := store.Org{ID: o.ID, Name: o.Name, Limits: l, MCPTools: o.MCPTools}
		plans = append(plans, entityPlan(a, want.ID, func(*store.Org, bool) (store.Org, error) { return want, nil }))
	}
	// Members are users: each member not declared in users is created, and
	// keys may name it (userIDs holds both from here on).
	for i, t := range d.Teams {
		f := fmt.Sprintf("teams[%d]", i)
		l, err := limitsFromDoc(f+".limits", t.Limits)
		if err != nil {
			return nil, err
		}
		if err := a.ref(ctx, f+".org", store.KindOrg, t.Org, orgIDs); err != nil {
			return nil, err
		}
		for j, m := range t.Members {
			if !adminv1.ValidID(m) {
				return nil, errorf(ErrInvalid, "%s.members[%d]: %q is not a valid user id", f, j, m)
			}
			userIDs[m] = true
		}
		want := store.Team{ID: t.ID, Name: t.Name, OrgID: t.Org, Members: slices.Clone(t.Members), Limits: l, MCPTools: t.MCPTools, Passthrough: slices.Clone(t.Passthrough)}
		if err := passthroughGrantsIn(want.Passthrough); err != nil {
			return nil, err
		}
		plans = append(plans, entityPlan(a, want.ID, func(*store.Team, bool) (store.Team, error) { return want, nil }))
	}
	for i, u := range d.Users {
		f := fmt.Sprintf("users[%d]", i)
		l, err := limitsFromDoc(f+".limits", u.Limits)
		if err != nil {
			return nil, err
		}
		if err := a.ref(ctx, f+".org", store.KindOrg, u.Org, orgIDs); err != nil {
			return nil, err
		}
		want := store.User{ID: u.ID, Email: u.Email, OrgID: u.Org, Limits: l, MCPTools: u.MCPTools}
		plans = append(plans, entityPlan(a, want.ID, func(cur *store.User, _ bool) (store.User, error) {
			w := want
			w.Teams = cur.Teams // membership is kept by the teams
			return w, nil
		}))
	}
	for i, tb := range d.TagBudgets {
		f := fmt.Sprintf("tag_budgets[%d]", i)
		tag, err := tagID(f+".tag", tb.Tag) // tags.go
		if err != nil {
			return nil, err
		}
		l, err := limitsFromDoc(f+".limits", tb.Limits)
		if err == nil {
			err = tagLimitsValid(f+".limits", l) // tags.go
		}
		if err != nil {
			return nil, err
		}
		want := store.TagBudget{ID: tag, Limits: l}
		plans = append(plans, entityPlan(a, want.ID, func(*store.TagBudget, bool) (store.TagBudget, error) { return want, nil }))
	}
	for i, c := range d.Customers {
		l, err := limitsFromDoc(fmt.Sprintf("customers[%d].limits", i), c.Limits)
		if err != nil {
			return nil, err
		}
		want := store.Customer{ID: c.ID, Name: c.Name, Limits: l}
		plans = append(plans, entityPlan(a, want.ID, func(*store.Customer, bool) (store.Customer, error) { return want, nil }))
	}
	for i, p := range d.Providers {
		f := fmt.Sprintf("providers[%d]", i)
		typ := store.ProviderType(p.Type)
		if _, known := providerTypesOut[typ]; !known {
			return nil, errorf(ErrInvalid, "%s.type: %q is not openai, azure, anthropic, gemini, bedrock or vertex", f, p.Type)
		}
		if !adminv1.ValidBaseURL(p.BaseURL) {
			return nil, errorf(ErrInvalid, "%s.base_url: %q must be an absolute http or https URL", f, p.BaseURL)
		}
		cred, err := expandEnv(f+".credential", p.Credential, a.lookup)
		if err != nil {
			return nil, err
		}
		if cred != "" && a.sealer == nil {
			return nil, fmt.Errorf("%s.credential: %w", f, ErrNoSealer)
		}
		adminCred, err := expandEnv(f+".admin_credential", p.AdminCredential, a.lookup)
		if err != nil {
			return nil, err
		}
		if adminCred != "" && a.sealer == nil {
			return nil, fmt.Errorf("%s.admin_credential: %w", f, ErrNoSealer)
		}
		want := store.Provider{ID: p.ID, Type: typ, BaseURL: p.BaseURL, APIVersion: p.APIVersion, ResponsesAPI: p.ResponsesAPI}
		if p.PricePerCall != "" {
			m, err := adminv1.DollarsMoney(p.PricePerCall)
			if err != nil {
				return nil, errorf(ErrInvalid, "%s.price_per_call: %v", f, err)
			}
			want.PricePerCall = kernel.Money(m.GetNanoUsd())
		}
		plans = append(plans, entityPlan(a, want.ID, func(cur *store.Provider, found bool) (store.Provider, error) {
			w := want
			w.Credential = a.credential(cur.Credential, found, cred)
			w.AdminCredential = a.keepOrSeal(cur, found, adminCred)
			return w, nil
		}))
	}
	for i, dp := range d.Deployments {
		f := fmt.Sprintf("deployments[%d]", i)
		if err := a.ref(ctx, f+".provider", store.KindProvider, dp.Provider, provIDs); err != nil {
			return nil, err
		}
		if dp.Provider == "" || dp.ProviderModel == "" {
			return nil, errorf(ErrInvalid, "%s: provider and provider_model are required", f)
		}
		if dp.Weight < 0 || dp.RPM < 0 || dp.TPM < 0 {
			return nil, errorf(ErrInvalid, "%s: weight, rpm and tpm must not be negative", f)
		}
		pol, err := dp.policy(f)
		if err != nil {
			return nil, err
		}
		want := store.Deployment{ID: dp.ID, Provider: dp.Provider, ProviderModel: dp.ProviderModel, Weight: dp.Weight, RPM: dp.RPM, TPM: dp.TPM, BaseModel: dp.BaseModel, Free: dp.Free, DeploymentPolicy: pol}
		plans = append(plans, entityPlan(a, want.ID, func(*store.Deployment, bool) (store.Deployment, error) { return want, nil }))
	}
	var groups []store.ModelGroup
	for i, m := range d.Models {
		f := fmt.Sprintf("models[%d]", i)
		for j, dep := range m.Deployments {
			if err := a.ref(ctx, fmt.Sprintf("%s.deployments[%d]", f, j), store.KindDeployment, dep, depIDs); err != nil {
				return nil, err
			}
		}
		if m.DefaultMaxTokens < 0 {
			return nil, errorf(ErrInvalid, "%s.default_max_tokens: must not be negative", f)
		}
		rt, err := a.routing(ctx, f, m.ID, &m.ModelRoutingDoc, modelIDs)
		if err != nil {
			return nil, err
		}
		mc, err := m.Cache.cache(f)
		if err == nil && mc != nil {
			err = a.ref(ctx, f+".cache.embedding_model", store.KindModel, mc.EmbeddingModel, modelIDs)
		}
		if err != nil {
			return nil, err
		}
		want := store.ModelGroup{
			ID: m.ID, Deployments: append([]string{}, m.Deployments...), DefaultMaxTokens: m.DefaultMaxTokens, Aliases: slices.Clone(m.Aliases),
			UpstreamModelFromRequest: m.UpstreamModelFromRequest, GroupRouting: rt, Cache: mc,
		}
		groups = append(groups, want)
		plans = append(plans, entityPlan(a, want.ID, func(*store.ModelGroup, bool) (store.ModelGroup, error) { return want, nil }))
	}
	if err := checkAliases(ctx, a.st, groups...); err != nil {
		return nil, err
	}
	priced := map[string]bool{}
	for i := range d.Prices {
		want, err := d.Prices[i].price(fmt.Sprintf("prices[%d]", i))
		if err != nil {
			return nil, err
		}
		priced[want.ID] = true
		plans = append(plans, entityPlan(a, want.ID, func(*store.ModelPrice, bool) (store.ModelPrice, error) { return want, nil }))
	}
	if d.DefaultPrices {
		defaults, err := DefaultPrices()
		if err != nil {
			return nil, err
		}
		for _, p := range defaults {
			if priced[p.ID] {
				continue
			}
			plans = append(plans, entityPlan(a, p.ID, func(cur *store.ModelPrice, found bool) (store.ModelPrice, error) {
				if found {
					return *cur, nil // a price already set is kept
				}
				return p, nil
			}))
		}
	}
	for i, k := range d.Keys {
		f := fmt.Sprintf("keys[%d]", i)
		l, err := limitsFromDoc(f+".limits", k.Limits)
		if err != nil {
			return nil, err
		}
		if err := a.ref(ctx, f+".team", store.KindTeam, k.Team, teamIDs); err != nil {
			return nil, err
		}
		if err := a.ref(ctx, f+".user", store.KindUser, k.User, userIDs); err != nil {
			return nil, err
		}
		if err := a.ref(ctx, f+".org", store.KindOrg, k.Org, orgIDs); err != nil {
			return nil, err
		}
		sec, err := expandEnv(f+".secret", k.Secret, a.lookup)
		if err != nil {
			return nil, err
		}
		if sec != "" && (!strings.HasPrefix(sec, KeySecretPrefix) || len(sec) < 20) {
			return nil, errorf(ErrInvalid, "%s.secret: must start with %q and be at least 20 characters", f, KeySecretPrefix)
		}
		want := store.Key{ID: k.ID, Alias: k.Alias, TeamID: k.Team, UserID: k.User, OrgID: k.Org, Limits: l, Metadata: maps.Clone(k.Metadata), MCPTools: k.MCPTools, Passthrough: slices.Clone(k.Passthrough)}
		if err := passthroughGrantsIn(want.Passthrough); err != nil {
			return nil, err
		}
		if want.Tags, err = keyTags(f+".tags", maps.Clone(k.Tags)); err != nil { // tags.go
			return nil, err
		}
		plans = append(plans, entityPlan(a, want.ID, func(cur *store.Key, found bool) (store.Key, error) {
			w := want
			if found {
				w.Hashes, w.Prefix, w.CreatedAt, w.Revoked, w.RevokedAt = cur.Hashes, cur.Prefix, cur.CreatedAt, cur.Revoked, cur.RevokedAt
			} else {
				w.CreatedAt = a.now
			}
			current := found && len(cur.Hashes) > 0 && cur.Hashes[0].Hash == secret.Hash(sec)
			switch {
			case sec != "" && !current:
				w.Hashes, w.Prefix = []store.KeyHash{{Hash: secret.Hash(sec)}}, sec[:len(KeySecretPrefix)+4]
			case sec == "" && !found:
				gen, h, prefix := newKeySecret()
				w.Hashes, w.Prefix = []store.KeyHash{h}, prefix
				if a.res.Secrets == nil {
					a.res.Secrets = map[string]string{}
				}
				a.res.Secrets[w.ID] = gen
			}
			return w, nil
		}))
	}
	if d.Global != nil {
		l, err := limitsFromDoc("global.limits", d.Global.Limits)
		if err != nil {
			return nil, err
		}
		want := store.Global{ID: "global", Limits: l}
		plans = append(plans, entityPlan(a, "global", func(*store.Global, bool) (store.Global, error) { return want, nil }))
	}
	// Team membership, mirrored on the users: added members get the team
	// (users created when missing), removed ones lose it.
	for _, t := range d.Teams {
		plans = append(plans, a.membershipPlans(ctx, t)...)
	}
	mcpPlans, err := a.mcpPlans(d)
	if err != nil {
		return nil, err
	}
	alertPlans, err := a.alertPlans(d) // apply_alerts.go
	if err != nil {
		return nil, err
	}
	return a.planGuardrails(ctx, d, append(append(plans, mcpPlans...), alertPlans...)) // apply_guardrails.go
}

// credential is the sealed credential to store: the current one when the
// document gives none or the same one, else the document's, sealed.
func (a *applier) credential(cur []byte, found bool, plain string) []byte {
	switch {
	case plain == "" && found:
		return cur // not in the document: kept
	case plain != "" && found && a.sameCredential(cur, plain):
		return cur
	case plain != "":
		return a.sealer.Seal([]byte(plain))
	}
	return nil
}

// keepOrSeal is the provider's sealed admin credential after an apply: the
// current one when the document has none or the same one, else plain sealed.
func (a *applier) keepOrSeal(cur *store.Provider, found bool, plain string) []byte {
	switch {
	case plain == "" && found:
		return cur.AdminCredential
	case plain != "" && found && a.sameCredential(cur.AdminCredential, plain):
		return cur.AdminCredential
	case plain != "":
		return a.sealer.Seal([]byte(plain))
	}
	return nil
}

func (a *applier) sameCredential(sealed []byte, plain string) bool {
	if len(sealed) == 0 {
		return false
	}
	got, err := a.sealer.Open(sealed)
	return err == nil && string(got) == plain
}

// membershipPlans keeps users' Teams in step with a team's member list.
func (a *applier) membershipPlans(ctx context.Context, t TeamDoc) []plan {
	var plans []plan
	cur, _, err := store.Get[store.Team](ctx, a.st, t.ID)
	var former []string
	if err == nil {
		former = cur.Members
	}
	for _, m := range t.Members {
		plans = append(plans, entityPlan(a, m, func(u *store.User, found bool) (store.User, error) {
			w := *u
			if !found {
				w = store.User{ID: m, OrgID: t.Org}
			}
			if !slices.Contains(w.Teams, t.ID) {
				w.Teams = append(slices.Clone(w.Teams), t.ID)
			}
			return w, nil
		}))
	}
	for _, m := range former {
		if slices.Contains(t.Members, m) {
			continue
		}
		plans = append(plans, plan{kind: store.KindUser, id: m, write: func(ctx context.Context) (outcome, error) {
			o, err := entityPlan(a, m, func(u *store.User, found bool) (store.User, error) {
				if !found {
					return *u, errAbsent
				}
				w := *u
				w.Teams = slices.DeleteFunc(slices.Clone(w.Teams), func(x string) bool { return x == t.ID })
				return w, nil
			}).write(ctx)
			if errors.Is(err, errAbsent) {
				return unchanged, nil
			}
			return o, err
		}})
	}
	return plans
}

var errAbsent = errors.New("absent")

// entityPlan writes the entity want(current) computes, when it differs from
// what is stored, and audits the change.
func entityPlan[T store.Entity](a *applier, id string, want func(cur *T, found bool) (T, error)) plan {
	kind := store.KindOf[T]()
	return plan{kind: kind, id: id, write: func(ctx context.Context) (outcome, error) {
		cur, ver, err := store.Get[T](ctx, a.st, id)
		found := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return unchanged, err
		}
		w, err := want(&cur, found)
		if err != nil {
			return unchanged, err
		}
		if found {
			before, err1 := json.Marshal(cur)
			after, err2 := json.Marshal(w)
			if err := errors.Join(err1, err2); err != nil {
				return unchanged, err
			}
			if bytes.Equal(before, after) {
				return unchanged, nil
			}
		}
		ifVersion, o, action := int64(0), created, "apply.create"
		if found {
			ifVersion, o, action = ver, updated, "apply.update"
		}
		if _, err := store.Put(ctx, a.st, id, &w, ifVersion); err != nil {
			return unchanged, err
		}
		return o, recordAudit(ctx, a.st, a.now, a.actor, action, kind, id, applyAudit(any(w)))
	}}
}

// applyAudit removes secrets from what the audit log keeps.
func applyAudit(v any) any {
	switch e := v.(type) {
	case store.Key:
		return keyAudit(&e)
	case store.Provider:
		return providerAudit(&e)
	case store.AlertSink:
		return alertSinkAudit(&e)
	default:
		return v
	}
}

// Apply is the ConfigService RPC: Apply with the caller as actor. ${ENV_VAR}
// references left in the document are resolved from the server's environment.
func (s *Server) Apply(ctx context.Context, req *adminv1.ApplyRequest) (*adminv1.ApplyResponse, error) {
	a := applier{st: s.st, sealer: s.sealer, actor: actorOf(ctx), now: s.now().UTC(), lookup: os.LookupEnv}
	res, err := a.apply(ctx, []byte(req.GetDocument()))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.ApplyResponse{
		Created: res.Created, Updated: res.Updated, Unchanged: res.Unchanged, Secrets: res.Secrets,
		Warnings: s.priceWarnings(ctx, ""),
	}, nil
}
