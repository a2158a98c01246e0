package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/store"
)

func TestPassthroughGrants(t *testing.T) {
	for _, c := range []struct {
		grant, path string
		want        bool
	}{
		{"oai:/v1/images/*", "/v1/images/generations", true},
		{"oai:/v1/images/*", "/v1/images/a/b", false},
		{"oai:/v1/images/*", "/v1/imagesx", false},
		{"oai:/v1/files/**", "/v1/files", true},
		{"oai:/v1/files/**", "/v1/files/f1/content", true},
		{"oai:/v1/files/**", "/v1/filesx", false},
		{"claude:/v1/messages/count_tokens", "/v1/messages/count_tokens", true},
		{"claude:/v1/messages/count_tokens", "/v1/messages", false},
		{"oai:*", "/anything/at/all", true},
	} {
		_, glob, err := store.ParsePassthroughGrant(c.grant)
		require.NoError(t, err, c.grant)
		require.Equal(t, c.want, store.PassthroughGrantMatches(glob, c.path), "%s %s", c.grant, c.path)
	}
	for _, bad := range []string{"/v1/models", "oai:", ":/v1", "oai:v1/models", "oai:/v1/[", ""} {
		_, _, err := store.ParsePassthroughGrant(bad)
		require.Error(t, err, bad)
	}
}
