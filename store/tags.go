package store

import "github.com/tollgate-ai/tollgate/kernel"

// KindTag is a tag with limits of its own (id: the tag, "name=value").
const KindTag Kind = "tag"

// TagBudget is the limits of one tag: every request carrying the tag is also
// admitted against the tag's scope (kernel.ScopeTag), as one more level of
// the hierarchy.
type TagBudget struct {
	ID     string        `json:"id"` // "name=value" (kernel.TagScopeID)
	Limits kernel.Limits `json:"limits"`
}
