package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/internal/secret"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/reconcile"
	"github.com/tollgate-ai/tollgate/store"
)

// Reconciliation of the ledger against the providers' own reports
// (docs/reconcile.md): the RPCs, the target of a provider (its report
// client with its opened admin credential, and its deployments), and the
// record of scheduled runs (store.KindReconcile).

// Reconcile fetches the provider's usage and cost reports for the days
// asked and compares them with the ledger.
func (s *Server) Reconcile(ctx context.Context, req *adminv1.ReconcileRequest) (*adminv1.ReconcileResponse, error) {
	from, to, err := reconcileDays(req.GetFrom(), req.GetTo())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	t, err := ReconcileTarget(ctx, s.st, s.sealer, req.GetProvider())
	if err != nil {
		return nil, s.reconcileStatus(ctx, err)
	}
	res, err := reconcile.Run(ctx, t, s.st, from, to, s.now())
	if err != nil {
		return nil, s.reconcileStatus(ctx, err)
	}
	return &adminv1.ReconcileResponse{Report: ReconcileReport(res, false, nil)}, nil
}

// ListReconcileRuns returns the last scheduled run of each provider.
func (s *Server) ListReconcileRuns(ctx context.Context, _ *adminv1.ListReconcileRunsRequest) (*adminv1.ListReconcileRunsResponse, error) {
	objs, err := s.st.List(ctx, store.KindReconcile, "", 0)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListReconcileRunsResponse{}
	for _, o := range objs {
		var r adminv1.ReconcileReport
		if err := protojson.Unmarshal(o.Doc, &r); err != nil {
			return nil, s.toStatus(ctx, fmt.Errorf("stored reconcile run %q: %w", o.ID, err))
		}
		out.Runs = append(out.Runs, &r)
	}
	return out, nil
}

func (s *Server) reconcileStatus(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, reconcile.ErrRange):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, reconcile.ErrUnsupported), errors.Is(err, reconcile.ErrNoAdminCredential):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, reconcile.ErrProvider):
		return status.Error(codes.Unavailable, err.Error())
	}
	return s.toStatus(ctx, err)
}

// reconcileDays parses the first and last UTC days (YYYY-MM-DD; an empty
// last day is the first) into the range [from, to).
func reconcileDays(first, last string) (from, to time.Time, err error) {
	from, err = time.Parse(time.DateOnly, first)
	if err != nil {
		return from, to, errorf(ErrInvalid, "from: %q is not a day (YYYY-MM-DD)", first)
	}
	to = from
	if last != "" {
		if to, err = time.Parse(time.DateOnly, last); err != nil {
			return from, to, errorf(ErrInvalid, "to: %q is not a day (YYYY-MM-DD)", last)
		}
	}
	to = to.Add(reconcile.Day)
	if err := reconcile.CheckRange(from, to); err != nil {
		return from, to, errorf(ErrInvalid, "%v", err)
	}
	return from, to, nil
}

// ReconcileTarget is the reconciliation target of a provider: its report
// client, with its admin credential opened by sealer, and its deployments.
func ReconcileTarget(ctx context.Context, st store.Config, sealer *secret.Sealer, id string) (reconcile.Target, error) {
	p, _, err := store.Get[store.Provider](ctx, st, id)
	if err != nil {
		return reconcile.Target{}, err
	}
	deployments, err := store.List[store.Deployment](ctx, st)
	if err != nil {
		return reconcile.Target{}, err
	}
	return target(&p, deployments, sealer)
}

// ReconcileTargets are the targets of every provider that has an admin
// credential (the scheduled job's).
func ReconcileTargets(ctx context.Context, st store.Config, sealer *secret.Sealer) ([]reconcile.Target, error) {
	providers, err := store.List[store.Provider](ctx, st)
	if err != nil {
		return nil, err
	}
	deployments, err := store.List[store.Deployment](ctx, st)
	if err != nil {
		return nil, err
	}
	var out []reconcile.Target
	for i := range providers {
		if len(providers[i].AdminCredential) == 0 {
			continue
		}
		t, err := target(&providers[i], deployments, sealer)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func target(p *store.Provider, deployments []store.Deployment, sealer *secret.Sealer) (reconcile.Target, error) {
	if len(p.AdminCredential) == 0 {
		return reconcile.Target{}, fmt.Errorf("provider %q: %w", p.ID, reconcile.ErrNoAdminCredential)
	}
	if sealer == nil {
		return reconcile.Target{}, ErrNoSealer
	}
	key, err := sealer.Open(p.AdminCredential)
	if err != nil {
		return reconcile.Target{}, fmt.Errorf("provider %q: admin credential: %w", p.ID, err)
	}
	src, err := reconcile.NewSource(p.Type, reconcile.Endpoint{BaseURL: p.BaseURL, AdminKey: string(key), Version: p.APIVersion})
	if err != nil {
		return reconcile.Target{}, fmt.Errorf("provider %q: %w", p.ID, err)
	}
	t := reconcile.Target{Provider: p.ID, Source: src, Deployments: map[string]reconcile.Deployment{}}
	for _, d := range deployments {
		if d.Provider == p.ID {
			t.Deployments[d.ID] = reconcile.Deployment{ProviderModel: d.ProviderModel}
		}
	}
	return t, nil
}

// RecordReconcileRun stores the last scheduled run of a provider (its
// result, or the error of a failed run) for ListReconcileRuns.
func RecordReconcileRun(ctx context.Context, st store.Config, provider string, res *reconcile.Result, alert bool, runErr error, now time.Time) error {
	r := ReconcileReport(res, alert, runErr)
	r.Provider = provider
	if res == nil {
		r.RanAt = timestamppb.New(now)
	}
	doc, err := protojson.Marshal(r)
	if err != nil {
		return err
	}
	_, err = st.Put(ctx, store.Object{Kind: store.KindReconcile, ID: provider, Doc: doc}, -1)
	return err
}

// ReconcileReport is the API's form of a reconciliation.
func ReconcileReport(res *reconcile.Result, alert bool, runErr error) *adminv1.ReconcileReport {
	out := &adminv1.ReconcileReport{Alert: alert}
	if runErr != nil {
		out.Error = runErr.Error()
	}
	if res == nil {
		return out
	}
	out.Provider, out.RanAt, out.RequestsReported = res.Provider, timestamppb.New(res.RanAt), res.RequestsReported
	out.From, out.To = res.From.Format(time.DateOnly), res.To.Add(-reconcile.Day).Format(time.DateOnly)
	out.Ledger, out.Reported = totalsOut(res.Ledger), totalsOut(res.Reported)
	out.Drift, out.WorstRel = driftOut(res.Drift()), res.Worst()
	for i := range res.Cells {
		c := &res.Cells[i]
		out.Cells = append(out.Cells, &adminv1.ReconcileCell{
			Day: c.Day.Format(time.DateOnly), Model: c.Model, PublicModels: slices.Clone(c.Public),
			Ledger: totalsOut(c.Ledger), Provider: totalsOut(c.Provider), Drift: driftOut(c.Drift(res.RequestsReported)),
			RequestIds: slices.Clone(c.RequestIDs), ProviderKeyTokens: c.Keys,
		})
	}
	return out
}

func totalsOut(t reconcile.Totals) *adminv1.ReconcileTotals {
	return &adminv1.ReconcileTotals{
		Requests: t.Requests, InputTokens: t.Input, CachedInputTokens: t.CachedInput,
		CacheWriteTokens: t.CacheWrite, OutputTokens: t.Output, Cost: adminv1.NewMoney(int64(t.Cost)),
	}
}

func driftOut(d reconcile.Drift) *adminv1.ReconcileDrift {
	return &adminv1.ReconcileDrift{
		Tokens: d.Tokens, TokensRel: d.TokensRel, Requests: d.Requests, RequestsRel: d.RequestsRel,
		Cost: adminv1.NewMoney(int64(d.Cost)), CostRel: d.CostRel,
	}
}
