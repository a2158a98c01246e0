package admin_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

func TestSpend(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := e.admin(t)
		c := clients(e)
		day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
		var entries []store.LedgerEntry
		for i := range 6 {
			model, team, key := "gpt-4o", "red", "k1"
			if i%2 == 1 {
				model, key = "gpt-4o-mini", "k2"
			}
			if i >= 4 {
				team, key = "blue", "k3"
			}
			end := day.Add(time.Duration(i)*12*time.Hour + time.Minute)
			entries = append(entries, store.LedgerEntry{
				RequestID: fmt.Sprintf("req-%d", i), KeyID: key, TeamID: team, OrgID: "acme", UserID: "alice", CustomerID: "cust",
				Model: model, Deployment: "d", Usage: kernel.Usage{Input: 100, Output: 10 * int64(i+1)},
				Cost: kernel.Money(i+1) * kernel.Cent, Status: kernel.StatusCompleted, HTTPStatus: 200,
				StartedAt: end.Add(-time.Second), EndedAt: end,
			})
		}
		require.NoError(t, e.st.Append(ctx, entries...))
		require.NoError(t, e.st.Flush(ctx))
		since := timestamppb.New(day)
		until := timestamppb.New(day.Add(72 * time.Hour))
		scope := func(k adminv1.ScopeKind, id string) *adminv1.Scope { return &adminv1.Scope{Kind: k, Id: id} }

		tests := []struct {
			name     string
			req      *adminv1.GetSpendRequest
			dollars  string
			requests int64
		}{
			{"global", &adminv1.GetSpendRequest{Since: since, Until: until}, "0.21", 6},
			{"team", &adminv1.GetSpendRequest{Scope: scope(adminv1.ScopeKind_SCOPE_KIND_TEAM, "red"), Since: since, Until: until}, "0.1", 4},
			{"key", &adminv1.GetSpendRequest{Scope: scope(adminv1.ScopeKind_SCOPE_KIND_KEY, "k2"), Since: since, Until: until}, "0.06", 2},
			{"org", &adminv1.GetSpendRequest{Scope: scope(adminv1.ScopeKind_SCOPE_KIND_ORG, "acme"), Since: since, Until: until}, "0.21", 6},
			{"user", &adminv1.GetSpendRequest{Scope: scope(adminv1.ScopeKind_SCOPE_KIND_USER, "alice"), Since: since, Until: until}, "0.21", 6},
			{"customer", &adminv1.GetSpendRequest{Scope: scope(adminv1.ScopeKind_SCOPE_KIND_CUSTOMER, "cust"), Since: since, Until: until}, "0.21", 6},
			{"model", &adminv1.GetSpendRequest{Model: "gpt-4o", Since: since, Until: until}, "0.09", 3},
			{"team and model", &adminv1.GetSpendRequest{Scope: scope(adminv1.ScopeKind_SCOPE_KIND_TEAM, "red"), Model: "gpt-4o-mini", Since: since, Until: until}, "0.06", 2},
			{"first day", &adminv1.GetSpendRequest{Since: since, Until: timestamppb.New(day.Add(24 * time.Hour))}, "0.03", 2},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp, err := c.spend.GetSpend(ctx, tt.req)
				require.NoError(t, err)
				require.Equal(t, tt.dollars, resp.GetTotal().GetDollars())
				require.Equal(t, tt.requests, resp.GetRequests())
			})
		}

		series, err := c.spend.GetSpendSeries(ctx, &adminv1.GetSpendSeriesRequest{Since: since, Until: until})
		require.NoError(t, err)
		var got []string
		for _, p := range series.GetPoints() {
			got = append(got, p.GetStart().AsTime().Format("01-02")+"="+p.GetCost().GetDollars())
		}
		require.Equal(t, []string{"03-10=0.03", "03-11=0.07", "03-12=0.11"}, got)

		series, err = c.spend.GetSpendSeries(ctx, &adminv1.GetSpendSeriesRequest{Model: "gpt-4o", Since: since, Until: until, Step: durationpb.New(48 * time.Hour)})
		require.NoError(t, err)
		got = nil
		for _, p := range series.GetPoints() {
			got = append(got, fmt.Sprintf("%s=%s/%d", p.GetStart().AsTime().Format("01-02"), p.GetCost().GetDollars(), p.GetRequests()))
		}
		require.Equal(t, []string{"03-10=0.04/2", "03-12=0.05/1"}, got)

		_, err = c.spend.GetSpendSeries(ctx, &adminv1.GetSpendSeriesRequest{Step: durationpb.New(90 * time.Minute)})
		require.ErrorContains(t, err, "invalid step")

		var ids []string
		req := &adminv1.ListSpendEntriesRequest{Scope: scope(adminv1.ScopeKind_SCOPE_KIND_TEAM, "red"), PageSize: 3}
		for {
			resp, err := c.spend.ListSpendEntries(ctx, req)
			require.NoError(t, err)
			for _, en := range resp.GetEntries() {
				ids = append(ids, en.GetRequestId())
			}
			if resp.GetNextPageToken() == "" {
				break
			}
			req.PageToken = resp.GetNextPageToken()
		}
		require.Equal(t, []string{"req-0", "req-1", "req-2", "req-3"}, ids)

		one, err := c.spend.ListSpendEntries(ctx, &adminv1.ListSpendEntriesRequest{Model: "gpt-4o-mini", PageSize: 1})
		require.NoError(t, err)
		require.Empty(t, cmpDiff(&adminv1.SpendEntry{
			RequestId: "req-1", KeyId: "k2", UserId: "alice", TeamId: "red", OrgId: "acme", CustomerId: "cust",
			Model: "gpt-4o-mini", Deployment: "d", Usage: &adminv1.Usage{Input: 100, Output: 20},
			Cost: &adminv1.Money{NanoUsd: 20_000_000, Dollars: "0.02"}, Status: adminv1.RequestStatus_REQUEST_STATUS_COMPLETED,
			HttpStatus: 200, StartedAt: timestamppb.New(entries[1].StartedAt), EndedAt: timestamppb.New(entries[1].EndedAt),
		}, one.GetEntries()[0]))
		require.NotEmpty(t, one.GetNextPageToken())
	})
}
