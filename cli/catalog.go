package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func init() {
	register(
		&command{noun: "provider", verb: "create", args: "ID", help: "add a provider (--type, --base-url, --credential-env)", setup: providerCreate},
		&command{noun: "provider", verb: "list", help: "list providers (credentials are never shown)", setup: providerList},
		&command{noun: "provider", verb: "get", args: "ID", help: "show a provider", setup: providerGet},
		&command{noun: "provider", verb: "update", args: "ID", help: "change a provider's URL, version or credential", setup: providerUpdate},
		&command{noun: "provider", verb: "delete", args: "ID", help: "delete a provider without deployments", setup: providerDelete},

		&command{noun: "deployment", verb: "create", args: "ID", help: "add a deployment (--provider, --model)", setup: deploymentCreate},
		&command{noun: "deployment", verb: "list", help: "list deployments (--provider)", setup: deploymentList},
		&command{noun: "deployment", verb: "get", args: "ID", help: "show a deployment", setup: deploymentGet},
		&command{noun: "deployment", verb: "update", args: "ID", help: "change a deployment", setup: deploymentUpdate},
		&command{noun: "deployment", verb: "delete", args: "ID", help: "delete a deployment no model uses", setup: deploymentDelete},

		&command{noun: "model", verb: "create", args: "NAME", help: "publish a model name served by --deployments", setup: modelCreate},
		&command{noun: "model", verb: "list", help: "list model names and their deployments", setup: modelList},
		&command{noun: "model", verb: "get", args: "NAME", help: "show a model", setup: modelGet},
		&command{noun: "model", verb: "update", args: "NAME", help: "change a model's deployments, default max tokens, routing or response cache", setup: modelUpdate},
		&command{noun: "model", verb: "delete", args: "NAME", help: "unpublish a model name", setup: modelDelete},

		&command{noun: "price", verb: "set", args: "MODEL", help: "set a model's prices: per million tokens (--input, --output), per unit (--per-image, --per-second, --per-character, --per-search-unit, --image-tokens); others kept", setup: priceSet},
		&command{noun: "price", verb: "list", help: "list prices", setup: priceList},
		&command{noun: "price", verb: "get", args: "MODEL", help: "show a model's price", setup: priceGet},
		&command{noun: "price", verb: "delete", args: "MODEL", help: "delete a model's price", setup: priceDelete},
		&command{noun: "price", verb: "defaults", help: "store the built-in prices of popular models (--overwrite)", setup: priceDefaults},
		&command{noun: "price", verb: "missing", help: "list deployments whose model has no price (refused under strict budgets)", setup: priceMissing},
	)
}

// geminiBaseURL is the Gemini API's base URL, the default of a gemini provider.
const geminiBaseURL = "https://generativelanguage.googleapis.com/v1beta"

var providerTypes = map[string]adminv1.ProviderType{
	"openai": adminv1.ProviderType_PROVIDER_TYPE_OPENAI, "azure": adminv1.ProviderType_PROVIDER_TYPE_AZURE,
	"anthropic": adminv1.ProviderType_PROVIDER_TYPE_ANTHROPIC,
	"gemini":    adminv1.ProviderType_PROVIDER_TYPE_GEMINI,
	"bedrock":   adminv1.ProviderType_PROVIDER_TYPE_BEDROCK,
	"vertex":    adminv1.ProviderType_PROVIDER_TYPE_VERTEX,
}

func providerTypeName(t adminv1.ProviderType) string {
	for k, v := range providerTypes {
		if v == t {
			return k
		}
	}
	return "-"
}

func providerFields(p *adminv1.Provider) [][2]string {
	cred, adminCred := "none", "none"
	if p.GetHasCredential() {
		cred = "set (write-only)"
	}
	if p.GetHasAdminCredential() {
		adminCred = "set (write-only)"
	}
	return [][2]string{
		{"ID", p.GetId()},
		{"TYPE", providerTypeName(p.GetType())},
		{"BASE URL", p.GetBaseUrl()},
		{"API VERSION", orDash(p.GetApiVersion())},
		{"CREDENTIAL", cred},
		{"ADMIN CREDENTIAL", adminCred},
		{"PRICE PER CALL", orDash(p.GetPricePerCall().GetDollars())},
	}
}

// credentialFlags read a provider credential from the environment, a file or
// stdin, never from the command line (where `ps` would show it). name is
// the flags' stem: "credential" (the API key) or "admin-credential" (the
// key of the provider's usage and cost reports).
type credentialFlags struct{ name, env, file string }

func (c *credentialFlags) register(fs *flag.FlagSet) {
	c.register2(fs, "credential", "the provider API key")
}

func (c *credentialFlags) register2(fs *flag.FlagSet, name, what string) {
	c.name = name
	fs.StringVar(&c.env, name+"-env", "", "read "+what+" from this environment variable")
	fs.StringVar(&c.file, name+"-file", "", "read "+what+" from this file (- for stdin)")
}

func (c *credentialFlags) read(stdin io.Reader) (string, bool, error) {
	switch {
	case c.env != "" && c.file != "":
		return "", false, fmt.Errorf("%w: give --%s-env or --%s-file, not both", ErrUsage, c.name, c.name)
	case c.env != "":
		v, ok := os.LookupEnv(c.env)
		if !ok || v == "" {
			return "", false, fmt.Errorf("%w: --%s-env: environment variable %s is not set", ErrUsage, c.name, c.env)
		}
		return v, true, nil
	case c.file != "":
		var b []byte
		var err error
		if c.file == "-" {
			b, err = io.ReadAll(io.LimitReader(stdin, 64<<10))
		} else {
			b, err = os.ReadFile(c.file)
		}
		if err != nil {
			return "", false, fmt.Errorf("--%s-file: %w", c.name, err)
		}
		return strings.TrimSpace(string(b)), true, nil
	}
	return "", false, nil
}

// bedrockProvider fills a bedrock provider's flags: --region becomes the api
// version and, without --base-url, the bedrock-runtime endpoint of the
// region; --aws-profile becomes the credential {"profile":…}. A credential
// given with --credential-env/-file is JSON {"access_key_id",
// "secret_access_key"[,"session_token"]}.
func bedrockProvider(region, profile, baseURL, version *string, cred string) (string, error) {
	if *region != "" {
		*version = *region
		if *baseURL == "" {
			*baseURL = "https://bedrock-runtime." + *region + ".amazonaws.com"
		}
	}
	if *profile != "" {
		if cred != "" {
			return "", fmt.Errorf("%w: give --aws-profile or a credential, not both", ErrUsage)
		}
		b, err := json.Marshal(map[string]string{"profile": *profile})
		return string(b), err
	}
	return cred, nil
}

// vertexBaseURL is Vertex AI's base URL for a project and location (the
// global location has no regional host).
func vertexBaseURL(project, location string) string {
	host := location + "-aiplatform.googleapis.com"
	if location == "global" {
		host = "aiplatform.googleapis.com"
	}
	return "https://" + host + "/v1/projects/" + project + "/locations/" + location
}

func parseProviderType(s string) (adminv1.ProviderType, error) {
	t, ok := providerTypes[s]
	if !ok {
		return 0, fmt.Errorf("%w: --type %q: use openai, azure, anthropic, gemini, bedrock or vertex", ErrUsage, s)
	}
	return t, nil
}

func providerCreate(fs *flag.FlagSet) func(*runner, []string) error {
	var cf, af credentialFlags
	af.register2(fs, "admin-credential", "the provider's admin key for its usage and cost reports (tollgate reconcile)")
	typ := fs.String("type", "", "openai, azure, anthropic, gemini, bedrock or vertex (required)")
	project := fs.String("project", "", "vertex: the Google Cloud project (with --location: the base URL)")
	location := fs.String("location", "", "vertex: the location, e.g. us-central1 or global")
	region := fs.String("region", "", "bedrock: the AWS region (stored as the api version; the base URL defaults to its bedrock-runtime endpoint)")
	profile := fs.String("aws-profile", "", "bedrock: sign with this shared-config profile instead of keys (no credential: the default AWS chain)")
	baseURL := fs.String("base-url", "", "API base URL, e.g. https://api.openai.com/v1 (required; gemini: "+geminiBaseURL+" when empty)")
	version := fs.String("api-version", "", "Azure api-version or anthropic-version")
	responses := fs.Bool("responses-api", false, "the upstream serves OpenAI's Responses API itself (OpenAI, vLLM)")
	perCall := fs.String("price-per-call", "", "dollars charged per pass-through call without a readable usage or a model price, e.g. 0.002")
	cf.register(fs)
	return func(r *runner, pos []string) error {
		t, err := parseProviderType(*typ)
		if err != nil {
			return err
		}
		if *baseURL == "" && t == adminv1.ProviderType_PROVIDER_TYPE_GEMINI {
			*baseURL = geminiBaseURL
		}
		cred, _, err := cf.read(os.Stdin)
		if err != nil {
			return err
		}
		adminCred, _, err := af.read(os.Stdin)
		if err != nil {
			return err
		}
		if t == adminv1.ProviderType_PROVIDER_TYPE_VERTEX && *baseURL == "" && *project != "" && *location != "" {
			*baseURL = vertexBaseURL(*project, *location)
		}
		if t == adminv1.ProviderType_PROVIDER_TYPE_BEDROCK {
			if cred, err = bedrockProvider(region, profile, baseURL, version, cred); err != nil {
				return err
			}
		}
		prov := &adminv1.Provider{Id: pos[0], Type: t, BaseUrl: *baseURL, ApiVersion: *version, ResponsesApi: *responses}
		if *perCall != "" {
			if prov.PricePerCall, err = dollars("price-per-call", *perCall); err != nil {
				return err
			}
		}
		resp, err := adminv1.NewProviderServiceClient(r.conn).CreateProvider(r.ctx, &adminv1.CreateProviderRequest{
			Provider: prov, Credential: cred,
			AdminCredential: adminCred,
		})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(providerFields(resp.GetProvider())) })
	}
}

func providerList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListProvidersResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewProviderServiceClient(r.conn).ListProviders(r.ctx, &adminv1.ListProvidersRequest{PageSize: size, PageToken: token})
			all.Providers = append(all.Providers, resp.GetProviders()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, p := range all.GetProviders() {
				f := providerFields(p)
				rows = append(rows, []string{f[0][1], f[1][1], f[2][1], f[3][1], f[4][1], f[5][1]})
			}
			r.table([]string{"ID", "TYPE", "BASE URL", "API VERSION", "CREDENTIAL", "ADMIN CREDENTIAL"}, rows)
		})
	}
}

func providerGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewProviderServiceClient(r.conn).GetProvider(r.ctx, &adminv1.GetProviderRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(providerFields(resp.GetProvider())) })
	}
}

func providerUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	var cf credentialFlags
	typ := fs.String("type", "", "openai, azure or anthropic")
	baseURL := fs.String("base-url", "", "new API base URL")
	version := fs.String("api-version", "", "new Azure api-version or anthropic-version")
	responses := fs.Bool("responses-api", false, "the upstream serves OpenAI's Responses API itself")
	perCall := fs.String("price-per-call", "", "dollars charged per pass-through call without a readable usage or a model price (0 removes it)")
	clearCred := fs.Bool("clear-credential", false, "remove the stored credential")
	clearAdmin := fs.Bool("clear-admin-credential", false, "remove the stored admin credential")
	cf.register(fs)
	var af credentialFlags
	af.register2(fs, "admin-credential", "the provider's admin key for its usage and cost reports (tollgate reconcile)")
	return func(r *runner, pos []string) error {
		p := &adminv1.Provider{Id: pos[0], BaseUrl: *baseURL, ApiVersion: *version, ResponsesApi: *responses}
		if r.set["price-per-call"] {
			var err error
			if p.PricePerCall, err = dollars("price-per-call", *perCall); err != nil {
				return err
			}
		}
		if r.set["type"] {
			t, err := parseProviderType(*typ)
			if err != nil {
				return err
			}
			p.Type = t
		}
		cred, given, err := cf.read(os.Stdin)
		if err != nil {
			return err
		}
		adminCred, adminGiven, err := af.read(os.Stdin)
		if err != nil {
			return err
		}
		mask, err := updateMask(r.set, map[string]string{"type": "type", "base-url": "base_url", "api-version": "api_version", "responses-api": "responses_api", "price-per-call": "price_per_call"}, nil)
		if err != nil && !given && !*clearCred && !adminGiven && !*clearAdmin {
			return err
		}
		if mask == nil {
			mask = &fieldmaskpb.FieldMask{}
		}
		if given || *clearCred {
			mask.Paths = append(mask.Paths, "credential")
		}
		if adminGiven || *clearAdmin {
			mask.Paths = append(mask.Paths, "admin_credential")
		}
		resp, err := adminv1.NewProviderServiceClient(r.conn).UpdateProvider(r.ctx, &adminv1.UpdateProviderRequest{
			Provider: p, Credential: cred, AdminCredential: adminCred, UpdateMask: mask,
		})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.fields(providerFields(resp.GetProvider())) })
	}
}

func providerDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewProviderServiceClient(r.conn).DeleteProvider(r.ctx, &adminv1.DeleteProviderRequest{Id: pos[0]})
		return deleted(r, "provider", pos[0], err)
	}
}

func deploymentRow(d *adminv1.Deployment) []string {
	return []string{d.GetId(), d.GetProvider(), d.GetProviderModel(), num(int64(d.GetWeight())), num(d.GetRpm()), num(d.GetTpm()), deploymentState(d)}
}

var deploymentHeader = []string{"ID", "PROVIDER", "PROVIDER MODEL", "WEIGHT", "RPM", "TPM", "STATE"}

func (r *runner) deployment(d *adminv1.Deployment) {
	row := deploymentRow(d)
	pairs := make([][2]string, len(row))
	for i := range row {
		pairs[i] = [2]string{deploymentHeader[i], row[i]}
	}
	pairs = append(pairs, [][2]string{
		{"COOLDOWN", durationText(d.GetCooldown())},
		{"ALLOWED FAILS", num(int64(d.GetAllowedFails()))},
		{"TIMEOUT", durationText(d.GetTimeout())},
		{"FIRST BYTE TIMEOUT", durationText(d.GetFirstByteTimeout())},
		{"CONNECT TIMEOUT", durationText(d.GetConnectTimeout())},
		{"BASE MODEL", orDash(d.GetBaseModel())},
		{"FREE", strconv.FormatBool(d.GetFree())},
	}...)
	r.fields(pairs)
}

type deploymentFlags struct {
	provider, model, baseModel string
	weight                     int
	rpm, tpm                   int64
	free                       bool
	routing                    deploymentRoutingFlags
}

func (f *deploymentFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.provider, "provider", "", "provider id")
	fs.StringVar(&f.model, "model", "", "model name at the provider (Azure: the deployment name)")
	fs.IntVar(&f.weight, "weight", 0, "routing weight among the model's deployments (0 means 1)")
	fs.Int64Var(&f.rpm, "rpm", 0, "requests per minute this deployment takes (0: no limit)")
	fs.Int64Var(&f.tpm, "tpm", 0, "tokens per minute this deployment takes (0: no limit)")
	fs.StringVar(&f.baseModel, "base-model", "", "the model the provider runs under --model, to find its price (Azure deployment names, fine-tunes)")
	fs.BoolVar(&f.free, "free", false, "the deployment costs nothing (a local or prepaid model): served at $0 under every budget")
	f.routing.register(fs)
}

func (f *deploymentFlags) message(id string) *adminv1.Deployment {
	return f.routing.set(&adminv1.Deployment{
		Id: id, Provider: f.provider, ProviderModel: f.model, Weight: int32(f.weight), Rpm: f.rpm, Tpm: f.tpm,
		BaseModel: f.baseModel, Free: f.free,
	})
}

func deploymentCreate(fs *flag.FlagSet) func(*runner, []string) error {
	var df deploymentFlags
	df.register(fs)
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewDeploymentServiceClient(r.conn).CreateDeployment(r.ctx, &adminv1.CreateDeploymentRequest{Deployment: df.message(pos[0])})
		if err != nil {
			return err
		}
		r.warnings(resp.GetWarnings())
		return r.emit(resp, func() { r.deployment(resp.GetDeployment()) })
	}
}

func deploymentList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	provider := fs.String("provider", "", "only deployments of this provider")
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListDeploymentsResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewDeploymentServiceClient(r.conn).ListDeployments(r.ctx, &adminv1.ListDeploymentsRequest{Provider: *provider, PageSize: size, PageToken: token})
			all.Deployments = append(all.Deployments, resp.GetDeployments()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, d := range all.GetDeployments() {
				rows = append(rows, deploymentRow(d))
			}
			r.table(deploymentHeader, rows)
		})
	}
}

func deploymentGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewDeploymentServiceClient(r.conn).GetDeployment(r.ctx, &adminv1.GetDeploymentRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.deployment(resp.GetDeployment()) })
	}
}

func deploymentUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	var df deploymentFlags
	df.register(fs)
	return func(r *runner, pos []string) error {
		fields := map[string]string{
			"provider": "provider", "model": "provider_model", "weight": "weight", "rpm": "rpm", "tpm": "tpm",
			"base-model": "base_model", "free": "free",
		}
		maps.Copy(fields, deploymentRoutingMask)
		mask, err := updateMask(r.set, fields, nil)
		if err != nil {
			return err
		}
		resp, err := adminv1.NewDeploymentServiceClient(r.conn).UpdateDeployment(r.ctx, &adminv1.UpdateDeploymentRequest{Deployment: df.message(pos[0]), UpdateMask: mask})
		if err != nil {
			return err
		}
		r.warnings(resp.GetWarnings())
		return r.emit(resp, func() { r.deployment(resp.GetDeployment()) })
	}
}

func deploymentDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewDeploymentServiceClient(r.conn).DeleteDeployment(r.ctx, &adminv1.DeleteDeploymentRequest{Id: pos[0]})
		return deleted(r, "deployment", pos[0], err)
	}
}

func splitList(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (r *runner) model(m *adminv1.Model) {
	r.fields(append([][2]string{
		{"NAME", m.GetId()},
		{"DEPLOYMENTS", orDash(strings.Join(m.GetDeployments(), ", "))},
		{"DEFAULT MAX TOKENS", num(m.GetDefaultMaxTokens())},
		{"ALIASES", orDash(strings.Join(m.GetAliases(), ", "))},
		{"UPSTREAM MODEL", upstreamModelOf(m)},
		{"CACHE", modelCache(m.GetCache())},
	}, r.modelRouting(m)...))
}

// upstreamModelOf says which model name a group's deployments are sent.
func upstreamModelOf(m *adminv1.Model) string {
	if m.GetUpstreamModelFromRequest() {
		return "the name the client asked for"
	}
	return "each deployment's model"
}

func modelCreate(fs *flag.FlagSet) func(*runner, []string) error {
	deps := fs.String("deployments", "", "deployment ids, comma-separated")
	maxTokens := fs.Int64("default-max-tokens", 0, "output bound for requests without max_tokens")
	aliases := fs.String("aliases", "", "other names clients may ask for, comma-separated; '*' matches any characters (claude-*)")
	passName := fs.Bool("upstream-model-from-request", false, "send the name the client asked for to the provider as the model, priced under that name")
	var rf modelRoutingFlags
	rf.register(fs)
	var cf modelCacheFlags
	cf.register(fs)
	return func(r *runner, pos []string) error {
		m := rf.set(&adminv1.Model{Id: pos[0], Deployments: splitList(*deps), DefaultMaxTokens: *maxTokens, Aliases: splitList(*aliases), UpstreamModelFromRequest: *passName}, r.set)
		if cf.given(r.set) {
			c, err := cf.merge(nil, r.set)
			if err != nil {
				return err
			}
			m.Cache = c
		}
		resp, err := adminv1.NewModelServiceClient(r.conn).CreateModel(r.ctx, &adminv1.CreateModelRequest{Model: m})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.model(resp.GetModel()) })
	}
}

func modelList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListModelsResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewModelServiceClient(r.conn).ListModels(r.ctx, &adminv1.ListModelsRequest{PageSize: size, PageToken: token})
			all.Models = append(all.Models, resp.GetModels()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, m := range all.GetModels() {
				rows = append(rows, []string{m.GetId(), orDash(strings.Join(m.GetDeployments(), ",")), num(m.GetDefaultMaxTokens())})
			}
			r.table([]string{"NAME", "DEPLOYMENTS", "DEFAULT MAX TOKENS"}, rows)
		})
	}
}

func modelGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewModelServiceClient(r.conn).GetModel(r.ctx, &adminv1.GetModelRequest{Id: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.model(resp.GetModel()) })
	}
}

func modelUpdate(fs *flag.FlagSet) func(*runner, []string) error {
	deps := fs.String("deployments", "", "deployment ids, comma-separated (replaces the list)")
	maxTokens := fs.Int64("default-max-tokens", 0, "output bound for requests without max_tokens")
	aliases := fs.String("aliases", "", "other names clients may ask for, comma-separated, '*' matching any characters (replaces the list)")
	passName := fs.Bool("upstream-model-from-request", false, "send the name the client asked for to the provider as the model, priced under that name")
	var rf modelRoutingFlags
	rf.register(fs)
	var cf modelCacheFlags
	cf.register(fs)
	return func(r *runner, pos []string) error {
		fields := map[string]string{"deployments": "deployments", "default-max-tokens": "default_max_tokens", "aliases": "aliases", "upstream-model-from-request": "upstream_model_from_request"}
		maps.Copy(fields, modelRoutingMask)
		for _, n := range cacheFlagNames {
			fields[n] = "cache"
		}
		mask, err := updateMask(r.set, fields, nil)
		if err != nil {
			return err
		}
		m := rf.set(&adminv1.Model{Id: pos[0], Deployments: splitList(*deps), DefaultMaxTokens: *maxTokens, Aliases: splitList(*aliases), UpstreamModelFromRequest: *passName}, r.set)
		if cf.given(r.set) { // the cache is one field: the flags given change the current one
			cur, err := adminv1.NewModelServiceClient(r.conn).GetModel(r.ctx, &adminv1.GetModelRequest{Id: pos[0]})
			if err != nil {
				return err
			}
			if m.Cache, err = cf.merge(cur.GetModel().GetCache(), r.set); err != nil {
				return err
			}
		}
		resp, err := adminv1.NewModelServiceClient(r.conn).UpdateModel(r.ctx, &adminv1.UpdateModelRequest{Model: m, UpdateMask: mask})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.model(resp.GetModel()) })
	}
}

func modelDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewModelServiceClient(r.conn).DeleteModel(r.ctx, &adminv1.DeleteModelRequest{Id: pos[0]})
		return deleted(r, "model", pos[0], err)
	}
}

func priceRow(p *adminv1.Price) []string {
	opt := func(m *adminv1.Money) string {
		if m == nil {
			return "-"
		}
		return usd(m)
	}
	return []string{p.GetModel(), usd(p.GetInput()), opt(p.GetCachedInput()), opt(p.GetCacheWrite()), usd(p.GetOutput()), opt(p.GetReasoning()), unitPrices(p)}
}

// unitPrices sums up a price's prices per unit in one cell: "image
// 1024x1024/hd $0.08, * $0.04; second $0.0001; image tokens $10.00/$40.00 per 1M".
func unitPrices(p *adminv1.Price) string {
	var parts []string
	if len(p.GetPerImage()) > 0 {
		var sizes []string
		for _, k := range slices.Sorted(maps.Keys(p.GetPerImage())) {
			sizes = append(sizes, k+" "+usd(p.GetPerImage()[k]))
		}
		parts = append(parts, "image "+strings.Join(sizes, ", "))
	}
	for _, u := range []struct {
		name string
		m    *adminv1.Money
	}{{"second", p.GetPerSecond()}, {"character", p.GetPerCharacter()}, {"search unit", p.GetPerSearchUnit()}} {
		if u.m != nil {
			parts = append(parts, u.name+" "+usd(u.m))
		}
	}
	if p.GetImageInputTokens() != nil || p.GetImageOutputTokens() != nil {
		parts = append(parts, "image tokens "+usd(p.GetImageInputTokens())+"/"+usd(p.GetImageOutputTokens())+" per 1M")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

var priceHeader = []string{"MODEL", "INPUT/1M", "CACHED INPUT/1M", "CACHE WRITE/1M", "OUTPUT/1M", "REASONING/1M", "PER UNIT"}

// priceTokenPaths are the token prices --input and --output replace together.
var priceTokenPaths = []string{"input", "cached_input", "cache_write", "output", "reasoning"}

func priceSet(fs *flag.FlagSet) func(*runner, []string) error {
	input := fs.String("input", "", "dollars per million input tokens")
	output := fs.String("output", "", "dollars per million output tokens")
	cached := fs.String("cached-input", "", "dollars per million cached input tokens (default: input)")
	write := fs.String("cache-write", "", "dollars per million cache-write tokens (default: input)")
	reasoning := fs.String("reasoning", "", "dollars per million reasoning tokens (default: output)")
	perImage := fs.String("per-image", "", "dollars an image: PRICE, or SIZE/QUALITY=PRICE,SIZE=PRICE,*/QUALITY=PRICE,*=PRICE (replaces the model's image prices)")
	perSecond := fs.String("per-second", "", "dollars a second of audio transcribed or translated (0 removes it)")
	perChar := fs.String("per-character", "", "dollars a character of speech (0 removes it)")
	perSearch := fs.String("per-search-unit", "", "dollars a rerank search unit (0 removes it)")
	imageTokens := fs.String("image-tokens", "", "IN,OUT: dollars per million image input and output tokens of an image model billed by tokens (gpt-image-1; text input at --input)")
	return func(r *runner, pos []string) error {
		p := &adminv1.Price{Model: pos[0]}
		flags := []struct {
			name, path, v string
			dst           **adminv1.Money
		}{
			{"input", "input", *input, &p.Input},
			{"output", "output", *output, &p.Output},
			{"cached-input", "cached_input", *cached, &p.CachedInput},
			{"cache-write", "cache_write", *write, &p.CacheWrite},
			{"reasoning", "reasoning", *reasoning, &p.Reasoning},
			{"per-second", "per_second", *perSecond, &p.PerSecond},
			{"per-character", "per_character", *perChar, &p.PerCharacter},
			{"per-search-unit", "per_search_unit", *perSearch, &p.PerSearchUnit},
		}
		var paths []string
		if r.set["input"] && r.set["output"] {
			// A token price is set whole: the kinds not given go back to
			// their defaults (cached input and cache write at input,
			// reasoning at output); the prices per unit stay.
			paths = append(paths, priceTokenPaths...)
		}
		for _, f := range flags {
			if !r.set[f.name] {
				continue
			}
			m, err := dollars(f.name, f.v)
			if err != nil {
				return err
			}
			*f.dst = m
			if !slices.Contains(paths, f.path) {
				paths = append(paths, f.path)
			}
		}
		if r.set["per-image"] {
			m, err := imagePrices(*perImage)
			if err != nil {
				return err
			}
			p.PerImage = m
			paths = append(paths, "per_image")
		}
		if r.set["image-tokens"] {
			in, out, ok := strings.Cut(*imageTokens, ",")
			if !ok {
				return fmt.Errorf("%w: --image-tokens %q: use IN,OUT (dollars per million image input and output tokens)", ErrUsage, *imageTokens)
			}
			var err error
			if p.ImageInputTokens, err = dollars("image-tokens", strings.TrimSpace(in)); err != nil {
				return err
			}
			if p.ImageOutputTokens, err = dollars("image-tokens", strings.TrimSpace(out)); err != nil {
				return err
			}
			paths = append(paths, "image_input_tokens", "image_output_tokens")
		}
		if len(paths) == 0 {
			return fmt.Errorf("%w: give a price: --input and --output (dollars per million tokens), or a price per unit "+
				"(--per-image, --per-second, --per-character, --per-search-unit, --image-tokens)", ErrUsage)
		}
		resp, err := adminv1.NewPriceServiceClient(r.conn).SetPrice(r.ctx, &adminv1.SetPriceRequest{
			Price: p, UpdateMask: &fieldmaskpb.FieldMask{Paths: paths},
		})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.table(priceHeader, [][]string{priceRow(resp.GetPrice())}) })
	}
}

// imagePrices reads --per-image: a bare price is any image's ("*"), else
// KEY=PRICE pairs separated by commas.
func imagePrices(s string) (map[string]*adminv1.Money, error) {
	out := map[string]*adminv1.Money{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			k, v = "*", item
		}
		if k = strings.TrimSpace(k); k == "" || item == "" {
			return nil, fmt.Errorf("%w: --per-image %q: use PRICE or SIZE/QUALITY=PRICE,SIZE=PRICE,*=PRICE", ErrUsage, s)
		}
		m, err := dollars("per-image", strings.TrimSpace(v))
		if err != nil {
			return nil, err
		}
		out[k] = m
	}
	return out, nil
}

func priceList(fs *flag.FlagSet) func(*runner, []string) error {
	var pf pageFlags
	pf.register(fs)
	return func(r *runner, _ []string) error {
		all := &adminv1.ListPricesResponse{}
		err := pf.each(r, func(token string, size int32) (string, error) {
			resp, err := adminv1.NewPriceServiceClient(r.conn).ListPrices(r.ctx, &adminv1.ListPricesRequest{PageSize: size, PageToken: token})
			all.Prices = append(all.Prices, resp.GetPrices()...)
			return resp.GetNextPageToken(), err
		})
		if err != nil {
			return err
		}
		return r.emit(all, func() {
			var rows [][]string
			for _, p := range all.GetPrices() {
				rows = append(rows, priceRow(p))
			}
			r.table(priceHeader, rows)
		})
	}
}

func priceGet(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		resp, err := adminv1.NewPriceServiceClient(r.conn).GetPrice(r.ctx, &adminv1.GetPriceRequest{Model: pos[0]})
		if err != nil {
			return err
		}
		return r.emit(resp, func() { r.table(priceHeader, [][]string{priceRow(resp.GetPrice())}) })
	}
}

func priceDelete(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, pos []string) error {
		_, err := adminv1.NewPriceServiceClient(r.conn).DeletePrice(r.ctx, &adminv1.DeletePriceRequest{Model: pos[0]})
		return deleted(r, "price of", pos[0], err)
	}
}

func priceDefaults(fs *flag.FlagSet) func(*runner, []string) error {
	overwrite := fs.Bool("overwrite", false, "replace prices already set")
	return func(r *runner, _ []string) error {
		resp, err := adminv1.NewPriceServiceClient(r.conn).LoadDefaultPrices(r.ctx, &adminv1.LoadDefaultPricesRequest{Overwrite: *overwrite})
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			_, _ = fmt.Fprintf(r.out, "%d default prices stored: %s\n", len(resp.GetModels()), strings.Join(resp.GetModels(), ", "))
		})
	}
}

// warnings prints the server's warnings on stderr, one a line (the output
// itself, JSON included, stays on stdout).
func (r *runner) warnings(ws []string) {
	for _, w := range ws {
		_, _ = fmt.Fprintf(r.errOut, "warning: %s\n", w)
	}
}

var missingPriceHeader = []string{"DEPLOYMENT", "MODEL", "PROVIDER", "PROVIDER MODEL", "BASE MODEL", "NAMES TRIED"}

func priceMissing(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, _ []string) error {
		resp, err := adminv1.NewPriceServiceClient(r.conn).ListMissingPrices(r.ctx, &adminv1.ListMissingPricesRequest{})
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			if len(resp.GetMissing()) == 0 {
				_, _ = fmt.Fprintln(r.out, "every deployment has a price")
				return
			}
			var rows [][]string
			for _, m := range resp.GetMissing() {
				rows = append(rows, []string{
					m.GetDeployment(), orDash(m.GetModel()), m.GetProvider(), m.GetProviderModel(),
					orDash(m.GetBaseModel()), strings.Join(m.GetNamesTried(), ", "),
				})
			}
			r.table(missingPriceHeader, rows)
		})
	}
}
