package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/guard"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/store"
)

// guardSet is a guard.Set as the processor's Guardrails.
type guardSet struct {
	set    guard.Set
	names  []string
	window int
}

var _ extproc.Guardrails = (*guardSet)(nil)

// newGuardSet adapts s (nil when empty).
func newGuardSet(s guard.Set, window int) *guardSet {
	if len(s) == 0 {
		return nil
	}
	names := make([]string, len(s))
	for i, g := range s {
		names[i] = g.Name
	}
	return &guardSet{set: s, names: names, window: window}
}

func (g *guardSet) Names() []string { return g.names }

func (g *guardSet) At(st extproc.GuardStage) bool { return g.set.At(guard.Stage(st)) }

func (g *guardSet) Check(ctx context.Context, st extproc.GuardStage, body []byte) extproc.GuardVerdict {
	v := g.set.Check(ctx, guard.Stage(st), body, true)
	return extproc.GuardVerdict{Blocked: v.Blocked, Body: v.Text, Hits: guardHits(v.Hits)}
}

func (g *guardSet) Redactor() extproc.GuardRedactor {
	r := g.set.NewRedactor(g.window)
	if r == nil {
		return nil
	}
	return guardRedactor{r}
}

type guardRedactor struct{ r *guard.Redactor }

func (r guardRedactor) Push(seg []byte) ([][]byte, *extproc.GuardHit) { return blockHit(r.r.Push(seg)) }

func (r guardRedactor) Flush() ([][]byte, *extproc.GuardHit) { return blockHit(r.r.Flush()) }

func (r guardRedactor) Hits() []extproc.GuardHit { return guardHits(r.r.Hits()) }

func blockHit(segs [][]byte, h *guard.Hit) ([][]byte, *extproc.GuardHit) {
	if h == nil {
		return segs, nil
	}
	x := guardHit(*h)
	return segs, &x
}

func guardHits(hs []guard.Hit) []extproc.GuardHit {
	if len(hs) == 0 {
		return nil
	}
	out := make([]extproc.GuardHit, len(hs))
	for i, h := range hs {
		out[i] = guardHit(h)
	}
	return out
}

func guardHit(h guard.Hit) extproc.GuardHit {
	return extproc.GuardHit{
		Guardrail: h.Guardrail, Kind: h.Kind, Action: h.Action.String(), Types: h.Types,
		Reason: h.Reason, Failed: h.Failed, Message: h.Message(),
	}
}

// guardPolicy is the guardrails of one snapshot: compiled, and attached to
// keys, teams, orgs and models.
type guardPolicy struct {
	byName map[string]*guard.Guardrail
	attach map[string][]string // store.AttachmentID → names
	window int
	sets   sync.Map // "keyID\x00model" → *guardSet (nil: none), built on first use
}

// buildGuards compiles the store's guardrails. A guardrail that does not
// compile (the admin API refuses them; a hand-edited store may not) is left
// out, logged at Error.
func buildGuards(ctx context.Context, cfg store.Config, provByID map[string]*store.Provider, sealer *secret.Sealer, log *slog.Logger) (*guardPolicy, error) {
	gs, err := store.List[store.Guardrail](ctx, cfg)
	if err != nil {
		return nil, err
	}
	atts, err := store.List[store.GuardrailAttachment](ctx, cfg)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, nil
	}
	p := &guardPolicy{byName: make(map[string]*guard.Guardrail, len(gs)), attach: make(map[string][]string, len(atts)), window: guard.DefaultWindow}
	for i := range gs {
		sp, err := guardSpec(&gs[i], provByID, sealer)
		if err == nil {
			var g *guard.Guardrail
			if g, err = guard.Compile(sp); err == nil {
				p.byName[g.Name] = g
				continue
			}
		}
		log.Error("guardrail left out", "guardrail", gs[i].ID, "err", err)
	}
	for _, a := range atts {
		p.attach[a.ID] = a.Guardrails
	}
	return p, nil
}

// guardSpec is the guard.Spec of a stored guardrail; a moderation
// guardrail takes its provider's base URL and credential.
func guardSpec(g *store.Guardrail, provByID map[string]*store.Provider, sealer *secret.Sealer) (guard.Spec, error) {
	sp := guard.Spec{
		Name: g.ID, Kind: g.Kind, Action: g.Action, On: g.On, Mandatory: g.Mandatory, Types: g.Types,
		Words: g.Words, Patterns: g.Patterns, MaxBytes: g.MaxBytes, URL: g.URL, Model: g.Model,
		Timeout: time.Duration(g.TimeoutMS) * time.Millisecond, FailOpen: g.FailOpen,
	}
	if g.Kind == guard.KindModeration {
		p, ok := provByID[g.Provider]
		if !ok {
			return sp, fmt.Errorf("moderation provider %q not found", g.Provider)
		}
		sp.URL = p.BaseURL
		if len(p.Credential) > 0 {
			if sealer == nil {
				return sp, fmt.Errorf("provider %q: credential present but no master key", p.ID)
			}
			b, err := sealer.Open(p.Credential)
			if err != nil {
				return sp, fmt.Errorf("provider %q: %w", p.ID, err)
			}
			sp.APIKey = string(b)
		}
	}
	return sp, nil
}

// resolve is the guardrails of a request: the org's, the team's, the
// model's, then the key's, each once, in that order. A key's "-NAME" removes
// an inherited guardrail unless it is mandatory.
func (p *guardPolicy) resolve(pr *extproc.Principal, model string) guard.Set {
	var set guard.Set
	add := func(name string) {
		if g, ok := p.byName[name]; ok && !slices.Contains(set, g) {
			set = append(set, g)
		}
	}
	for _, id := range []string{
		store.AttachmentID(store.AttachOrg, pr.OrgID), store.AttachmentID(store.AttachTeam, pr.TeamID),
		store.AttachmentID(store.AttachModel, model),
	} {
		if strings.HasSuffix(id, ":") {
			continue
		}
		for _, n := range p.attach[id] {
			add(n)
		}
	}
	for _, n := range p.attach[store.AttachmentID(store.AttachKey, pr.KeyID)] {
		if name, ok := strings.CutPrefix(n, "-"); ok {
			set = slices.DeleteFunc(set, func(g *guard.Guardrail) bool { return g.Name == name && !g.Mandatory })
			continue
		}
		add(n)
	}
	return set
}

// Guardrails implements extproc.GuardResolver over the current snapshot.
func (c *Catalog) Guardrails(pr *extproc.Principal, model string) extproc.Guardrails {
	s := c.snap.Load()
	if s == nil || s.guards == nil || pr == nil {
		return nil
	}
	// The group a name means (an alias or a pattern: its group's
	// attachments); an unknown name has none, and does not become a key of
	// sets (client names are unbounded).
	if m, ok := s.lookup(model); ok {
		model = m.info.ID
	} else {
		model = ""
	}
	k := pr.KeyID + "\x00" + model
	if v, ok := s.guards.sets.Load(k); ok {
		if v == nil {
			return nil
		}
		return v.(*guardSet)
	}
	gs := newGuardSet(s.guards.resolve(pr, model), s.guards.window)
	if gs == nil {
		s.guards.sets.Store(k, nil)
		return nil
	}
	s.guards.sets.Store(k, gs)
	return gs
}
