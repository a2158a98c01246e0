package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
)

func TestBedrockRegion(t *testing.T) {
	r, err := bedrockRegion("eu-west-3", "127.0.0.1:9000")
	require.NoError(t, err)
	require.Equal(t, "eu-west-3", r)
	r, err = bedrockRegion("", "bedrock-runtime.us-west-2.amazonaws.com")
	require.NoError(t, err)
	require.Equal(t, "us-west-2", r)
	_, err = bedrockRegion("", "127.0.0.1")
	require.ErrorIs(t, err, errBedrockRegion)
}

func TestAWSSignerStaticKeys(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	s, err := newBedrockSigner(context.Background(),
		`{"access_key_id":"AKIDEXAMPLE","secret_access_key":"`+secret+`","session_token":"tok"}`, "us-east-1",
		upstreamHostHeader("https", "bedrock-runtime.us-east-1.amazonaws.com", 443))
	require.NoError(t, err)
	s.now = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }
	h, err := s.SignRequest(context.Background(), &extproc.UpstreamRequest{
		Method: "POST", Path: "/model/anthropic.claude-v2%3A1/converse", Body: []byte(`{"messages":[]}`),
	})
	require.NoError(t, err)
	got := map[string]string{}
	for _, kv := range h {
		got[kv[0]] = kv[1]
	}
	require.Equal(t, "20250102T030405Z", got["x-amz-date"])
	require.Equal(t, "tok", got["x-amz-security-token"])
	require.True(t, strings.HasPrefix(got["authorization"], "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250102/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature="), got["authorization"])
	require.NotContains(t, got["authorization"], secret)

	// Another body, another signature: the payload is signed.
	h2, err := s.SignRequest(context.Background(), &extproc.UpstreamRequest{
		Method: "POST", Path: "/model/anthropic.claude-v2%3A1/converse", Body: []byte(`{"messages":[1]}`),
	})
	require.NoError(t, err)
	require.NotEqual(t, h[0][1], h2[0][1])

	_, err = newBedrockSigner(context.Background(), `{"access_key_id":"AKID"}`, "us-east-1", "h")
	require.Error(t, err)
	_, err = newBedrockSigner(context.Background(), `not json `+secret, "us-east-1", "h")
	require.Error(t, err)
	require.NotContains(t, err.Error(), secret, "errors never echo the credential")
	require.Equal(t, "127.0.0.1:9000", upstreamHostHeader("http", "127.0.0.1", 9000))
}
