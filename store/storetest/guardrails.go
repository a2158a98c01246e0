package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/store"
)

// guardrailTests: guardrails and their attachments round-trip as typed
// configuration objects, bump the revision, and list by id.
func (s *suite) guardrailTests() []test {
	return []test{
		{"RoundTrip", func(t *testing.T) {
			st := s.fresh(t)
			ctx := timeout(t, 30*time.Second)
			g := store.Guardrail{
				ID: "pii", Kind: "pii", Action: "redact", On: []string{"pre", "stream"}, Mandatory: true,
				Types: []string{"EMAIL"}, TimeoutMS: 500, FailOpen: true,
			}
			rev0, err := st.Revision(ctx)
			require.NoError(t, err)
			v, err := store.Put(ctx, st, g.ID, &g, 0)
			require.NoError(t, err)
			require.Greater(t, v, rev0)
			got, _, err := store.Get[store.Guardrail](ctx, st, "pii")
			require.NoError(t, err)
			require.Equal(t, g, got)
			_, err = store.Put(ctx, st, g.ID, &g, 0)
			require.ErrorIs(t, err, store.ErrConflict, "create only")

			a := store.GuardrailAttachment{ID: store.AttachmentID(store.AttachTeam, "t1"), Scope: store.AttachTeam, ScopeID: "t1", Guardrails: []string{"pii"}}
			_, err = store.Put(ctx, st, a.ID, &a, -1)
			require.NoError(t, err)
			b := store.GuardrailAttachment{ID: store.AttachmentID(store.AttachKey, "k1"), Scope: store.AttachKey, ScopeID: "k1", Guardrails: []string{"-pii", "secrets"}}
			_, err = store.Put(ctx, st, b.ID, &b, -1)
			require.NoError(t, err)
			all, err := store.List[store.GuardrailAttachment](ctx, st)
			require.NoError(t, err)
			require.Equal(t, []store.GuardrailAttachment{b, a}, all, "by id: key:k1 < team:t1")
			gs, err := store.List[store.Guardrail](ctx, st)
			require.NoError(t, err)
			require.Len(t, gs, 1)
			require.NoError(t, st.Delete(ctx, store.KindGuardrail, "pii"))
			_, _, err = store.Get[store.Guardrail](ctx, st, "pii")
			require.ErrorIs(t, err, store.ErrNotFound)
		}},
	}
}
