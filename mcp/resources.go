package mcp

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resources and prompts of upstream servers are relayed like tools: listed
// from every server the caller may use (all pages), named per server on /mcp,
// and reached through the same client sessions. Grants cover them with names
// tools cannot have (a tool name has no ':'):
//
//   - prompt P of server S is granted by a pattern matching "S/prompt:P"
//     (github/prompt:*, github/prompt:review_*);
//   - the resources of server S are granted as a whole by a pattern matching
//     "S/resource:*" (their URIs are not globbed).
//
// So github/* and */* grant a server's tools, prompts and resources. Reading
// a resource or getting a prompt is not metered (no price, no ledger row);
// it is in the access log, metrics and traces like every method.

// ResourcesGrant is the grant name that covers server's resources.
func ResourcesGrant(server string) string { return server + "/" + resourceGrant }

// PromptGrant is the grant name that covers prompt name of server.
func PromptGrant(server, name string) string { return server + "/" + promptPrefix + name }

const (
	resourceGrant = "resource:*"
	promptPrefix  = "prompt:"
)

// URIScheme prefixes the resource URIs of /mcp: resource U of server S is
// tollgate://S/U there (U unchanged after the first slash), so that URIs of
// different servers cannot collide and a read finds its server.
const URIScheme = "tollgate://"

func wrapURI(server, uri string) string { return URIScheme + server + "/" + uri }

func unwrapURI(uri string) (server, orig string, ok bool) {
	rest, ok := strings.CutPrefix(uri, URIScheme)
	if !ok {
		return "", "", false
	}
	server, orig, ok = strings.Cut(rest, "/")
	return server, orig, ok && server != "" && orig != ""
}

// fromEach runs list on the client session of each server of rc the caller
// may use whose capabilities include need, in parallel; out[i] is
// servers[i]'s. On /mcp a server that fails is left out (and logged) so that
// the others still serve; on /mcp/SERVER its failure is the answer.
func fromEach[T any](ctx context.Context, h *Handler, rc *reqCtx, need caps, list func(context.Context, *sdk.ClientSession) iter.Seq2[T, error]) ([]*Server, [][]T, error) {
	servers := usable(rc.caller, rc.servers)
	out := make([][]T, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			errs[i] = h.up.do(ctx, s, rc.token, func(ctx context.Context, cs *sdk.ClientSession) error {
				out[i] = out[i][:0]
				if capsOf(cs.InitializeResult().Capabilities)&need == 0 {
					return nil
				}
				for v, err := range list(ctx, cs) {
					if err != nil {
						return err
					}
					out[i] = append(out[i], v)
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i, s := range servers {
		if errs[i] == nil {
			continue
		}
		if rc.single != nil {
			return nil, nil, upstreamError(s.ID, errs[i])
		}
		h.log.Warn("mcp list: upstream left out", "server", s.ID, "err", errs[i])
		out[i] = nil
	}
	return servers, out, nil
}

// relayed answers a list method: the items of every server of rc the caller
// may use (fromEach) that its grants cover, grant naming an item's grant; on
// /mcp each is a copy that wrap renames for server.
func relayed[T any](ctx context.Context, h *Handler, rc *reqCtx, need caps,
	list func(context.Context, *sdk.ClientSession) iter.Seq2[*T, error],
	grant func(*T) string, wrap func(server string, item *T),
) ([]*T, error) {
	servers, lists, err := fromEach(ctx, h, rc, need, list)
	if err != nil {
		return nil, err
	}
	out := []*T{}
	for i, s := range servers {
		for _, v := range lists[i] {
			if ok, _ := rc.caller.Allowed(s.ID, grant(v)); !ok {
				continue
			}
			if rc.single == nil {
				c := *v
				wrap(s.ID, &c)
				v = &c
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// listResources answers resources/list.
func (h *Handler) listResources(ctx context.Context, rc *reqCtx) (*sdk.ListResourcesResult, error) {
	rs, err := relayed(ctx, h, rc, capResources, func(ctx context.Context, cs *sdk.ClientSession) iter.Seq2[*sdk.Resource, error] {
		return cs.Resources(ctx, nil)
	}, func(*sdk.Resource) string { return resourceGrant }, func(server string, r *sdk.Resource) {
		r.URI, r.Name = wrapURI(server, r.URI), server+Separator+r.Name
	})
	if err != nil {
		return nil, err
	}
	return &sdk.ListResourcesResult{Resources: rs, Cacheable: perKey()}, nil
}

// listResourceTemplates answers resources/templates/list.
func (h *Handler) listResourceTemplates(ctx context.Context, rc *reqCtx) (*sdk.ListResourceTemplatesResult, error) {
	ts, err := relayed(ctx, h, rc, capResources, func(ctx context.Context, cs *sdk.ClientSession) iter.Seq2[*sdk.ResourceTemplate, error] {
		return cs.ResourceTemplates(ctx, nil)
	}, func(*sdk.ResourceTemplate) string { return resourceGrant }, func(server string, t *sdk.ResourceTemplate) {
		t.URITemplate, t.Name = wrapURI(server, t.URITemplate), server+Separator+t.Name
	})
	if err != nil {
		return nil, err
	}
	return &sdk.ListResourceTemplatesResult{ResourceTemplates: ts, Cacheable: perKey()}, nil
}

// readResource answers resources/read.
func (h *Handler) readResource(ctx context.Context, rc *reqCtx, req sdk.Request, ev *Event) (sdk.Result, error) {
	params, ok := req.GetParams().(*sdk.ReadResourceParams)
	if !ok || params == nil || params.URI == "" {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "resources/read: params.uri is required", nil)
	}
	srv, uri, err := rc.checkGrant(grantResource, params.URI)
	if srv != nil {
		ev.Server = srv.ID
	}
	if err != nil {
		return nil, err
	}
	var res *sdk.ReadResourceResult
	err = h.up.do(ctx, srv, rc.token, func(ctx context.Context, cs *sdk.ClientSession) error {
		p := *params
		p.Meta, p.URI = forwardMeta(params.Meta), uri
		var err error
		res, err = cs.ReadResource(ctx, &p)
		return err
	})
	if err != nil {
		return nil, upstreamError(srv.ID, err)
	}
	if rc.single == nil {
		for _, c := range res.Contents {
			if c != nil && c.URI != "" {
				c.URI = wrapURI(srv.ID, c.URI)
			}
		}
	}
	res.Cacheable = perKey()
	return res, nil
}

// resourceServer maps a resource URI (or URI template) of rc to its server
// and the upstream's URI: on /mcp, tollgate://SERVER/URI.
func resourceServer(rc *reqCtx, uri string) (*Server, string, error) {
	if rc.single != nil {
		return rc.single, uri, nil
	}
	id, orig, ok := unwrapURI(uri)
	if !ok {
		return nil, "", rpcError(jsonrpc.CodeInvalidParams,
			fmt.Sprintf("unknown resource %q: resources on /mcp are %sSERVER/URI", uri, URIScheme), nil)
	}
	srv := findServer(rc.servers, id)
	if srv == nil {
		return nil, "", rpcError(jsonrpc.CodeInvalidParams, fmt.Sprintf("unknown resource %q: no MCP server %q", uri, id), nil)
	}
	return srv, orig, nil
}

// listPrompts answers prompts/list.
func (h *Handler) listPrompts(ctx context.Context, rc *reqCtx) (*sdk.ListPromptsResult, error) {
	ps, err := relayed(ctx, h, rc, capPrompts, func(ctx context.Context, cs *sdk.ClientSession) iter.Seq2[*sdk.Prompt, error] {
		return cs.Prompts(ctx, nil)
	}, func(p *sdk.Prompt) string { return promptPrefix + p.Name }, func(server string, p *sdk.Prompt) {
		p.Name = server + Separator + p.Name
	})
	if err != nil {
		return nil, err
	}
	return &sdk.ListPromptsResult{Prompts: ps, Cacheable: perKey()}, nil
}

// getPrompt answers prompts/get.
func (h *Handler) getPrompt(ctx context.Context, rc *reqCtx, req sdk.Request, ev *Event) (sdk.Result, error) {
	params, ok := req.GetParams().(*sdk.GetPromptParams)
	if !ok || params == nil || params.Name == "" {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "prompts/get: params.name is required", nil)
	}
	srv, name, err := rc.checkGrant(grantPrompt, params.Name)
	if srv != nil {
		ev.Server = srv.ID
	}
	if err != nil {
		return nil, err
	}
	var res *sdk.GetPromptResult
	err = h.up.do(ctx, srv, rc.token, func(ctx context.Context, cs *sdk.ClientSession) error {
		p := *params
		p.Meta, p.Name = forwardMeta(params.Meta), name
		var err error
		res, err = cs.GetPrompt(ctx, &p)
		return err
	})
	if err != nil {
		return nil, upstreamError(srv.ID, err)
	}
	if rc.single == nil {
		for _, m := range res.Messages {
			if m != nil {
				wrapContent(srv.ID, m.Content)
			}
		}
	}
	return res, nil
}

// perKey is the cache hint of the gateway's lists and reads (2026-07-28
// cacheable results): what a key sees depends on its grants, which may
// change at any moment, so "private" (no shared cache may serve it to
// another key) and a TTL of 0 (stale at once: ask again). The official Go
// SDK fills an empty scope in only for the results of its own handlers;
// these are the gateway's, and a client that validates the field (the v2
// TypeScript client) refuses an empty one.
func perKey() sdk.Cacheable { return sdk.Cacheable{TTLMs: 0, CacheScope: "private"} }

// complete answers completion/complete: relayed to the server of the prompt
// or resource template the reference names (SERVER__PROMPT, or a
// tollgate://SERVER/ template, on /mcp), under the grant that covers it. A
// server that does not offer completions completes nothing.
func (h *Handler) complete(ctx context.Context, rc *reqCtx, req sdk.Request, ev *Event) (sdk.Result, error) {
	params, ok := req.GetParams().(*sdk.CompleteParams)
	if !ok || params == nil || params.Ref == nil {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "completion/complete: params.ref is required", nil)
	}
	ref := *params.Ref
	var srv *Server
	var err error
	switch ref.Type {
	case "ref/prompt":
		srv, ref.Name, err = rc.checkGrant(grantPrompt, ref.Name)
	case "ref/resource":
		srv, ref.URI, err = rc.checkGrant(grantResource, ref.URI)
	default:
		return nil, rpcError(jsonrpc.CodeInvalidParams, "completion/complete: unknown ref type "+strconvQuote(ref.Type), nil)
	}
	if srv != nil {
		ev.Server = srv.ID
	}
	if err != nil {
		return nil, err
	}
	res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}
	err = h.up.do(ctx, srv, rc.token, func(ctx context.Context, cs *sdk.ClientSession) error {
		if capsOf(cs.InitializeResult().Capabilities)&capCompletions == 0 {
			return nil
		}
		p := *params
		p.Meta, p.Ref = forwardMeta(params.Meta), &ref
		r, err := cs.Complete(ctx, &p)
		if err == nil {
			res = r
		}
		return err
	})
	if err != nil {
		return nil, upstreamError(srv.ID, err)
	}
	return res, nil
}

// wrapContent rewrites the resource URIs in a content block of /mcp.
func wrapContent(server string, c sdk.Content) {
	switch c := c.(type) {
	case *sdk.ResourceLink:
		c.URI = wrapURI(server, c.URI)
	case *sdk.EmbeddedResource:
		if c.Resource != nil && c.Resource.URI != "" {
			c.Resource.URI = wrapURI(server, c.Resource.URI)
		}
	}
}

// notGranted is the refusal of what (a tool, prompt or resource) when the
// caller's grants do not cover name of server; nil when they do.
func notGranted(c *Caller, server, name, what string) error {
	ok, missing := c.Allowed(server, name)
	if ok {
		return nil
	}
	grant := server + "/" + name
	return rpcError(CodeToolNotGranted,
		fmt.Sprintf("%s is not granted: %s has no mcp-tools grant matching %q", what, missing, grant),
		map[string]any{"missing_grant": grant, "level": missing})
}

func findServer(servers []*Server, id string) *Server {
	for _, s := range servers {
		if s.ID == id {
			return s
		}
	}
	return nil
}
