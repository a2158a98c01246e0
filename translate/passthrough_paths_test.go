package translate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPassthroughPaths(t *testing.T) {
	for _, c := range []struct {
		path, provider, rest string
	}{
		{"/passthrough/oai/v1/images/generations?x=1", "oai", "/v1/images/generations?x=1"},
		{"/passthrough/oai", "oai", "/"},
		{"/passthrough/oai?x=1", "oai", "/?x=1"},
	} {
		p, r := PassthroughSplit(c.path)
		require.Equal(t, c.provider, p, c.path)
		require.Equal(t, c.rest, r, c.path)
	}
	for p, ok := range map[string]bool{
		"/v1/images/generations":   true,
		"/":                        true,
		"/v1/files/":               true,
		"/v1/files/../admin":       false,
		"/v1/files/%2e%2e/admin":   false,
		"/v1/files/%2E%2E/admin":   false,
		"/v1/files%2fadmin":        false,
		"/v1//files":               false,
		"/v1/./files":              false,
		"/v1/files\\\\..\\\\admin": false,
	} {
		require.Equal(t, ok, CleanPassthroughPath(p), p)
	}
}
