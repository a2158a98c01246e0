package translate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQueryKey(t *testing.T) {
	require.Equal(t, "tg-1", QueryKey("/v1beta/models/m:generateContent?alt=sse&key=tg-1"))
	require.Empty(t, QueryKey("/v1beta/models/m:generateContent"))
	require.Equal(t, "/v1beta/models/m:x?alt=sse&key=[redacted]", RedactQueryKey("/v1beta/models/m:x?alt=sse&key=tg-1"))
	require.Equal(t, "/v1/chat/completions?monkey=1", RedactQueryKey("/v1/chat/completions?monkey=1"))
}

func TestParseMetadataTags(t *testing.T) {
	tags, err := ParseMetadataTags([]byte(`{"model":"m","metadata":{"tollgate_tags":"team=search,env=prod"}}`))
	require.NoError(t, err)
	require.Len(t, tags, 2)
	tags, err = ParseMetadataTags([]byte(`{"model":"m"}`))
	require.NoError(t, err)
	require.Nil(t, tags)
	_, err = ParseMetadataTags([]byte(`{"metadata":{"tollgate_tags":7}}`))
	require.Error(t, err)
}

func TestCredentials(t *testing.T) {
	require.Equal(t, "tg-1", BearerToken("Bearer tg-1"))
	require.Equal(t, "tg-1", BearerToken("bearer  tg-1 "))
	require.Empty(t, BearerToken("Basic abc"))
	require.Empty(t, BearerToken("Bearer "))
	for _, k := range []string{"Authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "Set-Cookie", "proxy-authorization"} {
		require.True(t, IsSensitiveHeader(k), k)
	}
	require.False(t, IsSensitiveHeader("content-type"))
}
