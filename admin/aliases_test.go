package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// TestModelAliasPatterns: aliases may be patterns; two groups whose patterns
// could match one name with equal specificity are refused on create, update
// and apply, with both patterns named; a more specific pattern is fine.
func TestModelAliasPatterns(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		mk := func(id string, aliases ...string) error {
			_, err := c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: id, Aliases: aliases}})
			return err
		}
		require.NoError(t, mk("claude", "claude-*"))
		require.NoError(t, mk("opus", "claude-opus-*"))    // more specific: it wins, no conflict
		require.NoError(t, mk("minis", "*-mini", "gpt-*")) // one group's own patterns may overlap
		err := mk("other", "claude-*")
		requireCode(t, codes.InvalidArgument, err)
		require.ErrorContains(t, err, `"claude-*" of model "claude"`)
		requireCode(t, codes.InvalidArgument, mk("x", "*-4-5-xy")) // 7 literals, overlaps "claude-*" (claude-4-5-xy)
		requireCode(t, codes.InvalidArgument, mk("bad", "claude opus*"))

		_, err = c.models.UpdateModel(ctx, &adminv1.UpdateModelRequest{Model: &adminv1.Model{Id: "opus", Aliases: []string{"claude-*"}}, UpdateMask: mask("aliases")})
		requireCode(t, codes.InvalidArgument, err)
		_, err = c.models.UpdateModel(ctx, &adminv1.UpdateModelRequest{Model: &adminv1.Model{Id: "claude", Aliases: []string{"claude-*", "anthropic/*"}}, UpdateMask: mask("aliases")})
		require.NoError(t, err)

		_, err = c.config.Apply(ctx, &adminv1.ApplyRequest{Document: "models:\n  - id: y\n    aliases: [\"claude-*\"]\n"})
		require.ErrorContains(t, err, "equal specificity")
	})
}
