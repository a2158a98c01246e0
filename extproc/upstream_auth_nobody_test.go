package extproc

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// emptyAuthFailure is a provider's 401/403 with no body at all and no
// content-type: the response headers end the stream.
func emptyAuthFailure(status int) func() *extprocfiltertest.UpstreamResponse {
	return func() *extprocfiltertest.UpstreamResponse {
		return &extprocfiltertest.UpstreamResponse{Status: status, Headers: extprocfilter.Headers{{Key: "content-length", Value: "0"}}}
	}
}

// TestUpstreamAuthWithNoBodyIsA502: a provider refusing the gateway's
// credential with a bare 401 or 403 (no body, no content-type) reaches the
// client as a 502 upstream_auth_error in the client's own format (OpenAI
// chat, Responses, Anthropic Messages, Gemini), naming the deployment and
// never the credential, like a 401 with a body; the ledger row is failed, $0,
// with the provider's status.
func TestUpstreamAuthWithNoBodyIsA502(t *testing.T) {
	anthropicHeaders := []extprocfilter.Header{{Key: "anthropic-version", Value: "2023-06-01"}}
	for _, tc := range []struct {
		name, path, body, deployment string
		env                          func(t *testing.T) *testEnv
		extra                        []extprocfilter.Header
		// message and type of the error in the client's shape
		read func(t *testing.T, b []byte) (msg, typ string)
	}{
		{
			name: "openai chat", path: "/v1/chat/completions", body: testPromptBody, deployment: "openai-gpt4o",
			env: func(t *testing.T) *testEnv { return newTestEnv(t) }, read: readOpenAIError,
		},
		{
			name: "responses", path: "/v1/responses", body: `{"model":"gpt-4o","input":"Capital of France?"}`, deployment: "openai-gpt4o",
			env: func(t *testing.T) *testEnv { return newTestEnv(t) }, read: readOpenAIError,
		},
		{
			name: "anthropic messages", path: "/v1/messages", deployment: "anthropic-sonnet",
			body: `{"model":"claude-sonnet","max_tokens":16,"messages":[{"role":"user","content":"Hi"}]}`,
			env:  anthropicEnv, extra: anthropicHeaders,
			read: func(t *testing.T, b []byte) (string, string) {
				var env struct {
					Type  string `json:"type"`
					Error struct{ Type, Message string }
				}
				require.NoError(t, json.Unmarshal(b, &env), string(b))
				require.Equal(t, "error", env.Type)
				return env.Error.Message, env.Error.Type
			},
		},
		{
			name: "gemini", path: "/v1beta/models/gem:generateContent", deployment: "gemini-flash",
			body: `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`,
			env:  geminiEnv,
			read: func(t *testing.T, b []byte) (string, string) {
				var env struct {
					Error struct {
						Code    int
						Message string
						Status  string
					}
				}
				require.NoError(t, json.Unmarshal(b, &env), string(b))
				require.Equal(t, 502, env.Error.Code)
				return env.Error.Message, env.Error.Status
			},
		},
	} {
		for _, status := range []int{401, 403} {
			t.Run(tc.name+"/"+strconv.Itoa(status), func(t *testing.T) {
				e := tc.env(t)
				got := e.do(t, post(tc.path, clientKey, tc.body, tc.extra...), (&recorder{resp: emptyAuthFailure(status)()}).upstream)
				require.Equal(t, 502, got.Status, "not a %d: the client's key is fine: %q", status, got.Body)
				require.Nil(t, got.LocalReply, "the data plane's retry policy sees the 502 (an upstream filter's local reply is not retried)")
				require.Equal(t, "application/json", got.Headers.Value(hdrContentType))
				require.Equal(t, tc.deployment, got.Headers.Value(hdrDeployment))
				msg, typ := tc.read(t, got.Body)
				require.Contains(t, msg, "The provider of deployment `"+tc.deployment+"` rejected the gateway's credentials (HTTP "+strconv.Itoa(status)+")")
				require.Contains(t, msg, "Your API key is fine")
				require.NotEmpty(t, typ)
				for _, secret := range []string{openAIKey, anthropicKey, geminiKey, clientKey} {
					require.NotContains(t, string(got.Body), secret)
				}
				recs := e.acct.Records()
				require.Len(t, recs, 1)
				require.Equal(t, kernel.StatusFailed, recs[0].Status)
				require.Equal(t, status, recs[0].HTTPStatus, "the ledger keeps the provider's answer")
				require.Equal(t, kernel.Usage{}, recs[0].Usage)
			})
		}
	}
}

// readOpenAIError reads an OpenAI error body: message and type (which must
// equal its code, upstream_auth_error).
func readOpenAIError(t *testing.T, b []byte) (string, string) {
	var env struct {
		Error struct {
			Message, Type string
			Code          *string
		}
	}
	require.NoError(t, json.Unmarshal(b, &env), string(b))
	require.Equal(t, translate.TypeUpstreamAuth, env.Error.Type)
	require.NotNil(t, env.Error.Code)
	require.Equal(t, translate.TypeUpstreamAuth, *env.Error.Code)
	return env.Error.Message, env.Error.Type
}

// TestUpstreamAuthWithNoBodyIsRetriedElsewhere: a deployment whose provider
// answers a bare 401 is a failed attempt like a 401 with a body: retried on
// the group's other deployment, with the processor's token and with the data
// plane's retry policy (per-try routing), and cooled down after its allowed
// fails.
func TestUpstreamAuthWithNoBodyIsRetriedElsewhere(t *testing.T) {
	group := func() *routing.Group {
		bad, ok := openAIDep("gpt", "bad-key"), openAIDep("gpt", "ok")
		bad.Weight, bad.AllowedFails = preferred, 2
		return &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{bad, ok}}
	}
	t.Run("token", func(t *testing.T) {
		e, _ := routedEnv(t, group())
		up := newByDeployment()
		up.answer["bad-key"] = emptyAuthFailure(401)
		for range 10 {
			got, _ := e.doRetrying(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
			require.Equal(t, 200, got.Status, string(got.Body))
			require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
		}
		require.Equal(t, 2, up.count("bad-key"), "cooled down after allowed_fails")
	})
	t.Run("per-try", func(t *testing.T) {
		g := group()
		e, _, rt, up := perTryEnv(t, g)
		up.answer["bad-key"] = emptyAuthFailure(401)
		for range 10 {
			got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), rt.upstream)
			require.Equal(t, 200, got.Status, string(got.Body))
			require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
		}
		require.Equal(t, 2, up.count("bad-key"), "cooled down after allowed_fails")
		recs := e.acct.waitRecords(t, 12)
		failed := 0
		for _, r := range recs {
			if r.Deployment == "bad-key" {
				failed++
				require.Equal(t, 401, r.HTTPStatus)
				require.Equal(t, kernel.Usage{}, r.Usage)
			}
		}
		require.Equal(t, 2, failed)

		// The try itself answers 502, a status of the per-try route's
		// retriable_status_codes (xds/pertry.go: 429, 500, 502, 503, 504),
		// not a local reply (which Envoy does not retry); the bare 401 would
		// not be retried by Envoy.
		h := append(post("/v1/chat/completions", clientKey, chatBody).Headers,
			extprocfilter.Header{Key: envoy.AttemptCountHeader, Value: "1"})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		try, err := extprocfiltertest.DoWith(ctx, e.client, &extprocfiltertest.Request{Headers: h, Body: [][]byte{[]byte(chatBody)}},
			up.upstream, extprocfilter.WithRequestAttributes(map[string]any{envoy.TryAttribute: "bad-key"}))
		require.NoError(t, err)
		require.Empty(t, try.Failures)
		require.Nil(t, try.LocalReply)
		require.Equal(t, 502, try.Status, string(try.Body))
		require.Contains(t, string(try.Body), `"code":"upstream_auth_error"`)
	})
}
