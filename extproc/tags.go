package extproc

import (
	"slices"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// Tags attribute a request's spend (docs/governance.md, "Tags"): the key's
// default tags, then the body's metadata.tollgate_tags (OpenAI chat
// completions and Responses, whose metadata is a map of strings), then the
// x-tollgate-tags header, a later source's value winning for a name. Each
// tag is in the request's ledger row; a tag with a budget (TagCatalog) is
// also one more scope of the request, admitted with the others at once.

// hdrTags carries a request's tags: "name=value,name=value".
const hdrTags = "x-tollgate-tags"

// TagCatalog is implemented by catalogs that hold tag budgets.
type TagCatalog interface {
	// TagScope is the scope of tag "name=value" when it has limits.
	TagScope(tag string) (kernel.Scope, bool)
}

// withTags records the request's tags (s.tags) and returns scopes with the
// scope of every tag that has limits appended (a new slice; scopes itself
// when none has).
func (s *stream) withTags(scopes []kernel.Scope, body []byte) ([]kernel.Scope, *translate.APIError) {
	var fromBody []string
	if s.ep.API == translate.APIChat || s.ep.API == translate.APIResponses {
		var err error
		if fromBody, err = translate.ParseMetadataTags(body); err != nil {
			return nil, translate.TagsError(err, hdrTags, "metadata.tollgate_tags")
		}
	}
	fromHdr, err := kernel.ParseTags(s.tagsHdr)
	if err != nil {
		return nil, translate.TagsError(err, hdrTags, "")
	}
	var defaults []string
	if s.principal != nil {
		defaults = s.principal.Tags
	}
	s.tags = kernel.MergeTags(kernel.MergeTags(defaults, fromBody), fromHdr)
	tc, ok := s.p.cat.(TagCatalog)
	if !ok {
		return scopes, nil
	}
	out := scopes
	for _, t := range s.tags {
		if sc, ok := tc.TagScope(t); ok {
			if len(out) == len(scopes) {
				out = slices.Clip(out) // the principal's is shared: append to a copy
			}
			out = append(out, sc)
		}
	}
	return out, nil
}
