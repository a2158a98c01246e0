package admin

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// Spend reports: totals, series and ledger rows.

// DefaultSpendWindow is how far back spend reports look when no `since` is given.
const DefaultSpendWindow = 30 * 24 * time.Hour

// maxBuckets bounds the length of a spend series.
const maxBuckets = 10_000

var scopeKinds = map[adminv1.ScopeKind]kernel.ScopeKind{
	adminv1.ScopeKind_SCOPE_KIND_UNSPECIFIED: kernel.ScopeGlobal,
	adminv1.ScopeKind_SCOPE_KIND_GLOBAL:      kernel.ScopeGlobal,
	adminv1.ScopeKind_SCOPE_KIND_ORG:         kernel.ScopeOrg,
	adminv1.ScopeKind_SCOPE_KIND_TEAM:        kernel.ScopeTeam,
	adminv1.ScopeKind_SCOPE_KIND_USER:        kernel.ScopeUser,
	adminv1.ScopeKind_SCOPE_KIND_CUSTOMER:    kernel.ScopeCustomer,
	adminv1.ScopeKind_SCOPE_KIND_KEY:         kernel.ScopeKey,
	adminv1.ScopeKind_SCOPE_KIND_RUN:         kernel.ScopeRun,
	adminv1.ScopeKind_SCOPE_KIND_TAG:         kernel.ScopeTag,
}

// spendScope converts the requested scope and checks that the caller may read
// it: a team admin reads its own team (the default) and its team's keys.
func (s *Server) spendScope(ctx context.Context, sc *adminv1.Scope) (kernel.ScopeRef, error) {
	ref := kernel.ScopeRef{Kind: scopeKinds[sc.GetKind()], ID: sc.GetId()}
	g := teamGuard(ctx)
	if g == "" {
		return ref, nil
	}
	switch {
	case sc.GetKind() == adminv1.ScopeKind_SCOPE_KIND_UNSPECIFIED:
		return kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: g}, nil
	case ref.Kind == kernel.ScopeTeam && ref.ID == g:
		return ref, nil
	case ref.Kind == kernel.ScopeKey:
		_, _, err := s.getOwnKey(ctx, ref.ID)
		return ref, err
	default:
		return ref, errorf(ErrDenied, "a team admin of %q may read the spend of its team and its keys only", g)
	}
}

func (s *Server) since(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return s.now().UTC().Add(-DefaultSpendWindow)
	}
	return t.AsTime().UTC()
}

// entries calls f for every ledger row matching the filter, page by page.
func (s *Server) entries(ctx context.Context, f store.LedgerFilter, each func(*store.LedgerEntry)) error {
	f.Limit = 1000
	for {
		rows, err := s.st.Entries(ctx, f)
		if err != nil {
			return err
		}
		for i := range rows {
			each(&rows[i])
		}
		if len(rows) < f.Limit {
			return nil
		}
		f.After = rows[len(rows)-1].RequestID
	}
}

// GetSpend is the total spend of a scope (optionally one model) over [since, until).
func (s *Server) GetSpend(ctx context.Context, req *adminv1.GetSpendRequest) (*adminv1.GetSpendResponse, error) {
	ref, err := s.spendScope(ctx, req.GetScope())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	since, until := s.since(req.GetSince()), tsIn(req.GetUntil())
	out := &adminv1.GetSpendResponse{}
	if req.GetModel() != "" {
		var total kernel.Money
		var cc store.CacheCounts
		err = s.entries(ctx, store.LedgerFilter{Scope: scopeFilter(ref), Model: req.GetModel(), Since: since, Until: until}, func(e *store.LedgerEntry) {
			total += e.Cost
			out.Requests++
			out.Tokens += e.Usage.Total()
			cc.Add(store.CacheCountsOf(e))
		})
		out.Total, out.Cache = moneyOut(total), cacheCountsOut(cc)
		if err != nil {
			return nil, s.toStatus(ctx, err)
		}
		return out, nil
	}
	total, err := s.st.ScopeSpend(ctx, ref, since, until)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out.Total = moneyOut(total)
	end := until
	if end.IsZero() {
		end = s.now().UTC().Add(time.Hour)
	}
	if end.After(since) {
		step := end.Sub(since).Truncate(time.Hour) + time.Hour
		points, err := s.st.Series(ctx, ref, since, end, step)
		if err != nil {
			return nil, s.toStatus(ctx, err)
		}
		var cc store.CacheCounts
		for _, p := range points {
			out.Requests += p.Requests
			out.Tokens += p.Tokens
			cc.Add(p.Cache)
		}
		out.Cache = cacheCountsOut(cc)
	}
	return out, nil
}

// GetSpendSeries is the spend of a scope (optionally one model) per bucket.
func (s *Server) GetSpendSeries(ctx context.Context, req *adminv1.GetSpendSeriesRequest) (*adminv1.GetSpendSeriesResponse, error) {
	ref, err := s.spendScope(ctx, req.GetScope())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	since, until, step, n, err := s.seriesWindow(req.GetSince(), req.GetUntil(), req.GetStep())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	var points []store.SpendPoint
	if req.GetModel() == "" {
		points, err = s.st.Series(ctx, ref, since, until, step)
	} else {
		var groups map[string][]store.SpendPoint
		f := store.LedgerFilter{Scope: scopeFilter(ref), Model: req.GetModel(), Since: since, Until: until}
		groups, err = s.bucketEntries(ctx, f, since, step, n, func(*store.LedgerEntry) string { return "" })
		points = groups[""]
		if points == nil {
			points = emptySeries(since, step, n)
		}
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.GetSpendSeriesResponse{}
	for i := range points {
		out.Points = append(out.Points, pointOut(&points[i]))
	}
	return out, nil
}

var statusesOut = map[kernel.Status]adminv1.RequestStatus{
	kernel.StatusCompleted: adminv1.RequestStatus_REQUEST_STATUS_COMPLETED,
	kernel.StatusAborted:   adminv1.RequestStatus_REQUEST_STATUS_ABORTED,
	kernel.StatusFailed:    adminv1.RequestStatus_REQUEST_STATUS_FAILED,
	kernel.StatusExpired:   adminv1.RequestStatus_REQUEST_STATUS_EXPIRED,
	kernel.StatusRefused:   adminv1.RequestStatus_REQUEST_STATUS_REFUSED,
}

func entryView(e *store.LedgerEntry) *adminv1.SpendEntry {
	return &adminv1.SpendEntry{
		RequestId: e.RequestID, KeyId: e.KeyID, UserId: e.UserID, TeamId: e.TeamID, OrgId: e.OrgID,
		CustomerId: e.CustomerID, Model: e.Model, Deployment: e.Deployment,
		Usage: &adminv1.Usage{
			Input: e.Usage.Input, CachedInput: e.Usage.CachedInput, CacheWrite: e.Usage.CacheWrite,
			Output: e.Usage.Output, Reasoning: e.Usage.Reasoning,
		},
		Cost: moneyOut(e.Cost), Status: statusesOut[e.Status], HttpStatus: int32(e.HTTPStatus), Stream: e.Stream,
		StartedAt: tsOut(e.StartedAt), EndedAt: tsOut(e.EndedAt), Unpriced: e.Unpriced, RequestedModel: e.RequestedModel,
		Cache: e.Cache.String(), CacheSaved: savedOut(e), Unit: string(e.Unit), Quantity: e.Quantity,
	}
}

// ListSpendEntries lists ledger rows, oldest first, one page at a time.
func (s *Server) ListSpendEntries(ctx context.Context, req *adminv1.ListSpendEntriesRequest) (*adminv1.ListSpendEntriesResponse, error) {
	ref, err := s.spendScope(ctx, req.GetScope())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	after, err := decodeToken(req.GetPageToken())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	n := int(req.GetPageSize())
	if n <= 0 {
		n = defaultPageSize
	}
	f := store.LedgerFilter{Model: req.GetModel(), Since: tsIn(req.GetSince()), Until: tsIn(req.GetUntil()), After: after, Limit: n + 1}
	f.Scope = scopeFilter(ref)
	rows, err := s.st.Entries(ctx, f)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListSpendEntriesResponse{}
	if len(rows) > n {
		rows = rows[:n]
		out.NextPageToken = encodeToken(rows[n-1].RequestID)
	}
	for i := range rows {
		out.Entries = append(out.Entries, entryView(&rows[i]))
	}
	return out, nil
}

// scopeFilter is the ledger filter of a scope: nil (every row) for the global scope.
func scopeFilter(ref kernel.ScopeRef) *kernel.ScopeRef {
	if ref.Kind == kernel.ScopeGlobal {
		return nil
	}
	return &ref
}
