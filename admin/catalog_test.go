package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tollgate-ai/tollgate/admin"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

func TestProviderCredentialIsWriteOnly(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		const cred = "sk-very-secret-credential"
		created, err := c.providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{Provider: &adminv1.Provider{
			Id: "openai", Type: adminv1.ProviderType_PROVIDER_TYPE_OPENAI, BaseUrl: "https://api.openai.com/v1",
		}, Credential: cred})
		require.NoError(t, err)
		require.Empty(t, cmpDiff(&adminv1.Provider{
			Id: "openai", Type: adminv1.ProviderType_PROVIDER_TYPE_OPENAI, BaseUrl: "https://api.openai.com/v1", HasCredential: true,
		}, created.GetProvider()))

		// Stored sealed: opening it with the master key gives the credential back.
		p, _, err := store.Get[store.Provider](ctx, e.st, "openai")
		require.NoError(t, err)
		require.NotContains(t, string(p.Credential), cred)
		plain, err := e.sealer.Open(p.Credential)
		require.NoError(t, err)
		require.Equal(t, cred, string(plain))

		// Never in the audit log.
		entries, err := e.st.ListAudit(ctx, 0, 0)
		require.NoError(t, err)
		for _, a := range entries {
			require.NotContains(t, a.Detail, cred)
		}

		upd, err := c.providers.UpdateProvider(ctx, &adminv1.UpdateProviderRequest{
			Provider: &adminv1.Provider{Id: "openai", BaseUrl: "https://proxy.example.com/v1"}, UpdateMask: mask("base_url"),
		})
		require.NoError(t, err)
		require.Equal(t, "https://proxy.example.com/v1", upd.GetProvider().GetBaseUrl())
		require.True(t, upd.GetProvider().GetHasCredential(), "credential kept when not in the mask")

		upd, err = c.providers.UpdateProvider(ctx, &adminv1.UpdateProviderRequest{Provider: &adminv1.Provider{Id: "openai"}, UpdateMask: mask("credential")})
		require.NoError(t, err)
		require.False(t, upd.GetProvider().GetHasCredential(), "an empty credential in the mask clears it")

		upd, err = c.providers.UpdateProvider(ctx, &adminv1.UpdateProviderRequest{Provider: &adminv1.Provider{Id: "openai", ResponsesApi: true}, UpdateMask: mask("responses_api")})
		require.NoError(t, err, "provider update --responses-api")
		require.True(t, upd.GetProvider().GetResponsesApi())

		list, err := c.providers.ListProviders(ctx, &adminv1.ListProvidersRequest{})
		require.NoError(t, err)
		require.Len(t, list.GetProviders(), 1)

		_, err = c.providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{Provider: &adminv1.Provider{Id: "x", Type: adminv1.ProviderType_PROVIDER_TYPE_OPENAI, BaseUrl: "ftp://x"}})
		requireCode(t, codes.InvalidArgument, err)
		require.ErrorContains(t, err, "provider.base_url")
		_, err = c.providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{Provider: &adminv1.Provider{Id: "x", BaseUrl: "https://x"}})
		require.ErrorContains(t, err, "provider.type")

		_, err = c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "d", Provider: "openai", ProviderModel: "gpt-4o"}})
		require.NoError(t, err)
		_, err = c.providers.DeleteProvider(ctx, &adminv1.DeleteProviderRequest{Id: "openai"})
		requireCode(t, codes.InvalidArgument, err)
		require.ErrorContains(t, err, `deployment "d"`)
	})
}

func TestCredentialNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	st := memstore.New()
	_, _, err := admin.Bootstrap(context.Background(), st, "tga-bootstrap-secret-for-test")
	require.NoError(t, err)
	srv := admin.New(st, testSealer(t), admin.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	g := grpc.NewServer(admin.ServerOptions(srv)...)
	srv.Register(g)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	_, err = adminv1.NewProviderServiceClient(conn).CreateProvider(as(t, "tga-bootstrap-secret-for-test"), &adminv1.CreateProviderRequest{
		Provider: &adminv1.Provider{Id: "p", Type: adminv1.ProviderType_PROVIDER_TYPE_ANTHROPIC, BaseUrl: "https://api.anthropic.com/v1"}, Credential: "sk-ant-logged?",
	})
	require.NoError(t, err)
	require.Contains(t, logs.String(), "CreateProvider", "the call is logged")
	require.NotContains(t, logs.String(), "sk-ant-logged?")
	require.NotContains(t, logs.String(), "tga-bootstrap-secret-for-test")
}

func TestDeploymentsAndModels(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		_, err := c.providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{Provider: &adminv1.Provider{
			Id: "az", Type: adminv1.ProviderType_PROVIDER_TYPE_AZURE, BaseUrl: "https://acme.openai.azure.com/openai", ApiVersion: "2024-10-21",
		}})
		require.NoError(t, err)
		_, err = c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "d1", Provider: "ghost", ProviderModel: "m"}})
		requireCode(t, codes.NotFound, err)
		d, err := c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "d1", Provider: "az", ProviderModel: "gpt4o-prod", Weight: 2, Rpm: 100, Tpm: 50000}})
		require.NoError(t, err)
		require.Empty(t, cmpDiff(&adminv1.Deployment{Id: "d1", Provider: "az", ProviderModel: "gpt4o-prod", Weight: 2, Rpm: 100, Tpm: 50000}, d.GetDeployment()))
		_, err = c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "d2", Provider: "az", ProviderModel: "gpt4o-eu"}})
		require.NoError(t, err)
		ud, err := c.deployments.UpdateDeployment(ctx, &adminv1.UpdateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "d2", Tpm: 7}, UpdateMask: mask("tpm")})
		require.NoError(t, err)
		require.EqualValues(t, 7, ud.GetDeployment().GetTpm())
		require.Equal(t, "gpt4o-eu", ud.GetDeployment().GetProviderModel())
		gd, err := c.deployments.GetDeployment(ctx, &adminv1.GetDeploymentRequest{Id: "d2"})
		require.NoError(t, err)
		require.EqualValues(t, 7, gd.GetDeployment().GetTpm())
		ld, err := c.deployments.ListDeployments(ctx, &adminv1.ListDeploymentsRequest{Provider: "az"})
		require.NoError(t, err)
		require.Len(t, ld.GetDeployments(), 2)

		_, err = c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "gpt-4o", Deployments: []string{"d1", "nope"}}})
		requireCode(t, codes.NotFound, err)
		require.ErrorContains(t, err, "model.deployments[1]")
		_, err = c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "gpt-4o", Deployments: []string{"d1", "d1"}}})
		requireCode(t, codes.InvalidArgument, err)
		m, err := c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "gpt-4o", Deployments: []string{"d1"}, DefaultMaxTokens: 4096}})
		require.NoError(t, err)
		require.Empty(t, cmpDiff(&adminv1.Model{Id: "gpt-4o", Deployments: []string{"d1"}, DefaultMaxTokens: 4096}, m.GetModel()))
		um, err := c.models.UpdateModel(ctx, &adminv1.UpdateModelRequest{Model: &adminv1.Model{Id: "gpt-4o", Deployments: []string{"d1", "d2"}}, UpdateMask: mask("deployments")})
		require.NoError(t, err)
		require.Equal(t, []string{"d1", "d2"}, um.GetModel().GetDeployments())
		require.EqualValues(t, 4096, um.GetModel().GetDefaultMaxTokens())
		gm, err := c.models.GetModel(ctx, &adminv1.GetModelRequest{Id: "gpt-4o"})
		require.NoError(t, err)
		require.Equal(t, []string{"d1", "d2"}, gm.GetModel().GetDeployments())
		lm, err := c.models.ListModels(ctx, &adminv1.ListModelsRequest{})
		require.NoError(t, err)
		require.Len(t, lm.GetModels(), 1)

		_, err = c.deployments.DeleteDeployment(ctx, &adminv1.DeleteDeploymentRequest{Id: "d2"})
		requireCode(t, codes.InvalidArgument, err)
		_, err = c.models.DeleteModel(ctx, &adminv1.DeleteModelRequest{Id: "gpt-4o"})
		require.NoError(t, err)
		_, err = c.deployments.DeleteDeployment(ctx, &adminv1.DeleteDeploymentRequest{Id: "d2"})
		require.NoError(t, err)
		_, err = c.models.GetModel(ctx, &adminv1.GetModelRequest{Id: "gpt-4o"})
		requireCode(t, codes.NotFound, err)
	})
}

func TestRoutingConfiguration(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		_, err := c.providers.CreateProvider(ctx, &adminv1.CreateProviderRequest{Provider: &adminv1.Provider{
			Id: "oa", Type: adminv1.ProviderType_PROVIDER_TYPE_OPENAI, BaseUrl: "https://api.openai.com/v1",
		}})
		require.NoError(t, err)
		d, err := c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{
			Id: "a", Provider: "oa", ProviderModel: "gpt-4o", Cooldown: durationpb.New(30 * time.Second), AllowedFails: 3,
			Timeout: durationpb.New(time.Minute), FirstByteTimeout: durationpb.New(10 * time.Second),
		}})
		require.NoError(t, err)
		require.Equal(t, 30*time.Second, d.GetDeployment().GetCooldown().AsDuration())
		require.EqualValues(t, 3, d.GetDeployment().GetAllowedFails())
		_, err = c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{
			Id: "b", Provider: "oa", ProviderModel: "gpt-4o", Timeout: durationpb.New(time.Second), FirstByteTimeout: durationpb.New(time.Minute),
		}})
		requireCode(t, codes.InvalidArgument, err)
		_, err = c.deployments.CreateDeployment(ctx, &adminv1.CreateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "b", Provider: "oa", ProviderModel: "gpt-4o", AllowedFails: -1}})
		requireCode(t, codes.InvalidArgument, err)
		ud, err := c.deployments.UpdateDeployment(ctx, &adminv1.UpdateDeploymentRequest{Deployment: &adminv1.Deployment{Id: "a", Cooldown: durationpb.New(5 * time.Second)}, UpdateMask: mask("cooldown")})
		require.NoError(t, err)
		require.Equal(t, 5*time.Second, ud.GetDeployment().GetCooldown().AsDuration())
		require.Equal(t, time.Minute, ud.GetDeployment().GetTimeout().AsDuration(), "not in the mask: kept")

		_, err = c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "big", Deployments: []string{"a"}}})
		require.NoError(t, err)
		_, err = c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "m", Deployments: []string{"a"}, Routing: "fastest"}})
		requireCode(t, codes.InvalidArgument, err)
		_, err = c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "m", Deployments: []string{"a"}, Fallbacks: []string{"ghost"}}})
		requireCode(t, codes.NotFound, err)
		_, err = c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{Id: "m", Deployments: []string{"a"}, Fallbacks: []string{"m"}}})
		requireCode(t, codes.InvalidArgument, err)
		zero := int32(0)
		m, err := c.models.CreateModel(ctx, &adminv1.CreateModelRequest{Model: &adminv1.Model{
			Id: "m", Deployments: []string{"a"}, Routing: "least-busy", Retries: &zero, Fallbacks: []string{"big"}, ContextWindowFallbacks: []string{"big"},
		}})
		require.NoError(t, err)
		require.Equal(t, "least-busy", m.GetModel().GetRouting())
		require.NotNil(t, m.GetModel().Retries)
		require.EqualValues(t, 0, m.GetModel().GetRetries())
		require.Equal(t, []string{"big"}, m.GetModel().GetContextWindowFallbacks())
		um, err := c.models.UpdateModel(ctx, &adminv1.UpdateModelRequest{Model: &adminv1.Model{Id: "m", Routing: "latency", ContentPolicyFallbacks: []string{"big"}}, UpdateMask: mask("routing", "content_policy_fallbacks")})
		require.NoError(t, err)
		require.Equal(t, "latency", um.GetModel().GetRouting())
		require.Equal(t, []string{"big"}, um.GetModel().GetContentPolicyFallbacks())
		require.Equal(t, []string{"big"}, um.GetModel().GetFallbacks(), "not in the mask: kept")
	})
}

func TestPrices(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		c := clients(e)
		ctx := e.admin(t)
		set, err := c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{Price: &adminv1.Price{
			Model: "my-model", Input: &adminv1.Money{Dollars: "0.15"}, CachedInput: &adminv1.Money{Dollars: "0.075"},
			Output: &adminv1.Money{NanoUsd: 600_000_000},
		}})
		require.NoError(t, err)
		require.Empty(t, cmpDiff(&adminv1.Price{
			Model: "my-model", Input: &adminv1.Money{NanoUsd: 150_000_000, Dollars: "0.15"},
			CachedInput: &adminv1.Money{NanoUsd: 75_000_000, Dollars: "0.075"}, Output: &adminv1.Money{NanoUsd: 600_000_000, Dollars: "0.6"},
		}, set.GetPrice()))
		p, _, err := store.Get[store.ModelPrice](ctx, e.st, "my-model")
		require.NoError(t, err)
		require.EqualValues(t, 150_000_000, p.Price.Input)
		require.EqualValues(t, 75_000_000, p.Price.CachedInput)

		_, err = c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{Price: &adminv1.Price{Model: "x", Input: &adminv1.Money{Dollars: "-1"}, Output: &adminv1.Money{}}})
		requireCode(t, codes.InvalidArgument, err)
		require.ErrorContains(t, err, "price.input")

		// Defaults keep prices already set unless overwrite.
		_, err = c.prices.SetPrice(ctx, &adminv1.SetPriceRequest{Price: &adminv1.Price{Model: "gpt-4o", Input: &adminv1.Money{Dollars: "1"}, Output: &adminv1.Money{Dollars: "1"}}})
		require.NoError(t, err)
		loaded, err := c.prices.LoadDefaultPrices(ctx, &adminv1.LoadDefaultPricesRequest{})
		require.NoError(t, err)
		require.NotContains(t, loaded.GetModels(), "gpt-4o")
		require.Contains(t, loaded.GetModels(), "claude-sonnet-4-5")
		g, err := c.prices.GetPrice(ctx, &adminv1.GetPriceRequest{Model: "gpt-4o"})
		require.NoError(t, err)
		require.Equal(t, "1", g.GetPrice().GetInput().GetDollars())
		loaded, err = c.prices.LoadDefaultPrices(ctx, &adminv1.LoadDefaultPricesRequest{Overwrite: true})
		require.NoError(t, err)
		require.Contains(t, loaded.GetModels(), "gpt-4o")
		g, err = c.prices.GetPrice(ctx, &adminv1.GetPriceRequest{Model: "gpt-4o"})
		require.NoError(t, err)
		require.Equal(t, "2.5", g.GetPrice().GetInput().GetDollars())
		require.Equal(t, "10", g.GetPrice().GetOutput().GetDollars())

		all, err := c.prices.ListPrices(ctx, &adminv1.ListPricesRequest{PageSize: 1000})
		require.NoError(t, err)
		require.Len(t, all.GetPrices(), len(mustDefaults(t))+1)
		_, err = c.prices.DeletePrice(ctx, &adminv1.DeletePriceRequest{Model: "my-model"})
		require.NoError(t, err)
		_, err = c.prices.GetPrice(ctx, &adminv1.GetPriceRequest{Model: "my-model"})
		requireCode(t, codes.NotFound, err)
	})
}

func mustDefaults(t *testing.T) []store.ModelPrice {
	t.Helper()
	d, err := admin.DefaultPrices()
	require.NoError(t, err)
	return d
}

// TestDefaultPrices pins a few of the shipped prices (dollars per million
// tokens, stored exactly in nano-USD).
func TestDefaultPrices(t *testing.T) {
	byModel := map[string]store.ModelPrice{}
	for _, p := range mustDefaults(t) {
		byModel[p.ID] = p
	}
	for _, m := range []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1", "text-embedding-3-small", "text-embedding-3-large"} {
		require.Contains(t, byModel, m)
	}
	b, err := json.Marshal(byModel["claude-haiku-4-5"].Price)
	require.NoError(t, err)
	require.JSONEq(t, `{"input":1000000000,"cached_input":100000000,"cache_write":1250000000,"output":5000000000}`, string(b))
	require.EqualValues(t, 75_000_000, byModel["gpt-4o-mini"].Price.CachedInput)
	require.EqualValues(t, 20_000_000, byModel["text-embedding-3-small"].Price.Input)
	for id := range byModel {
		require.False(t, strings.ContainsAny(id, " \t"), id)
	}
}
