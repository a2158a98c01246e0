package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// TestMissingPrices: a deployment whose model has no price is flagged when it
// is created or updated and listed by ListMissingPrices until a price, a base
// model or --free settles it; provider naming (Vertex's model@date) finds the
// price table's name.
func TestMissingPrices(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		for id, typ := range map[string]adminv1.ProviderType{
			"vertex": adminv1.ProviderType_PROVIDER_TYPE_VERTEX,
			"azure":  adminv1.ProviderType_PROVIDER_TYPE_AZURE,
			"local":  adminv1.ProviderType_PROVIDER_TYPE_OPENAI,
		} {
			_, err := c.providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{Provider: &adminv1.Provider{Id: id, Type: typ, BaseUrl: "https://" + id + ".example.com"}})
			require.NoError(t, err)
		}
		_, err := c.prices.LoadDefaultPrices(ctx, &adminv1.LoadDefaultPricesRequest{})
		require.NoError(t, err)

		// Vertex's name of a priced model: no warning.
		created, err := c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "sonnet", Provider: "vertex", ProviderModel: "claude-sonnet-4-5@20250929"}})
		require.NoError(t, err)
		require.Empty(t, created.GetWarnings())

		// An Azure deployment name: flagged, with the names tried.
		created, err = c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "east", Provider: "azure", ProviderModel: "prod-east-4o"}})
		require.NoError(t, err)
		require.Len(t, created.GetWarnings(), 1)
		require.Contains(t, created.GetWarnings()[0], `no price for model "prod-east-4o"`)
		require.Contains(t, created.GetWarnings()[0], "--free")
		require.Contains(t, created.GetWarnings()[0], "--per-image, --per-second, --per-character or --per-search-unit", "a unit model's flags too")

		created, err = c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "llama", Provider: "local", ProviderModel: "llama-3-local"}})
		require.NoError(t, err)
		require.Len(t, created.GetWarnings(), 1)
		_, err = c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "chat", Deployments: []string{"llama", "sonnet"}}})
		require.NoError(t, err)

		missing, err := c.prices.ListMissingPrices(ctx, &adminv1.ListMissingPricesRequest{})
		require.NoError(t, err)
		require.Empty(t, cmpDiff(&adminv1.ListMissingPricesResponse{Missing: []*adminv1.MissingPrice{
			{Deployment: "east", Provider: "azure", ProviderType: adminv1.ProviderType_PROVIDER_TYPE_AZURE, ProviderModel: "prod-east-4o", NamesTried: []string{"prod-east-4o"}},
			{Deployment: "llama", Model: "chat", Provider: "local", ProviderType: adminv1.ProviderType_PROVIDER_TYPE_OPENAI, ProviderModel: "llama-3-local", NamesTried: []string{"chat", "llama-3-local"}},
		}}, missing))

		// The Azure deployment's base model, and the local one declared free.
		upd, err := c.deployments.UpdateDeployment(ctx, &adminv1.UpdateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "east", BaseModel: "gpt-4o"}, UpdateMask: mask("base_model")})
		require.NoError(t, err)
		require.Empty(t, upd.GetWarnings())
		require.Equal(t, "gpt-4o", upd.GetDeployment().GetBaseModel())
		upd, err = c.deployments.UpdateDeployment(ctx, &adminv1.UpdateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "llama", Free: true}, UpdateMask: mask("free")})
		require.NoError(t, err)
		require.Empty(t, upd.GetWarnings())
		require.True(t, upd.GetDeployment().GetFree())
		got, err := c.deployments.GetDeployment(ctx, &adminv1.GetDeploymentRequest{Id: "llama"})
		require.NoError(t, err)
		require.True(t, got.GetDeployment().GetFree(), "stored")

		missing, err = c.prices.ListMissingPrices(ctx, &adminv1.ListMissingPricesRequest{})
		require.NoError(t, err)
		require.Empty(t, missing.GetMissing())

		// Taking free away flags it again.
		upd, err = c.deployments.UpdateDeployment(ctx, &adminv1.UpdateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "llama"}, UpdateMask: mask("free")})
		require.NoError(t, err)
		require.Len(t, upd.GetWarnings(), 1)
		require.Contains(t, upd.GetWarnings()[0], `(model group "chat")`)
	})
}

// TestApplyWarnsOfMissingPrices: the Apply RPC stores a deployment's
// base_model and free and warns of every deployment left without a price.
func TestApplyWarnsOfMissingPrices(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		doc := `
providers:
  - {id: az, type: azure, base_url: 'https://x.openai.azure.com'}
deployments:
  - {id: east, provider: az, provider_model: prod-east-4o, base_model: gpt-4o}
  - {id: west, provider: az, provider_model: prod-west-4o}
  - {id: lab, provider: az, provider_model: lab-model, free: true}
prices:
  - {model: gpt-4o, input: "2.50", output: "10.00"}
`
		res, err := c.config.Apply(ctx, &adminv1.ApplyRequest{Document: doc})
		require.NoError(t, err)
		require.Len(t, res.GetWarnings(), 1, "%q", res.GetWarnings())
		require.Contains(t, res.GetWarnings()[0], `deployment "west": no price for model "prod-west-4o"`)
		got, err := c.deployments.GetDeployment(ctx, &adminv1.GetDeploymentRequest{Id: "east"})
		require.NoError(t, err)
		require.Equal(t, "gpt-4o", got.GetDeployment().GetBaseModel())
		got, err = c.deployments.GetDeployment(ctx, &adminv1.GetDeploymentRequest{Id: "lab"})
		require.NoError(t, err)
		require.True(t, got.GetDeployment().GetFree())
	})
}
