package admin

import (
	"context"

	"github.com/tollgate-ai/tollgate/internal/modelpattern"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// checkAliases validates the aliases of the model groups that will exist
// once want is written (want replaces the stored group of its id): each alias
// is a model name, or a pattern whose only wildcard is '*'; and no two
// patterns of different groups could match one name with equal specificity,
// since then the name's group would be a coin toss (modelpattern.Overlap).
func checkAliases(ctx context.Context, st store.Config, want ...store.ModelGroup) error {
	stored, err := store.List[store.ModelGroup](ctx, st)
	if err != nil {
		return err
	}
	byID := make(map[string]int, len(stored)+len(want))
	groups := make([]store.ModelGroup, 0, len(stored)+len(want))
	for _, g := range append(stored, want...) {
		if i, ok := byID[g.ID]; ok {
			groups[i] = g
			continue
		}
		byID[g.ID] = len(groups)
		groups = append(groups, g)
	}
	for _, w := range want {
		for _, a := range w.Aliases {
			if !validModelName(a) {
				return errorf(ErrInvalid, "model %q: alias %q is not a model name or a pattern of one ('*' matches any characters)", w.ID, a)
			}
		}
	}
	return aliasConflict(groups)
}

// validModelName accepts a model name or a pattern of one.
func validModelName(s string) bool { return adminv1.ValidID(stripWildcards(s)) }

// stripWildcards is a pattern without its '*'s ("x" for a bare "*"), for the
// check of its other characters.
func stripWildcards(p string) string {
	out := make([]byte, 0, len(p))
	for i := range len(p) {
		if p[i] != modelpattern.Wildcard {
			out = append(out, p[i])
		}
	}
	if len(out) == 0 {
		return "x"
	}
	return string(out)
}

// aliasConflict finds two pattern aliases of different groups that could
// match one name with equal specificity.
func aliasConflict(groups []store.ModelGroup) error {
	type pat struct{ group, pattern string }
	var pats []pat
	for _, g := range groups {
		for _, a := range g.Aliases {
			if modelpattern.IsPattern(a) {
				pats = append(pats, pat{g.ID, a})
			}
		}
	}
	for i, a := range pats {
		for _, b := range pats[i+1:] {
			if a.group != b.group && modelpattern.Specificity(a.pattern) == modelpattern.Specificity(b.pattern) && modelpattern.Overlap(a.pattern, b.pattern) {
				return errorf(ErrInvalid, "model aliases: pattern %q of model %q and pattern %q of model %q could both match one name with equal specificity; make one more specific or remove it", a.pattern, a.group, b.pattern, b.group)
			}
		}
	}
	return nil
}
