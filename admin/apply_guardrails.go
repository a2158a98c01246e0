package admin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// GuardrailDoc is a guardrail in an apply document (`guardrails:`).
type GuardrailDoc struct {
	Name      string   `yaml:"name"`
	Kind      string   `yaml:"kind"`
	Action    string   `yaml:"action"`
	On        []string `yaml:"on"`
	Mandatory bool     `yaml:"mandatory"`
	Types     []string `yaml:"types"`
	Words     []string `yaml:"words"`
	Patterns  []string `yaml:"patterns"`
	MaxBytes  int64    `yaml:"max_bytes"`
	URL       string   `yaml:"url"`
	Provider  string   `yaml:"provider"`
	Model     string   `yaml:"model"`
	Timeout   string   `yaml:"timeout"` // a Go duration, e.g. 500ms
	FailOpen  bool     `yaml:"fail_open"`
}

// GuardrailAttachmentDoc attaches guardrails to a key, team, org or model
// (`guardrail_attachments:`).
type GuardrailAttachmentDoc struct {
	Scope      string   `yaml:"scope"`
	ID         string   `yaml:"id"`
	Guardrails []string `yaml:"guardrails"`
}

// planGuardrails adds the plans of a document's guardrails, then of its
// attachments (which may name them).
func (a *applier) planGuardrails(ctx context.Context, d *Document, plans []plan) ([]plan, error) {
	declared := map[string]store.Guardrail{}
	for i, gd := range d.Guardrails {
		f := fmt.Sprintf("guardrails[%d]", i)
		var timeout time.Duration
		if gd.Timeout != "" {
			t, err := time.ParseDuration(gd.Timeout)
			if err != nil {
				return nil, errorf(ErrInvalid, "%s.timeout: %v", f, err)
			}
			timeout = t
		}
		g, err := guardrailIn(&adminv1.Guardrail{
			Name: gd.Name, Kind: gd.Kind, Action: gd.Action, On: gd.On, Mandatory: gd.Mandatory, Types: gd.Types,
			Words: gd.Words, Patterns: gd.Patterns, MaxBytes: gd.MaxBytes, Url: gd.URL, Provider: gd.Provider,
			Model: gd.Model, TimeoutMs: timeout.Milliseconds(), FailOpen: gd.FailOpen,
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if _, dup := declared[g.ID]; dup || g.ID == "" {
			return nil, errorf(ErrInvalid, "%s: name %q is empty or declared twice", f, g.ID)
		}
		declared[g.ID] = g
		plans = append(plans, entityPlan(a, g.ID, func(*store.Guardrail, bool) (store.Guardrail, error) { return g, nil }))
	}
	for i, ad := range d.GuardrailAttachments {
		f := fmt.Sprintf("guardrail_attachments[%d]", i)
		want := store.GuardrailAttachment{ID: store.AttachmentID(ad.Scope, ad.ID), Scope: ad.Scope, ScopeID: ad.ID}
		if ad.ID == "" || !slices.Contains(attachScopes, ad.Scope) {
			return nil, errorf(ErrInvalid, "%s: scope must be one of %s, with an id", f, strings.Join(attachScopes, ", "))
		}
		for _, n := range ad.Guardrails {
			name, removal := strings.CutPrefix(n, "-")
			g, ok := declared[name]
			if !ok {
				stored, _, err := store.Get[store.Guardrail](ctx, a.st, name)
				if err != nil {
					return nil, errorf(ErrInvalid, "%s: guardrail %q is neither in the document nor stored", f, name)
				}
				g = stored
			}
			if removal && (ad.Scope != store.AttachKey || g.Mandatory) {
				return nil, errorf(ErrInvalid, "%s: -%s: only a key removes an inherited guardrail, and never a mandatory one", f, name)
			}
			want.Guardrails = append(want.Guardrails, n)
		}
		plans = append(plans, entityPlan(a, want.ID, func(*store.GuardrailAttachment, bool) (store.GuardrailAttachment, error) { return want, nil }))
	}
	return plans, nil
}
