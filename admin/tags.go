package admin

import (
	"context"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// Tags: the limits of a tag (TagService) and a key's default tags.

// tagID checks a tag "name=value" (kernel.CheckTag) and returns it.
func tagID(field, tag string) (string, error) {
	name, value, ok := strings.Cut(tag, "=")
	if !ok {
		return "", errorf(ErrInvalid, "%s: %q is not name=value", field, tag)
	}
	if err := kernel.CheckTag(name, value); err != nil {
		return "", errorf(ErrInvalid, "%s: %v", field, err)
	}
	return tag, nil
}

// keyTags checks a key's default tags.
func keyTags(field string, tags map[string]string) (map[string]string, error) {
	if _, err := kernel.TagsOf(tags); err != nil {
		return nil, errorf(ErrInvalid, "%s: %v", field, err)
	}
	if len(tags) == 0 {
		return nil, nil
	}
	return tags, nil
}

func tagBudgetView(t *store.TagBudget) *adminv1.TagBudget {
	return &adminv1.TagBudget{Tag: t.ID, Limits: limitsOut(t.Limits)}
}

// tagLimitsValid refuses limits a tag cannot have (the run level's), for
// SetTagBudget and apply alike.
func tagLimitsValid(field string, l kernel.Limits) error {
	if l.Run != nil || l.TTL != 0 {
		return errorf(ErrInvalid, "%s: a tag has no runs", field)
	}
	return nil
}

// SetTagBudget creates or replaces a tag's limits.
func (s *Server) SetTagBudget(ctx context.Context, req *adminv1.SetTagBudgetRequest) (*adminv1.SetTagBudgetResponse, error) {
	in := req.GetTagBudget()
	tag, err := tagID("tag_budget.tag", in.GetTag())
	var t store.TagBudget
	if err == nil {
		t.ID = tag
		t.Limits, err = limitsIn("tag_budget.limits", in.GetLimits())
	}
	if err == nil {
		err = tagLimitsValid("tag_budget.limits", t.Limits)
	}
	if err == nil {
		_, err = store.Put(ctx, s.st, t.ID, &t, -1)
	}
	if err == nil {
		err = s.record(ctx, "tag_budget.set", store.KindTag, t.ID, t)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.SetTagBudgetResponse{TagBudget: tagBudgetView(&t)}, nil
}

// ListTagBudgets lists the tags that have limits.
func (s *Server) ListTagBudgets(ctx context.Context, _ *adminv1.ListTagBudgetsRequest) (*adminv1.ListTagBudgetsResponse, error) {
	ts, err := store.List[store.TagBudget](ctx, s.st)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListTagBudgetsResponse{}
	for i := range ts {
		out.TagBudgets = append(out.TagBudgets, tagBudgetView(&ts[i]))
	}
	return out, nil
}

// DeleteTagBudget removes a tag's limits; its spend stays in the ledger.
func (s *Server) DeleteTagBudget(ctx context.Context, req *adminv1.DeleteTagBudgetRequest) (*adminv1.DeleteTagBudgetResponse, error) {
	err := remove[store.TagBudget](ctx, s.st, req.GetTag())
	if err == nil {
		err = s.record(ctx, "tag_budget.delete", store.KindTag, req.GetTag(), nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteTagBudgetResponse{}, nil
}
