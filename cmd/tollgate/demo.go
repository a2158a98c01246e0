package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// demoSetup makes the demo model group `demo` (served by the OpenAI-compatible
// server at upstream) and a demo key with a $5 monthly budget, then prints how to
// call it. The demo key's secret is kept in keyFile so that a restart can print
// it again.
func demoSetup(ctx context.Context, g *gateway.Gateway, upstream, keyFile string, stdout io.Writer) error {
	st := g.Store
	base := strings.TrimSuffix(upstream, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	// The mock serves the Responses API itself, as OpenAI does.
	prov := store.Provider{ID: "demo-mock", Type: store.ProviderOpenAI, BaseURL: base, Credential: g.Sealer.Seal([]byte("sk-demo-upstream")), ResponsesAPI: true}
	if _, err := store.Put(ctx, st, prov.ID, &prov, -1); err != nil {
		return err
	}
	dep := store.Deployment{ID: "demo-mock", Provider: prov.ID, ProviderModel: "mock-gpt", Weight: 1}
	if _, err := store.Put(ctx, st, dep.ID, &dep, -1); err != nil {
		return err
	}
	// The price first: no snapshot ever serves the group unpriced.
	price := store.ModelPrice{ID: "demo", Price: kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}} // $1 / $2 per million tokens
	if _, err := store.Put(ctx, st, price.ID, &price, -1); err != nil {
		return err
	}
	group := store.ModelGroup{ID: "demo", Deployments: []string{dep.ID}, DefaultMaxTokens: 256, Aliases: agentModels}
	if _, err := store.Put(ctx, st, group.ID, &group, -1); err != nil {
		return err
	}

	keySecret, err := demoKey(ctx, st, keyFile)
	if err != nil {
		return err
	}
	if err := demoMCP(ctx, st, upstream); err != nil {
		return err
	}
	if err := g.Refresh(ctx); err != nil { // serve the demo before printing how to call it
		return err
	}
	url := "http://" + g.ListenAddr
	fmt.Fprintf(stdout, `
Tollgate is running.
  data plane   %[1]s   (OpenAI- and Anthropic-compatible)
  admin API    %[2]s   (tollgate key list --addr %[2]s)
  console      http://%[2]s/ui/   (sign in with the admin key)
  demo model   demo → mock provider at %[3]s
               (also answers to claude-*, gpt-*, o*, gemini-*: agents' default models)
  demo key     %[4]s   ($5.00 monthly budget)

Try it:
  curl %[1]s/v1/chat/completions -H "Authorization: Bearer %[4]s" \
    -H "Content-Type: application/json" -d '{"model":"demo","messages":[{"role":"user","content":"Hello"}]}'

  Any OpenAI SDK: OPENAI_BASE_URL=%[1]s/v1 OPENAI_API_KEY=%[4]s
  Anthropic SDK / Claude Code: ANTHROPIC_BASE_URL=%[1]s ANTHROPIC_API_KEY=%[4]s

  MCP: the demo MCP server's tools (echo, add, word_count; $0.001 a call) at %[1]s/mcp
    claude mcp add --transport http tollgate %[1]s/mcp --header "Authorization: Bearer %[4]s"
    curl %[1]s/mcp -H "Authorization: Bearer %[4]s" -H "Content-Type: application/json" \
      -H "Accept: application/json, text/event-stream" -H "MCP-Protocol-Version: 2025-11-25" \
      -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__echo","arguments":{"text":"hi"}}}'

Press Ctrl-C to stop.
`, url, g.AdminAddr, upstream, keySecret)
	return nil
}

func demoKey(ctx context.Context, st store.Store, keyFile string) (string, error) {
	if b, err := os.ReadFile(keyFile); err == nil {
		s := strings.TrimSpace(string(b))
		if k, _, err := store.Get[store.Key](ctx, st, "demo"); err == nil && !k.Revoked {
			for _, h := range k.Hashes {
				if h.Hash == secret.Hash(s) {
					return s, nil
				}
			}
		}
	}
	s := secret.New("tg-")
	budget := kernel.BudgetWindow{Limit: 5 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodMonthly}}
	k := store.Key{
		ID: "demo", Alias: "demo", Prefix: secret.Display(s),
		Hashes:    []store.KeyHash{{Hash: secret.Hash(s)}},
		Limits:    kernel.Limits{Budgets: []kernel.BudgetWindow{budget}},
		CreatedAt: time.Now().UTC(),
	}
	if _, err := store.Put(ctx, st, k.ID, &k, -1); err != nil {
		return "", err
	}
	if err := os.WriteFile(keyFile, []byte(s+"\n"), 0o600); err != nil {
		return "", errors.Join(errors.New("demo key created but not saved"), err)
	}
	return s, nil
}

// agentModels are the demo group's pattern aliases: whatever model Claude
// Code, Codex CLI, gemini-cli or an SDK asks for by default (today's or next
// release's), the demo answers, with no model settings.
var agentModels = []string{"claude-*", "gpt-*", "o*", "gemini-*"}
