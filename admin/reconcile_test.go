package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/tollgate-ai/tollgate/admin"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/reconcile"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// The admin credential is sealed, write-only, kept out of the audit log; a
// recorded run is listed for viewers; reconciling is for admins.
func TestReconcileCredentialAndRuns(t *testing.T) {
	st := memstore.New()
	e := newEnv(t, st)
	ctx := e.admin(t)
	providers := adminv1.NewProviderServiceClient(e.conn)
	resp, err := providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{
		Provider:   &adminv1.Provider{Id: "oa", Type: adminv1.ProviderType_PROVIDER_TYPE_OPENAI, BaseUrl: "https://api.openai.com/v1"},
		Credential: "sk-api", AdminCredential: "sk-admin-secret",
	})
	require.NoError(t, err)
	require.True(t, resp.GetProvider().GetHasAdminCredential())
	p, _, err := store.Get[store.Provider](context.Background(), st, "oa")
	require.NoError(t, err)
	require.NotContains(t, string(p.AdminCredential), "sk-admin-secret", "sealed at rest")
	opened, err := e.sealer.Open(p.AdminCredential)
	require.NoError(t, err)
	require.Equal(t, "sk-admin-secret", string(opened))
	audit, err := st.ListAudit(context.Background(), 0, 100)
	require.NoError(t, err)
	for _, a := range audit {
		require.NotContains(t, a.Detail, "sk-admin-secret")
	}

	// The scheduled job's targets: providers with an admin credential only.
	_, err = providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{
		Provider: &adminv1.Provider{Id: "plain", Type: adminv1.ProviderType_PROVIDER_TYPE_OPENAI, BaseUrl: "https://api.openai.com/v1"},
	})
	require.NoError(t, err)
	targets, err := admin.ReconcileTargets(context.Background(), st, e.sealer)
	require.NoError(t, err)
	require.Len(t, targets, 1)
	require.Equal(t, "oa", targets[0].Provider)

	// Clearing it.
	up, err := providers.UpdateProvider(ctx, &adminv1.UpdateProviderRequest{Provider: &adminv1.Provider{Id: "oa"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"admin_credential"}}})
	require.NoError(t, err)
	require.False(t, up.GetProvider().GetHasAdminCredential())

	// A recorded run, and a failed one.
	day := time.Date(2026, 3, 13, 0, 0, 0, 0, time.UTC)
	res := &reconcile.Result{
		Provider: "oa", From: day, To: day.Add(reconcile.Day), RanAt: day.Add(30 * time.Hour), RequestsReported: true,
		Cells:  []reconcile.Cell{{Day: day, Model: "gpt-4o", Ledger: reconcile.Totals{Requests: 3, Output: 10, Cost: 100}, Provider: reconcile.Totals{Requests: 4, Output: 12, Cost: 150}, RequestIDs: []string{"a", "b", "c"}}},
		Ledger: reconcile.Totals{Requests: 3, Output: 10, Cost: 100}, Reported: reconcile.Totals{Requests: 4, Output: 12, Cost: 150},
	}
	require.NoError(t, admin.RecordReconcileRun(context.Background(), st, "oa", res, true, nil, day))
	require.NoError(t, admin.RecordReconcileRun(context.Background(), st, "other", nil, false, errors.New("provider down"), day))

	viewer := as(t, e.credential(t, adminv1.AdminRole_ADMIN_ROLE_VIEWER, ""))
	client := adminv1.NewReconcileServiceClient(e.conn)
	runs, err := client.ListReconcileRuns(viewer, &adminv1.ListReconcileRunsRequest{})
	require.NoError(t, err)
	require.Len(t, runs.GetRuns(), 2)
	got := runs.GetRuns()[0]
	require.Equal(t, "oa", got.GetProvider())
	require.True(t, got.GetAlert())
	require.Equal(t, "2026-03-13", got.GetFrom())
	require.Equal(t, "2026-03-13", got.GetTo())
	require.InDelta(t, 1.0/3, got.GetWorstRel(), 1e-9, "cost 50 of 150")
	require.Equal(t, int64(50), got.GetCells()[0].GetDrift().GetCost().GetNanoUsd())
	require.Equal(t, []string{"a", "b", "c"}, got.GetCells()[0].GetRequestIds())
	require.Equal(t, "provider down", runs.GetRuns()[1].GetError())

	_, err = client.Reconcile(viewer, &adminv1.ReconcileRequest{Provider: "oa", From: "2026-03-13"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = client.Reconcile(ctx, &adminv1.ReconcileRequest{Provider: "plain", From: "2026-03-13"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
}

// apply seals admin_credential from the environment, keeps it when the
// document leaves it out, and changes nothing when it is the same.
func TestApplyAdminCredential(t *testing.T) {
	st := memstore.New()
	sealer := testSealer(t)
	ctx := context.Background()
	t.Setenv("TEST_RECON_ADMIN", "sk-admin-applied")
	with := []byte("providers:\n  - id: oa\n    type: openai\n    base_url: https://api.openai.com/v1\n    admin_credential: ${TEST_RECON_ADMIN}\n")
	_, err := admin.Apply(ctx, st, sealer, with, "ops")
	require.NoError(t, err)
	p, v1, err := store.Get[store.Provider](ctx, st, "oa")
	require.NoError(t, err)
	opened, err := sealer.Open(p.AdminCredential)
	require.NoError(t, err)
	require.Equal(t, "sk-admin-applied", string(opened))

	_, err = admin.Apply(ctx, st, sealer, with, "ops")
	require.NoError(t, err)
	_, v2, err := store.Get[store.Provider](ctx, st, "oa")
	require.NoError(t, err)
	require.Equal(t, v1, v2, "the same credential again: unchanged")

	without := []byte("providers:\n  - id: oa\n    type: openai\n    base_url: https://api.openai.com/v1\n")
	_, err = admin.Apply(ctx, st, sealer, without, "ops")
	require.NoError(t, err)
	p, _, err = store.Get[store.Provider](ctx, st, "oa")
	require.NoError(t, err)
	require.NotEmpty(t, p.AdminCredential, "left out: kept")
}
