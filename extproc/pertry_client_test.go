package extproc

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/routing"
)

// mixedGroup is a group whose first deployment (by weight) is of one
// provider kind and whose second is of the other: a retry changes the
// provider, so the second try must undo all of the first one's headers.
func mixedGroup(anthropicFirst bool) *routing.Group {
	a, b := openAIDep("gpt", "oa"), anthropicDep("gpt", "an")
	if anthropicFirst {
		a, b = b, a
	}
	a.Weight, a.AllowedFails, b.AllowedFails = preferred, 100, 100
	return &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{a, b}}
}

// TestPerTryRetryWritesItsRequestFromScratch: on Envoy's shared header map
// the second try sees the first try's provider credential, path,
// content-length and version headers; it authenticates from the signed
// client header and sends exactly its own provider's request, the client's
// anthropic-beta restored.
func TestPerTryRetryWritesItsRequestFromScratch(t *testing.T) {
	msgs := `{"model":"gpt","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	beta := extprocfilter.Header{Key: "anthropic-beta", Value: "tools-2024-04-04"}
	version := extprocfilter.Header{Key: "anthropic-version", Value: "2023-06-01"}
	t.Run("anthropic then openai", func(t *testing.T) {
		e, _, rt, up := perTryEnv(t, mixedGroup(true))
		up.answer["an"], up.answer["oa"] = failing(500), func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, chatOK) }
		got := rt.do(t, post("/v1/chat/completions", clientKey, chatBody))
		require.Equal(t, 200, got.Status, string(got.Body))
		require.Equal(t, []string{"an", "oa"}, rt.tries)
		first, second := rt.seen[0].Headers, rt.seen[1].Headers
		require.Equal(t, "/v1/messages", first.Value(":path"))
		require.Equal(t, anthropicKey, first.Value("x-api-key"))
		require.Equal(t, "/v1/chat/completions", second.Value(":path"), "the client's path, not the first try's")
		require.Equal(t, "Bearer "+openAIKey, second.Value("authorization"))
		for _, k := range []string{"x-api-key", "anthropic-version", "anthropic-beta"} {
			require.False(t, second.Has(k), "%s of the first try is gone", k)
		}
		require.Equal(t, strconv.Itoa(len(rt.seen[1].Body)), second.Value("content-length"))
		require.NotContains(t, second.Value(hdrClient), clientKey, "the signed header is opaque")
		recs := e.acct.waitRecords(t, 2)
		require.Equal(t, "oa", recs[1].Deployment)
		require.True(t, strings.HasPrefix(recs[1].RequestID, recs[0].RequestID+"-2-"), recs[1].RequestID)
	})
	t.Run("openai then anthropic, an Anthropic client", func(t *testing.T) {
		_, _, rt, up := perTryEnv(t, mixedGroup(false))
		up.answer["oa"], up.answer["an"] = failing(503), func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, messagesOK) }
		req := post("/v1/messages", "", msgs, extprocfilter.Header{Key: "x-api-key", Value: clientKey}, beta, version)
		got := rt.do(t, req)
		require.Equal(t, 200, got.Status, string(got.Body))
		require.Equal(t, []string{"oa", "an"}, rt.tries)
		first, second := rt.seen[0].Headers, rt.seen[1].Headers
		require.False(t, first.Has("anthropic-beta"), "an OpenAI try removes it")
		require.Equal(t, "Bearer "+openAIKey, first.Value("authorization"))
		require.Equal(t, "/v1/messages", second.Value(":path"))
		require.Equal(t, anthropicKey, second.Value("x-api-key"))
		require.False(t, second.Has("authorization"), "the first try's credential is gone")
		require.Equal(t, beta.Value, second.Value("anthropic-beta"), "the client's, restored")
		require.Equal(t, version.Value, second.Value("anthropic-version"))
		require.Equal(t, strconv.Itoa(len(rt.seen[1].Body)), second.Value("content-length"))
	})
}

// TestPerTryClientHeaderIsChecked: a try honours only a client header the
// router-level stream signed with the key's stored hash, unexpired; a
// client's own is replaced at the router; a try without one authenticates
// the client's credential (a router of an older processor).
func TestPerTryClientHeaderIsChecked(t *testing.T) {
	e, clk, rt, up := perTryEnv(t, mixedGroup(false))
	up.answer["oa"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, chatOK) }
	got := rt.do(t, post("/v1/chat/completions", clientKey, chatBody, extprocfilter.Header{Key: hdrClient, Value: "forged.forged"}))
	require.Equal(t, 200, got.Status, string(got.Body))
	signed := rt.seen[0].Headers.Value(hdrClient)
	require.NotEqual(t, "forged.forged", signed, "the router-level stream overwrites a client's")
	enc, mac, _ := strings.Cut(signed, ".")
	payload, err := base64.RawURLEncoding.DecodeString(enc)
	require.NoError(t, err)

	// A second try as Envoy would send it: the map holds the first try's
	// provider credential, not the client's key.
	try := func(client string, creds ...extprocfilter.Header) *extprocfiltertest.Response {
		t.Helper()
		h := post("/v1/chat/completions", "", chatBody, creds...)
		h.Headers = append(h.Headers,
			extprocfilter.Header{Key: RouteHeader, Value: "oa"},
			extprocfilter.Header{Key: envoy.AttemptCountHeader, Value: "2"},
			extprocfilter.Header{Key: envoy.ReservedHeader, Value: rt.seen[0].Headers.Value(envoy.ReservedHeader)})
		if client != "" {
			h.Headers = append(h.Headers, extprocfilter.Header{Key: hdrClient, Value: client})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := extprocfiltertest.DoWith(ctx, e.client, h, up.upstream,
			extprocfilter.WithRequestAttributes(map[string]any{envoy.TryAttribute: "oa"}))
		require.NoError(t, err)
		return r
	}
	provider := extprocfilter.Header{Key: "authorization", Value: "Bearer " + openAIKey}
	require.Equal(t, 200, try(signed, provider).Status, "the signed header authenticates")

	other := strings.Replace(string(payload), "k1", "k2", 1) // another key id, same mac
	for name, v := range map[string]string{
		"forged mac":       enc + "." + mac[:len(mac)-2] + "AA",
		"another key's id": base64.RawURLEncoding.EncodeToString([]byte(other)) + "." + mac,
		"not a header":     "garbage",
	} {
		got := try(v, provider)
		require.Equal(t, 401, got.Status, name)
		require.NotNil(t, got.LocalReply, name)
	}
	require.Equal(t, 200, try("", extprocfilter.Header{Key: "authorization", Value: "Bearer " + clientKey}).Status,
		"no header: the client's credential, as before")
	require.Equal(t, 401, try("", provider).Status, "no header and no client key")

	clk.advance(routing.ClientHeaderTTL + time.Minute)
	require.Equal(t, 401, try(signed, provider).Status, "expired")
}

// TestFallbackRedirectOfALaterTry: the first try fails with a 503 and is
// retried on an Anthropic deployment, whose context-window refusal is
// redirected to the context-window fallback: the header map the redirect
// starts from holds the first try's provider credential, so the recreated
// request is authenticated from the signed client header (with the try's
// token), never from a provider's key.
func TestFallbackRedirectOfALaterTry(t *testing.T) {
	oa, an := openAIDep("gpt", "oa"), anthropicDep("gpt", "an")
	oa.Weight, oa.AllowedFails, an.AllowedFails = preferred, 100, 100
	e, _, rt, up := perTryEnv(t,
		&routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{oa, an}, ContextWindowFallbacks: []string{"big"}},
		&routing.Group{Name: "big", Retries: 2, Deployments: []*routing.Deployment{openAIDep("big", "big")}},
	)
	up.answer["oa"] = failing(503)
	up.answer["an"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(400, contextWindowRefusal) }
	up.answer["big"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, chatOK) }
	got := rt.do(t, post("/v1/chat/completions", clientKey, chatBody, extprocfilter.Header{Key: "x-tollgate-customer", Value: "c1"}))
	require.Equal(t, 200, got.Status, string(got.Body))
	require.Equal(t, "big", got.Headers.Value(hdrDeployment))
	require.Equal(t, []string{"oa", "an", "big"}, rt.tries)
	fwd := got.Forwarded.Headers
	require.Equal(t, "/v1/chat/completions", fwd.Value(":path"))
	require.Equal(t, "Bearer "+openAIKey, fwd.Value("authorization"), "big's own credential")
	for _, k := range []string{"x-api-key", "anthropic-version", hdrClient, envoy.ReservedHeader, hdrRetry, "x-tollgate-customer"} {
		require.False(t, fwd.Has(k), k)
	}
	recs := e.acct.waitRecords(t, 3)
	require.Equal(t, []string{"oa", "an", "big"}, []string{recs[0].Deployment, recs[1].Deployment, recs[2].Deployment})
	require.Equal(t, "k1", recs[2].Principal.KeyID)
}
