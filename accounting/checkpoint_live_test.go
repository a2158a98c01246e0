package accounting_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// TestLiveStreamPastItsLeaseIsNotChargedItsCheckpoint: a stream still
// running on a live replica when its lease ends (a lease shorter than the
// longest request) is expired by another replica while its own replica
// writes its checkpoint every second. The checkpoint is fresh: the stream
// goes on past it and its allowance, so charging it would put the ledger
// below the provider's bill (the stream's own settlement then finds nothing
// to settle). It is charged its worst case, as before checkpoints; a
// checkpoint its writer stopped writing (the replica died) is still charged
// with its allowance. The spin model's -DCPLIVE is this rule's refutation.
func TestLiveStreamPastItsLeaseIsNotChargedItsCheckpoint(t *testing.T) {
	cl := newCheckpointCluster(t, time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	st, clk := cl.st, cl.clk
	ca, a := cl.replica(t)
	_, b := cl.replica(t)
	cd, d := cl.replica(t)

	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-live"}
	price := kernel.Price{Input: 1_000_000, Output: 4_000_000}
	for id, acct := range map[string]*accounting.Accountant{"live": a, "dead": d} {
		dec, err := acct.Admit(t.Context(), &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{{Ref: key}}, Model: "m", PromptBytes: 4000, MaxTokens: 4000, Price: price,
		})
		require.NoError(t, err)
		require.True(t, dec.Admitted)
	}
	// "dead" shows 10 tokens, and its replica D writes for 3 s and dies;
	// "live" grows 10 tokens a second and A writes every second until its
	// lease ends.
	d.Checkpoint("dead", kernel.Usage{Input: 1000, Output: 10})
	out := int64(0)
	for s := 0; s < 60; s++ {
		out += 10
		a.Checkpoint("live", kernel.Usage{Input: 1000, Output: out})
		clk.add(time.Second)
		if s < 3 {
			require.NoError(t, cd.WriteCheckpoints(t.Context(), clk.now()))
		}
		require.NoError(t, ca.WriteCheckpoints(t.Context(), clk.now()))
	}
	clk.add(100 * time.Millisecond)
	b.ExpireNow(t.Context())

	// The live stream goes on for another minute and ends; its settlement
	// finds its reservation expired.
	final := kernel.Usage{Input: 1000, Output: out + 600}
	_, err := a.Settle(t.Context(), store.LedgerEntry{RequestID: "live", KeyID: key.ID, Usage: final, Status: kernel.StatusCompleted})
	require.NoError(t, err)
	require.NoError(t, a.Flush(t.Context()))

	got := ledgerByID(t, st, key)
	bill := kernel.Cost(price, final)
	require.GreaterOrEqual(t, got["live"].Cost, bill, "the ledger below the provider's bill: the live stream was charged its checkpoint")
	require.Equal(t, kernel.Cost(price, kernel.Usage{Input: 4000, Output: 4000}), got["live"].Cost, "the worst case")
	dead := kernel.Usage{Input: 1000, Output: 10 + 2*10 + 64}
	require.Equal(t, dead, got["dead"].Usage, "a stale checkpoint is charged with its allowance")
}
