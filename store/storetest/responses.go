package storetest

import (
	"errors"
	"sync"
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
				Run: "ticket-4711", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), // the run is kept with the response (issue 36)
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
		{"ResponseOwnersWithTheLedger", func(t *testing.T) {
			st := s.fresh(t)
			ro, ok := st.(store.ResponseOwners)
			require.True(t, ok, "%T does not implement store.ResponseOwners", st)
			rs := st.(store.Responses)
			ctx := timeout(t, 30*time.Second)
			t0 := time.Unix(1_750_000_000, 0).UTC()
			o := store.ResponseOwner{
				ID: "resp_n1", KeyID: "k1", Deployment: "d2", Model: "m", Store: true, Background: true,
				Run: "resp_n0", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), // the chain's run, written with the ledger
			}
			e := store.LedgerEntry{RequestID: "r-own-1", KeyID: "k1", Model: "m", Deployment: "d2", StartedAt: t0, EndedAt: t0, Owner: &o}
			plain := store.LedgerEntry{RequestID: "r-own-2", KeyID: "k1", Model: "m", Deployment: "d1", StartedAt: t0, EndedAt: t0}
			require.NoError(t, st.Append(ctx, e, plain))
			require.NoError(t, st.Flush(ctx))
			got, err := ro.GetResponseOwner(ctx, "resp_n1", t0)
			require.NoError(t, err)
			require.Equal(t, o, got)

			// A repeated entry (a retried batch) keeps the first owner and
			// the ledger row once.
			other := o
			other.KeyID, other.Deployment = "k2", "d1"
			again := e
			again.Owner = &other
			require.NoError(t, st.Append(ctx, again))
			require.NoError(t, st.Flush(ctx))
			got, err = ro.GetResponseOwner(ctx, "resp_n1", t0)
			require.NoError(t, err)
			require.Equal(t, "k1", got.KeyID)
			require.Equal(t, "d2", got.Deployment)

			_, err = ro.GetResponseOwner(ctx, "resp_n1", t0.Add(time.Hour)) // expired
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = ro.GetResponseOwner(ctx, "resp_unknown", t0)
			require.ErrorIs(t, err, store.ErrNotFound)

			o2 := o
			o2.ID, o2.ExpiresAt = "resp_n2", t0.Add(2*time.Hour)
			require.NoError(t, st.Append(ctx, store.LedgerEntry{RequestID: "r-own-3", KeyID: "k1", StartedAt: t0, EndedAt: t0, Owner: &o2}))
			require.NoError(t, st.Flush(ctx))
			_, err = rs.PurgeResponses(ctx, t0.Add(time.Hour))
			require.NoError(t, err)
			_, err = ro.GetResponseOwner(ctx, "resp_n1", t0)
			require.ErrorIs(t, err, store.ErrNotFound, "purged with the expired responses")

			require.NoError(t, ro.DeleteResponseOwner(ctx, "resp_n2"))
			require.ErrorIs(t, ro.DeleteResponseOwner(ctx, "resp_n2"), store.ErrNotFound)
			_, err = ro.GetResponseOwner(ctx, "resp_n2", t0)
			require.ErrorIs(t, err, store.ErrNotFound)
		}},
		{"ResponseSettlementClaimedOnce", func(t *testing.T) {
			st := s.fresh(t)
			ro := st.(store.ResponseOwners)
			ctx := timeout(t, 30*time.Second)
			t0 := time.Unix(1_750_000_000, 0).UTC()
			o := store.ResponseOwner{
				ID: "resp_bg", KeyID: "k1", Deployment: "d1", Model: "m", Store: true, Background: true, Run: "loop-1",
				CreatedAt: t0, ExpiresAt: t0.Add(time.Hour), Pending: []byte(`{"request_id":"r1"}`),
			}
			require.NoError(t, ro.PutResponseOwner(ctx, o))
			other := o
			other.KeyID, other.Pending = "k2", []byte(`{"request_id":"r2"}`)
			require.NoError(t, ro.PutResponseOwner(ctx, other), "the first owner stays")
			got, err := ro.GetResponseOwner(ctx, "resp_bg", t0)
			require.NoError(t, err)
			require.Equal(t, o, got)

			// Concurrent claims: exactly one gets the settlement.
			var wg sync.WaitGroup
			var mu sync.Mutex
			var won [][]byte
			var errs []error
			for range 8 {
				wg.Go(func() {
					p, err := ro.ClaimResponseSettlement(ctx, "resp_bg")
					if errors.Is(err, store.ErrNotFound) {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
						return
					}
					won = append(won, p)
				})
			}
			wg.Wait()
			require.Empty(t, errs)
			require.Equal(t, [][]byte{[]byte(`{"request_id":"r1"}`)}, won)
			_, err = ro.ClaimResponseSettlement(ctx, "resp_bg")
			require.ErrorIs(t, err, store.ErrNotFound)
			got, err = ro.GetResponseOwner(ctx, "resp_bg", t0)
			require.NoError(t, err, "the owner stays once settled")
			require.Nil(t, got.Pending)
			_, err = ro.ClaimResponseSettlement(ctx, "resp_unknown")
			require.ErrorIs(t, err, store.ErrNotFound)
		}},
		{"PendingResponseOwners", func(t *testing.T) {
			st := s.fresh(t)
			ro := st.(store.ResponseOwners)
			ctx := timeout(t, 30*time.Second)
			t0 := time.Unix(1_750_000_000, 0).UTC()
			pending, err := ro.PendingResponseOwners(ctx)
			require.NoError(t, err)
			require.Empty(t, pending)
			later := store.ResponseOwner{
				ID: "resp_b", KeyID: "k1", Deployment: "d1", Model: "m", Store: true, Background: true, Run: "resp_a",
				CreatedAt: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour), Pending: []byte(`{"request_id":"rb"}`),
			}
			first := later
			first.ID, first.CreatedAt, first.Pending = "resp_a", t0, []byte(`{"request_id":"ra"}`)
			first.ExpiresAt = t0.Add(time.Second) // expired: still pending
			plain := later
			plain.ID, plain.Pending, plain.Background = "resp_c", nil, false
			for _, o := range []store.ResponseOwner{later, plain, first} {
				require.NoError(t, ro.PutResponseOwner(ctx, o))
			}
			pending, err = ro.PendingResponseOwners(ctx)
			require.NoError(t, err)
			require.Equal(t, []store.ResponseOwner{first, later}, pending, "oldest first, only the pending")
			_, err = ro.ClaimResponseSettlement(ctx, "resp_a")
			require.NoError(t, err)
			pending, err = ro.PendingResponseOwners(ctx)
			require.NoError(t, err)
			require.Equal(t, []store.ResponseOwner{later}, pending, "a claimed one is no longer pending")
		}},
	}
}
