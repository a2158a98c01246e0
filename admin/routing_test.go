package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/admin"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// fakeStates is the router's view of the deployments.
type fakeStates map[string]admin.DeploymentState

func (f fakeStates) DeploymentStates(context.Context) map[string]admin.DeploymentState { return f }

// Deployment list and get show each deployment's routing state when the
// server runs beside a router: healthy, or cooling down until when, with the
// error rate and time to first byte.
func TestDeploymentStateShown(t *testing.T) {
	st := memstore.New()
	ctx := context.Background()
	_, err := store.Put(ctx, st, "p", &store.Provider{ID: "p", Type: store.ProviderOpenAI, BaseURL: "https://api.openai.com/v1"}, -1)
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c"} {
		_, err = store.Put(ctx, st, id, &store.Deployment{ID: id, Provider: "p", ProviderModel: "gpt-4o"}, -1)
		require.NoError(t, err)
	}
	until := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	e := newEnv(t, st, admin.WithRoutingStates(fakeStates{
		"a": {CoolingUntil: until, ErrorRate: 0.5, Latency: 120 * time.Millisecond},
		"b": {Latency: 80 * time.Millisecond, InFlight: 3},
	}))
	c := adminv1.NewDeploymentServiceClient(e.conn)
	resp, err := c.ListDeployments(e.admin(t), &adminv1.ListDeploymentsRequest{})
	require.NoError(t, err)
	got := map[string]*adminv1.DeploymentState{}
	for _, d := range resp.GetDeployments() {
		got[d.GetId()] = d.GetState()
	}
	require.Equal(t, "cooling_down", got["a"].GetHealth())
	require.True(t, until.Equal(got["a"].GetCooldownUntil().AsTime()))
	require.InDelta(t, 0.5, got["a"].GetErrorRate(), 1e-9)
	require.Equal(t, "healthy", got["b"].GetHealth())
	require.EqualValues(t, 3, got["b"].GetInFlight())
	require.Equal(t, 80*time.Millisecond, got["b"].GetLatency().AsDuration())
	require.Equal(t, "healthy", got["c"].GetHealth(), "never routed to: healthy")
	one, err := c.GetDeployment(e.admin(t), &adminv1.GetDeploymentRequest{Id: "a"})
	require.NoError(t, err)
	require.Equal(t, "cooling_down", one.GetDeployment().GetState().GetHealth())
}
