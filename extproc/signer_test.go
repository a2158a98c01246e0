package extproc

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// TestSignerSignsTheFinalBody: a deployment's signer is called after the
// translation with the bytes that go upstream, and its headers are set; a
// signing failure is a 502 that names no secret and is settled as failed.
func TestSignerSignsTheFinalBody(t *testing.T) {
	e := newTestEnv(t)
	var signed translate.UpstreamRequest
	e.cat.targets["claude-bedrock"] = &translate.Target{
		Model: "claude-bedrock", Deployment: "bedrock-claude", Provider: translate.ProviderBedrock,
		Host: "bedrock-runtime.us-east-1.amazonaws.com", ProviderModel: "anthropic.claude-v2:1", Price: testPrice,
		Signer: translate.RequestSignerFunc(func(_ context.Context, r *translate.UpstreamRequest) ([][2]string, error) {
			signed = *r
			return [][2]string{{"authorization", "AWS4-HMAC-SHA256 test"}, {"x-amz-date", "20250102T030405Z"}}, nil
		}),
	}
	up := &recorder{resp: jsonResponse(200, `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4}}`)}
	got := e.do(t, post("/v1/chat/completions", clientKey, `{"model":"claude-bedrock","messages":[{"role":"user","content":"hi"}]}`), up.upstream)
	require.Equal(t, 200, got.Status, string(got.Body))
	fwd := up.last(t)
	require.Equal(t, "AWS4-HMAC-SHA256 test", fwd.Headers.Value("authorization"))
	require.Equal(t, "20250102T030405Z", fwd.Headers.Value("x-amz-date"))
	require.Equal(t, "/model/anthropic.claude-v2%3A1/converse", fwd.Headers.Value(":path"))
	require.Equal(t, string(fwd.Body), string(signed.Body), "the signature covers the body sent")
	require.Equal(t, "/model/anthropic.claude-v2%3A1/converse", signed.Path)
	require.Equal(t, "bedrock-runtime.us-east-1.amazonaws.com", signed.Host)
	require.Equal(t, kernel.Usage{Input: 3, Output: 1}, e.acct.Records()[0].Usage)

	e.cat.targets["claude-bedrock"].Signer = translate.RequestSignerFunc(func(context.Context, *translate.UpstreamRequest) ([][2]string, error) {
		return nil, errors.New("no credentials")
	})
	got = e.do(t, post("/v1/chat/completions", clientKey, `{"model":"claude-bedrock","messages":[{"role":"user","content":"hi"}]}`), up.upstream)
	require.Equal(t, 502, got.Status)
	require.Contains(t, string(got.Body), "could not sign")
	require.Len(t, up.got, 1, "nothing unsigned goes upstream")
	require.Equal(t, kernel.StatusFailed, e.acct.Records()[1].Status)
}
