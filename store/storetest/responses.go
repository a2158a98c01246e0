package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/store"
)

// responsesTests: stored responses are visible to their key only, replaced by
// a second put, gone after their expiry (for Get, and removed by Purge), and
// deleted once. Every backend must implement store.Responses.
func (s *suite) responsesTests() []test {
	return []test{
		{"PutGetDeletePurge", func(t *testing.T) {
			st := s.fresh(t)
			rs, ok := st.(store.Responses)
			require.True(t, ok, "%T does not implement store.Responses", st)
			ctx := timeout(t, 30*time.Second)
			t0 := time.Unix(1_750_000_000, 0).UTC()
			r := store.StoredResponse{
				ID: "resp_1", KeyID: "k1", Response: []byte(`{"id":"resp_1"}`), Input: []byte(`[{"role":"user","content":"hi"}]`),
				CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
			}
			require.NoError(t, rs.PutResponse(ctx, r))
			got, err := rs.GetResponse(ctx, "k1", "resp_1", t0)
			require.NoError(t, err)
			require.Equal(t, r, got)

			_, err = rs.GetResponse(ctx, "k2", "resp_1", t0) // another key
			require.ErrorIs(t, err, store.ErrNotFound)
			require.ErrorIs(t, rs.DeleteResponse(ctx, "k2", "resp_1"), store.ErrNotFound)
			_, err = rs.GetResponse(ctx, "k1", "resp_1", t0.Add(time.Hour)) // expired
			require.ErrorIs(t, err, store.ErrNotFound)

			r.Response = []byte(`{"id":"resp_1","v":2}`)
			require.NoError(t, rs.PutResponse(ctx, r))
			got, err = rs.GetResponse(ctx, "k1", "resp_1", t0)
			require.NoError(t, err)
			require.JSONEq(t, `{"id":"resp_1","v":2}`, string(got.Response))

			r2 := r
			r2.ID, r2.ExpiresAt = "resp_2", t0.Add(2*time.Hour)
			require.NoError(t, rs.PutResponse(ctx, r2))
			n, err := rs.PurgeResponses(ctx, t0.Add(time.Hour))
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			_, err = rs.GetResponse(ctx, "k1", "resp_1", t0)
			require.ErrorIs(t, err, store.ErrNotFound)

			require.NoError(t, rs.DeleteResponse(ctx, "k1", "resp_2"))
			require.ErrorIs(t, rs.DeleteResponse(ctx, "k1", "resp_2"), store.ErrNotFound)
			_, err = rs.GetResponse(ctx, "k1", "resp_2", t0)
			require.ErrorIs(t, err, store.ErrNotFound)
		}},
	}
}
