package adminv1

// maxTagID bounds a tag "name=value" (the admin layer checks its syntax).
const maxTagID = 200

func tag(field, v string) error {
	if v == "" || len(v) > maxTagID {
		return bad(field, "must be a tag name=value of at most %d characters", maxTagID)
	}
	return nil
}

// Validate implements the go-grpc-middleware validator interface.
func (r *SetTagBudgetRequest) Validate() error {
	t := r.GetTagBudget()
	if t == nil {
		return bad("tag_budget", "is required")
	}
	return first(tag("tag_budget.tag", t.GetTag()), t.GetLimits().validate("tag_budget.limits."))
}

// Validate implements the go-grpc-middleware validator interface.
func (r *ListTagBudgetsRequest) Validate() error { return nil }

// Validate implements the go-grpc-middleware validator interface.
func (r *DeleteTagBudgetRequest) Validate() error { return tag("tag", r.GetTag()) }
