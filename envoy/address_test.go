package envoy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidHost(t *testing.T) {
	for host, want := range map[string]bool{
		"api.openai.com":          true,
		"localhost":               true,
		"example.com.":            true,
		"127.0.0.1":               true,
		"::1":                     true,
		"":                        false,
		"-bad.example":            false,
		"bad_host":                false,
		"a b":                     false,
		strings.Repeat("a.", 127): false, // 254 bytes
	} {
		require.Equal(t, want, ValidHost(host), "%q", host)
	}
}

func TestValidSocketPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/run/tollgate.sock":           true,
		"@abstract":                    true,
		"/" + strings.Repeat("a", 106): true,
		"/" + strings.Repeat("a", 107): false,
		"/tmp/nul\x00":                 false,
		"/tmp/\xff":                    false,
	} {
		require.Equal(t, want, ValidSocketPath(path), "%q", path)
	}
}
