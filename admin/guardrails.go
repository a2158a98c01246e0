package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tollgate-ai/tollgate/guard"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// guardrailIn is the stored form of a guardrail, checked by compiling it.
func guardrailIn(g *adminv1.Guardrail) (store.Guardrail, error) {
	out := store.Guardrail{
		ID: g.GetName(), Kind: strings.ToLower(g.GetKind()), Action: strings.ToLower(g.GetAction()), On: g.GetOn(),
		Mandatory: g.GetMandatory(), Types: g.GetTypes(), Words: g.GetWords(), Patterns: g.GetPatterns(),
		MaxBytes: int(g.GetMaxBytes()), URL: g.GetUrl(), Provider: g.GetProvider(), Model: g.GetModel(),
		TimeoutMS: g.GetTimeoutMs(), FailOpen: g.GetFailOpen(),
	}
	if len(out.On) == 0 {
		out.On = []string{"pre"}
	}
	sp := guard.Spec{
		Name: out.ID, Kind: out.Kind, Action: out.Action, On: out.On, Types: out.Types, Words: out.Words,
		Patterns: out.Patterns, MaxBytes: out.MaxBytes, URL: out.URL,
	}
	if out.Kind == guard.KindModeration {
		if out.Provider == "" {
			return out, fmt.Errorf("%w: a moderation guardrail needs a provider", ErrInvalid)
		}
		sp.URL = "https://provider.invalid" // the provider's, at snapshot time
	}
	if _, err := guard.Compile(sp); err != nil {
		return out, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return out, nil
}

func guardrailView(g *store.Guardrail, version int64) *adminv1.Guardrail {
	return &adminv1.Guardrail{
		Name: g.ID, Kind: g.Kind, Action: g.Action, On: g.On, Mandatory: g.Mandatory, Types: g.Types,
		Words: g.Words, Patterns: g.Patterns, MaxBytes: int64(g.MaxBytes), Url: g.URL, Provider: g.Provider,
		Model: g.Model, TimeoutMs: g.TimeoutMS, FailOpen: g.FailOpen, Version: version,
	}
}

// CreateGuardrail stores a new guardrail.
func (s *Server) CreateGuardrail(ctx context.Context, req *adminv1.CreateGuardrailRequest) (*adminv1.CreateGuardrailResponse, error) {
	g, err := guardrailIn(req.GetGuardrail())
	if err == nil {
		err = create(ctx, s.st, g.ID, &g)
	}
	if err == nil {
		err = s.record(ctx, "guardrail.create", store.KindGuardrail, g.ID, g)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateGuardrailResponse{Guardrail: guardrailView(&g, 0)}, nil
}

// GetGuardrail returns one guardrail.
func (s *Server) GetGuardrail(ctx context.Context, req *adminv1.GetGuardrailRequest) (*adminv1.GetGuardrailResponse, error) {
	g, ver, err := get[store.Guardrail](ctx, s.st, req.GetName())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetGuardrailResponse{Guardrail: guardrailView(&g, ver)}, nil
}

// ListGuardrails lists guardrails by name.
func (s *Server) ListGuardrails(ctx context.Context, req *adminv1.ListGuardrailsRequest) (*adminv1.ListGuardrailsResponse, error) {
	gs, next, err := listPage[store.Guardrail](ctx, s.st, req.GetPageToken(), req.GetPageSize(), nil)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListGuardrailsResponse{NextPageToken: next}
	for i := range gs {
		out.Guardrails = append(out.Guardrails, guardrailView(&gs[i], 0))
	}
	return out, nil
}

// UpdateGuardrail replaces an existing guardrail.
func (s *Server) UpdateGuardrail(ctx context.Context, req *adminv1.UpdateGuardrailRequest) (*adminv1.UpdateGuardrailResponse, error) {
	in, err := guardrailIn(req.GetGuardrail())
	var g store.Guardrail
	if err == nil {
		g, err = update(ctx, s.st, in.ID, func(g *store.Guardrail) error { *g = in; return nil })
	}
	if err == nil {
		err = s.record(ctx, "guardrail.update", store.KindGuardrail, g.ID, g)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateGuardrailResponse{Guardrail: guardrailView(&g, 0)}, nil
}

// DeleteGuardrail deletes a guardrail; attachments naming it ignore it.
func (s *Server) DeleteGuardrail(ctx context.Context, req *adminv1.DeleteGuardrailRequest) (*adminv1.DeleteGuardrailResponse, error) {
	err := remove[store.Guardrail](ctx, s.st, req.GetName())
	if err == nil {
		err = s.record(ctx, "guardrail.delete", store.KindGuardrail, req.GetName(), nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteGuardrailResponse{}, nil
}

var attachScopes = []string{store.AttachKey, store.AttachTeam, store.AttachOrg, store.AttachModel}

// SetGuardrails replaces the guardrails attached to one scope. Every name
// must exist; a key may remove ("-NAME") only guardrails that are not
// mandatory.
func (s *Server) SetGuardrails(ctx context.Context, req *adminv1.SetGuardrailsRequest) (*adminv1.SetGuardrailsResponse, error) {
	a, err := s.attachmentIn(ctx, req.GetScope(), req.GetId(), req.GetGuardrails())
	if err == nil {
		if len(a.Guardrails) == 0 {
			err = s.st.Delete(ctx, store.KindGuardrailAttachment, a.ID)
			if errors.Is(err, store.ErrNotFound) {
				err = nil
			}
		} else {
			_, err = store.Put(ctx, s.st, a.ID, &a, -1)
		}
	}
	if err == nil {
		err = s.record(ctx, "guardrail.attach", store.KindGuardrailAttachment, a.ID, a.Guardrails)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.SetGuardrailsResponse{Guardrails: a.Guardrails}, nil
}

func (s *Server) attachmentIn(ctx context.Context, scope, id string, names []string) (store.GuardrailAttachment, error) {
	a := store.GuardrailAttachment{ID: store.AttachmentID(scope, id), Scope: scope, ScopeID: id}
	if !slices.Contains(attachScopes, scope) || id == "" {
		return a, fmt.Errorf("%w: scope must be one of %s, with an id", ErrInvalid, strings.Join(attachScopes, ", "))
	}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		name, removal := strings.CutPrefix(n, "-")
		if removal && scope != store.AttachKey {
			return a, fmt.Errorf("%w: only a key removes inherited guardrails (-%s)", ErrInvalid, name)
		}
		g, _, err := get[store.Guardrail](ctx, s.st, name)
		if err != nil {
			return a, err
		}
		if removal && g.Mandatory {
			return a, fmt.Errorf("%w: guardrail %q is mandatory: a key cannot remove it", ErrInvalid, name)
		}
		if !slices.Contains(a.Guardrails, n) {
			a.Guardrails = append(a.Guardrails, n)
		}
	}
	return a, nil
}

// GetGuardrails returns the guardrails attached to one scope.
func (s *Server) GetGuardrails(ctx context.Context, req *adminv1.GetGuardrailsRequest) (*adminv1.GetGuardrailsResponse, error) {
	a, _, err := store.Get[store.GuardrailAttachment](ctx, s.st, store.AttachmentID(req.GetScope(), req.GetId()))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetGuardrailsResponse{Guardrails: a.Guardrails}, nil
}
