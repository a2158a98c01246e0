package admin

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// The spend breakdown: the series of every key, team, user, org, customer or
// model in one call, so that the console's spend page asks once instead of
// once per key (docs/console.md "Spend page load").

var groupKinds = map[string]kernel.ScopeKind{
	"key": kernel.ScopeKey, "team": kernel.ScopeTeam, "user": kernel.ScopeUser,
	"org": kernel.ScopeOrg, "customer": kernel.ScopeCustomer,
	"run": kernel.ScopeRun, // every run, "key:ID/RUN" or "team:ID/RUN"
}

// seriesWindow is a series request's [since, until) and step, with the
// defaults of GetSpendSeries, checked against maxBuckets.
func (s *Server) seriesWindow(sinceIn, untilIn *timestamppb.Timestamp, stepIn *durationpb.Duration) (since, until time.Time, step time.Duration, n int, err error) {
	now := s.now().UTC()
	since = now.Add(-DefaultSpendWindow).Truncate(24 * time.Hour)
	if sinceIn != nil {
		since = sinceIn.AsTime().UTC()
	}
	until = now
	if untilIn != nil {
		until = untilIn.AsTime().UTC()
	}
	step = 24 * time.Hour
	if stepIn != nil {
		step = stepIn.AsDuration()
	}
	if !until.After(since) {
		return since, until, step, 0, errorf(ErrInvalid, "until: must be after since (%s)", since.Format(time.RFC3339))
	}
	n = int((until.Sub(since) + step - 1) / step)
	if n > maxBuckets {
		return since, until, step, 0, errorf(ErrInvalid, "step: %d buckets is more than %d; use a larger step", n, maxBuckets)
	}
	return since, until, step, n, nil
}

// GetSpendBreakdown is the spend of every scope of a kind (one query over the
// hourly totals) or of every model (one pass over the ledger rows) per bucket.
func (s *Server) GetSpendBreakdown(ctx context.Context, req *adminv1.GetSpendBreakdownRequest) (*adminv1.GetSpendBreakdownResponse, error) {
	since, until, step, n, err := s.seriesWindow(req.GetSince(), req.GetUntil(), req.GetStep())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	var groups map[string][]store.SpendPoint
	switch req.GetGroupBy() {
	case "model":
		groups, err = s.modelSeries(ctx, since, until, step, n)
	case groupMCPServer, groupMCPTool:
		groups, err = s.mcpSeries(ctx, req.GetGroupBy(), since, until, step, n) // breakdown_mcp.go
	case "tag": // every tag, "name=value"
		groups, err = s.scopeSeries(ctx, kernel.ScopeTag, since, until, step)
	default:
		if name, ok := strings.CutPrefix(req.GetGroupBy(), "tag:"); ok { // the values of one tag
			groups, err = s.tagSeries(ctx, name, since, until, step)
			break
		}
		groups, err = s.scopeSeries(ctx, groupKinds[req.GetGroupBy()], since, until, step)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.GetSpendBreakdownResponse{}
	for id, points := range groups {
		g := &adminv1.SpendGroup{Id: id}
		var total kernel.Money
		var cc store.CacheCounts
		for i := range points {
			p := &points[i]
			total += p.Cost
			g.Requests += p.Requests
			g.Tokens += p.Tokens
			cc.Add(p.Cache)
			g.Points = append(g.Points, pointOut(p))
		}
		g.Cache = cacheCountsOut(cc)
		if g.Requests == 0 && total == 0 {
			continue
		}
		g.Total = moneyOut(total)
		out.Groups = append(out.Groups, g)
	}
	slices.SortFunc(out.Groups, func(a, b *adminv1.SpendGroup) int {
		if c := b.GetTotal().GetNanoUsd() - a.GetTotal().GetNanoUsd(); c != 0 {
			return int(min(max(c, -1), 1))
		}
		return strings.Compare(a.GetId(), b.GetId())
	})
	return out, nil
}

// scopeSeries is the series of every scope of kind; a team admin gets its
// team's keys or its team only.
func (s *Server) scopeSeries(ctx context.Context, kind kernel.ScopeKind, since, until time.Time, step time.Duration) (map[string][]store.SpendPoint, error) {
	by, ok := s.st.(store.SpendByScope)
	if !ok {
		return nil, errorf(ErrInvalid, "this store cannot report spend by scope")
	}
	g := teamGuard(ctx)
	if g != "" && kind != kernel.ScopeKey && kind != kernel.ScopeTeam && kind != kernel.ScopeRun {
		return nil, errorf(ErrDenied, "a team admin of %q may break spend down by its keys, its team, their runs or models only", g)
	}
	groups, err := by.SeriesByScope(ctx, kind, since, until, step)
	if err != nil || g == "" {
		return groups, err
	}
	own := map[string]bool{}
	if kind == kernel.ScopeTeam {
		own[g] = true
	} else {
		keys, err := store.List[store.Key](ctx, s.st)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			own[k.ID] = k.TeamID == g
		}
	}
	for id := range groups {
		if !own[id] && (kind != kernel.ScopeRun || !ownRun(id, g, own)) {
			delete(groups, id)
		}
	}
	return groups, nil
}

// ownRun reports whether run id ("key:ID/RUN" or "team:ID/RUN") is of team
// or of one of its keys (ownKeys).
func ownRun(id, team string, ownKeys map[string]bool) bool {
	owner, _, _ := strings.Cut(id, "/")
	if k, ok := strings.CutPrefix(owner, "key:"); ok {
		return ownKeys[k]
	}
	return owner == "team:"+team
}

// tagSeries is the series of every value of tag name (requests without the
// tag are in none).
func (s *Server) tagSeries(ctx context.Context, name string, since, until time.Time, step time.Duration) (map[string][]store.SpendPoint, error) {
	all, err := s.scopeSeries(ctx, kernel.ScopeTag, since, until, step)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]store.SpendPoint)
	for id, points := range all {
		if value, ok := strings.CutPrefix(id, name+"="); ok {
			out[value] = points
		}
	}
	return out, nil
}

// modelSeries is the series of every model, from one pass over the ledger
// rows of the range (a team admin's: its team's rows).
func (s *Server) modelSeries(ctx context.Context, since, until time.Time, step time.Duration, n int) (map[string][]store.SpendPoint, error) {
	f := store.LedgerFilter{Since: since, Until: until}
	if g := teamGuard(ctx); g != "" {
		f.Scope = &kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: g}
	}
	return s.bucketEntries(ctx, f, since, step, n, func(e *store.LedgerEntry) string { return e.Model })
}

// bucketEntries reads the ledger rows of f once and adds each to the bucket
// of step from since (n buckets) of its group.
func (s *Server) bucketEntries(ctx context.Context, f store.LedgerFilter, since time.Time, step time.Duration, n int, group func(*store.LedgerEntry) string) (map[string][]store.SpendPoint, error) {
	groups := map[string][]store.SpendPoint{}
	err := s.entries(ctx, f, func(e *store.LedgerEntry) {
		i := int(e.EndedAt.Sub(since) / step)
		if i < 0 || i >= n {
			return
		}
		id := group(e)
		points, ok := groups[id]
		if !ok {
			points = emptySeries(since, step, n)
			groups[id] = points
		}
		points[i].Cost += e.Cost
		points[i].Requests++
		points[i].Tokens += e.Usage.Total()
		points[i].Cache.Add(store.CacheCountsOf(e))
	})
	return groups, err
}

// emptySeries is n zero buckets of step from since.
func emptySeries(since time.Time, step time.Duration, n int) []store.SpendPoint {
	points := make([]store.SpendPoint, n)
	for i := range points {
		points[i].Start = since.Add(time.Duration(i) * step)
	}
	return points
}
