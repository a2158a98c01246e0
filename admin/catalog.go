package admin

import (
	"context"
	"fmt"
	"slices"

	"github.com/tollgate-ai/tollgate/internal/secret"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// Providers, deployments and model groups.

var (
	providerTypesIn = map[adminv1.ProviderType]store.ProviderType{
		adminv1.ProviderType_PROVIDER_TYPE_OPENAI:    store.ProviderOpenAI,
		adminv1.ProviderType_PROVIDER_TYPE_AZURE:     store.ProviderAzure,
		adminv1.ProviderType_PROVIDER_TYPE_ANTHROPIC: store.ProviderAnthropic,
		adminv1.ProviderType_PROVIDER_TYPE_GEMINI:    store.ProviderGemini,
		adminv1.ProviderType_PROVIDER_TYPE_BEDROCK:   store.ProviderBedrock,
		adminv1.ProviderType_PROVIDER_TYPE_VERTEX:    store.ProviderVertex,
	}
	providerTypesOut = inverse(providerTypesIn)
)

func providerView(p *store.Provider) *adminv1.Provider {
	out := &adminv1.Provider{
		Id: p.ID, Type: providerTypesOut[p.Type], BaseUrl: p.BaseURL, ApiVersion: p.APIVersion,
		HasCredential: len(p.Credential) > 0, ResponsesApi: p.ResponsesAPI,
		HasAdminCredential: len(p.AdminCredential) > 0,
	}
	if p.PricePerCall > 0 {
		out.PricePerCall = moneyOut(p.PricePerCall)
	}
	return out
}

// providerAudit is what the audit log keeps of a provider: never the credential.
func providerAudit(p *store.Provider) any {
	return map[string]any{
		"type": p.Type, "base_url": p.BaseURL, "api_version": p.APIVersion, "has_credential": len(p.Credential) > 0,
		"responses_api": p.ResponsesAPI, "has_admin_credential": len(p.AdminCredential) > 0, "price_per_call": p.PricePerCall,
	}
}

// seal encrypts a provider credential ("" stays empty).
func (s *Server) seal(credential string) ([]byte, error) {
	return sealWith(s.sealer, credential)
}

func sealWith(sealer *secret.Sealer, credential string) ([]byte, error) {
	if credential == "" {
		return nil, nil
	}
	if sealer == nil {
		return nil, ErrNoSealer
	}
	return sealer.Seal([]byte(credential)), nil
}

// CreateProvider creates a provider, sealing its credential.
func (s *Server) CreateProvider(ctx context.Context, req *adminv1.CreateProviderRequest) (*adminv1.CreateProviderResponse, error) {
	in := req.GetProvider()
	sealed, err := s.seal(req.GetCredential())
	p := store.Provider{ID: in.GetId(), Type: providerTypesIn[in.GetType()], BaseURL: in.GetBaseUrl(), APIVersion: in.GetApiVersion(), Credential: sealed, ResponsesAPI: in.GetResponsesApi()}
	if err == nil {
		p.AdminCredential, err = s.seal(req.GetAdminCredential())
	}
	if err == nil && in.GetPricePerCall() != nil {
		p.PricePerCall, err = moneyIn("provider.price_per_call", in.GetPricePerCall())
	}
	if err == nil {
		err = create(ctx, s.st, p.ID, &p)
	}
	if err == nil {
		err = s.record(ctx, "provider.create", store.KindProvider, p.ID, providerAudit(&p))
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateProviderResponse{Provider: providerView(&p)}, nil
}

// GetProvider returns a provider, without its credential.
func (s *Server) GetProvider(ctx context.Context, req *adminv1.GetProviderRequest) (*adminv1.GetProviderResponse, error) {
	p, _, err := get[store.Provider](ctx, s.st, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetProviderResponse{Provider: providerView(&p)}, nil
}

// ListProviders lists providers, without their credentials.
func (s *Server) ListProviders(ctx context.Context, req *adminv1.ListProvidersRequest) (*adminv1.ListProvidersResponse, error) {
	ps, next, err := listPage[store.Provider](ctx, s.st, req.GetPageToken(), req.GetPageSize(), nil)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListProvidersResponse{NextPageToken: next}
	for i := range ps {
		out.Providers = append(out.Providers, providerView(&ps[i]))
	}
	return out, nil
}

// UpdateProvider changes the fields named by the update mask.
func (s *Server) UpdateProvider(ctx context.Context, req *adminv1.UpdateProviderRequest) (*adminv1.UpdateProviderResponse, error) {
	in, paths := req.GetProvider(), req.GetUpdateMask().GetPaths()
	var sealed, sealedAdmin []byte
	var err error
	if hasPath(paths, "credential") {
		sealed, err = s.seal(req.GetCredential())
	}
	if err == nil && hasPath(paths, "admin_credential") {
		sealedAdmin, err = s.seal(req.GetAdminCredential())
	}
	if err == nil && hasPath(paths, "type") && in.GetType() == adminv1.ProviderType_PROVIDER_TYPE_UNSPECIFIED {
		err = errorf(ErrInvalid, "provider.type: is required (openai, azure or anthropic)")
	}
	if err == nil && hasPath(paths, "base_url") && in.GetBaseUrl() == "" {
		err = errorf(ErrInvalid, "provider.base_url: is required")
	}
	var p store.Provider
	if err == nil {
		p, err = update(ctx, s.st, in.GetId(), func(p *store.Provider) error {
			if hasPath(paths, "type") {
				p.Type = providerTypesIn[in.GetType()]
			}
			if hasPath(paths, "base_url") {
				p.BaseURL = in.GetBaseUrl()
			}
			if hasPath(paths, "api_version") {
				p.APIVersion = in.GetApiVersion()
			}
			if hasPath(paths, "responses_api") {
				p.ResponsesAPI = in.GetResponsesApi()
			}
			if hasPath(paths, "price_per_call") {
				var err error
				if p.PricePerCall, err = moneyIn("provider.price_per_call", in.GetPricePerCall()); err != nil {
					return err
				}
			}
			if hasPath(paths, "credential") {
				p.Credential = sealed
			}
			if hasPath(paths, "admin_credential") {
				p.AdminCredential = sealedAdmin
			}
			return nil
		})
	}
	if err == nil {
		err = s.record(ctx, "provider.update", store.KindProvider, p.ID, map[string]any{"fields": paths, "provider": providerAudit(&p)})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateProviderResponse{Provider: providerView(&p)}, nil
}

// DeleteProvider deletes a provider no deployment uses.
func (s *Server) DeleteProvider(ctx context.Context, req *adminv1.DeleteProviderRequest) (*adminv1.DeleteProviderResponse, error) {
	id := req.GetId()
	ds, _, err := listPage(ctx, s.st, "", 1, func(d *store.Deployment) bool { return d.Provider == id })
	if err == nil && len(ds) > 0 {
		err = errorf(ErrInvalid, "provider %q is used by deployment %q: delete the deployments first", id, ds[0].ID)
	}
	if err == nil {
		err = remove[store.Provider](ctx, s.st, id)
	}
	if err == nil {
		err = s.record(ctx, "provider.delete", store.KindProvider, id, nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteProviderResponse{}, nil
}

func deploymentView(d *store.Deployment) *adminv1.Deployment {
	return deploymentPolicyView(&adminv1.Deployment{
		Id: d.ID, Provider: d.Provider, ProviderModel: d.ProviderModel, Weight: int32(d.Weight), Rpm: d.RPM, Tpm: d.TPM,
		BaseModel: d.BaseModel, Free: d.Free,
	}, &d.DeploymentPolicy)
}

// CreateDeployment creates a deployment of an existing provider.
func (s *Server) CreateDeployment(ctx context.Context, req *adminv1.CreateDeploymentRequest) (*adminv1.CreateDeploymentResponse, error) {
	in := req.GetDeployment()
	d := store.Deployment{ID: in.GetId(), Provider: in.GetProvider(), ProviderModel: in.GetProviderModel(), Weight: int(in.GetWeight()), RPM: in.GetRpm(), TPM: in.GetTpm(), DeploymentPolicy: deploymentPolicyOf(in)}
	d.BaseModel, d.Free = in.GetBaseModel(), in.GetFree()
	err := policyError(d.Validate())
	if err == nil {
		_, _, err = get[store.Provider](ctx, s.st, d.Provider)
	}
	if err == nil {
		err = create(ctx, s.st, d.ID, &d)
	}
	if err == nil {
		err = s.record(ctx, "deployment.create", store.KindDeployment, d.ID, d)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateDeploymentResponse{Deployment: deploymentView(&d), Warnings: s.priceWarnings(ctx, d.ID)}, nil
}

// GetDeployment returns a deployment.
func (s *Server) GetDeployment(ctx context.Context, req *adminv1.GetDeploymentRequest) (*adminv1.GetDeploymentResponse, error) {
	d, _, err := get[store.Deployment](ctx, s.st, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.GetDeploymentResponse{Deployment: deploymentView(&d)}
	s.stateView(ctx, []*adminv1.Deployment{out.Deployment})
	return out, nil
}

// ListDeployments lists deployments, optionally of one provider.
func (s *Server) ListDeployments(ctx context.Context, req *adminv1.ListDeploymentsRequest) (*adminv1.ListDeploymentsResponse, error) {
	ds, next, err := listPage(ctx, s.st, req.GetPageToken(), req.GetPageSize(), func(d *store.Deployment) bool {
		return req.GetProvider() == "" || d.Provider == req.GetProvider()
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListDeploymentsResponse{NextPageToken: next}
	for i := range ds {
		out.Deployments = append(out.Deployments, deploymentView(&ds[i]))
	}
	s.stateView(ctx, out.Deployments)
	return out, nil
}

// UpdateDeployment changes the fields named by the update mask.
func (s *Server) UpdateDeployment(ctx context.Context, req *adminv1.UpdateDeploymentRequest) (*adminv1.UpdateDeploymentResponse, error) {
	in, paths := req.GetDeployment(), req.GetUpdateMask().GetPaths()
	var err error
	if hasPath(paths, "provider") {
		_, _, err = get[store.Provider](ctx, s.st, in.GetProvider())
	}
	if err == nil && hasPath(paths, "provider_model") && in.GetProviderModel() == "" {
		err = errorf(ErrInvalid, "deployment.provider_model: is required")
	}
	var d store.Deployment
	if err == nil {
		d, err = update(ctx, s.st, in.GetId(), func(d *store.Deployment) error {
			if hasPath(paths, "provider") {
				d.Provider = in.GetProvider()
			}
			if hasPath(paths, "provider_model") {
				d.ProviderModel = in.GetProviderModel()
			}
			if hasPath(paths, "weight") {
				d.Weight = int(in.GetWeight())
			}
			if hasPath(paths, "rpm") {
				d.RPM = in.GetRpm()
			}
			if hasPath(paths, "tpm") {
				d.TPM = in.GetTpm()
			}
			if hasPath(paths, "base_model") {
				d.BaseModel = in.GetBaseModel()
			}
			if hasPath(paths, "free") {
				d.Free = in.GetFree()
			}
			return updateDeploymentPolicy(&d.DeploymentPolicy, in, paths)
		})
	}
	if err == nil {
		err = s.record(ctx, "deployment.update", store.KindDeployment, d.ID, map[string]any{"fields": paths, "deployment": d})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateDeploymentResponse{Deployment: deploymentView(&d), Warnings: s.priceWarnings(ctx, d.ID)}, nil
}

// DeleteDeployment deletes a deployment no model group uses.
func (s *Server) DeleteDeployment(ctx context.Context, req *adminv1.DeleteDeploymentRequest) (*adminv1.DeleteDeploymentResponse, error) {
	id := req.GetId()
	ms, _, err := listPage(ctx, s.st, "", 1, func(m *store.ModelGroup) bool { return slices.Contains(m.Deployments, id) })
	if err == nil && len(ms) > 0 {
		err = errorf(ErrInvalid, "deployment %q is used by model %q: remove it from the model first", id, ms[0].ID)
	}
	if err == nil {
		err = remove[store.Deployment](ctx, s.st, id)
	}
	if err == nil {
		err = s.record(ctx, "deployment.delete", store.KindDeployment, id, nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteDeploymentResponse{}, nil
}

func modelView(m *store.ModelGroup) *adminv1.Model {
	return groupRoutingView(&adminv1.Model{
		Id: m.ID, Deployments: slices.Clone(m.Deployments), DefaultMaxTokens: m.DefaultMaxTokens, Aliases: slices.Clone(m.Aliases),
		UpstreamModelFromRequest: m.UpstreamModelFromRequest, Cache: modelCacheView(m.Cache),
	}, &m.GroupRouting)
}

// checkDeployments fails when a deployment does not exist or is listed twice.
func (s *Server) checkDeployments(ctx context.Context, ids []string) error {
	for i, id := range ids {
		if slices.Contains(ids[:i], id) {
			return errorf(ErrInvalid, "model.deployments: %q is listed twice", id)
		}
		if _, _, err := get[store.Deployment](ctx, s.st, id); err != nil {
			return fmt.Errorf("model.deployments[%d]: %w", i, err)
		}
	}
	return nil
}

// CreateModel creates a model group.
func (s *Server) CreateModel(ctx context.Context, req *adminv1.CreateModelRequest) (*adminv1.CreateModelResponse, error) {
	in := req.GetModel()
	m := store.ModelGroup{
		ID: in.GetId(), Deployments: slices.Clone(in.GetDeployments()), DefaultMaxTokens: in.GetDefaultMaxTokens(), Aliases: slices.Clone(in.GetAliases()),
		UpstreamModelFromRequest: in.GetUpstreamModelFromRequest(), GroupRouting: groupRoutingOf(in),
	}
	if m.Deployments == nil {
		m.Deployments = []string{}
	}
	err := s.checkDeployments(ctx, m.Deployments)
	if err == nil {
		err = s.checkFallbacks(ctx, m.ID, &m.GroupRouting)
	}
	if err == nil {
		err = checkAliases(ctx, s.st, m)
	}
	if err == nil {
		m.Cache, err = modelCacheOf(in.GetCache())
	}
	if err == nil {
		err = s.checkCacheModel(ctx, m.Cache)
	}
	if err == nil {
		err = create(ctx, s.st, m.ID, &m)
	}
	if err == nil {
		err = s.record(ctx, "model.create", store.KindModel, m.ID, m)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.CreateModelResponse{Model: modelView(&m)}, nil
}

// GetModel returns a model group.
func (s *Server) GetModel(ctx context.Context, req *adminv1.GetModelRequest) (*adminv1.GetModelResponse, error) {
	m, _, err := get[store.ModelGroup](ctx, s.st, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.GetModelResponse{Model: modelView(&m)}, nil
}

// ListModels lists model groups.
func (s *Server) ListModels(ctx context.Context, req *adminv1.ListModelsRequest) (*adminv1.ListModelsResponse, error) {
	ms, next, err := listPage[store.ModelGroup](ctx, s.st, req.GetPageToken(), req.GetPageSize(), nil)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &adminv1.ListModelsResponse{NextPageToken: next}
	for i := range ms {
		out.Models = append(out.Models, modelView(&ms[i]))
	}
	return out, nil
}

// UpdateModel changes the fields named by the update mask.
func (s *Server) UpdateModel(ctx context.Context, req *adminv1.UpdateModelRequest) (*adminv1.UpdateModelResponse, error) {
	in, paths := req.GetModel(), req.GetUpdateMask().GetPaths()
	var err error
	if hasPath(paths, "deployments") {
		err = s.checkDeployments(ctx, in.GetDeployments())
	}
	var mc *store.ModelCache
	if err == nil && hasPath(paths, "cache") {
		mc, err = modelCacheOf(in.GetCache())
		if err == nil {
			err = s.checkCacheModel(ctx, mc)
		}
	}
	var m store.ModelGroup
	if err == nil {
		m, err = update(ctx, s.st, in.GetId(), func(m *store.ModelGroup) error {
			if hasPath(paths, "deployments") {
				m.Deployments = append([]string{}, in.GetDeployments()...)
			}
			if hasPath(paths, "default_max_tokens") {
				m.DefaultMaxTokens = in.GetDefaultMaxTokens()
			}
			if hasPath(paths, "upstream_model_from_request") {
				m.UpstreamModelFromRequest = in.GetUpstreamModelFromRequest()
			}
			if hasPath(paths, "aliases") {
				m.Aliases = slices.Clone(in.GetAliases())
				if err := checkAliases(ctx, s.st, *m); err != nil {
					return err
				}
			}
			updateGroupRouting(&m.GroupRouting, in, paths)
			if hasPath(paths, "cache") {
				m.Cache = mc
			}
			return s.checkFallbacks(ctx, m.ID, &m.GroupRouting)
		})
	}
	if err == nil {
		err = s.record(ctx, "model.update", store.KindModel, m.ID, map[string]any{"fields": paths, "model": m})
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.UpdateModelResponse{Model: modelView(&m)}, nil
}

// DeleteModel deletes a model group.
func (s *Server) DeleteModel(ctx context.Context, req *adminv1.DeleteModelRequest) (*adminv1.DeleteModelResponse, error) {
	err := remove[store.ModelGroup](ctx, s.st, req.GetId())
	if err == nil {
		err = s.record(ctx, "model.delete", store.KindModel, req.GetId(), nil)
	}
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &adminv1.DeleteModelResponse{}, nil
}
