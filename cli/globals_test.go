package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHoistGlobalFlags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{"after the verb", []string{"key", "list", "--addr", "a", "-o", "json"}, []string{"key", "list", "--addr", "a", "-o", "json"}},
		{"before the noun", []string{"--addr", "a", "-o=json", "key", "list", "--team", "t"}, []string{"key", "list", "--addr", "a", "-o=json", "--team", "t"}},
		{"between noun and verb", []string{"key", "-admin-key", "s", "get", "k"}, []string{"key", "get", "-admin-key", "s", "k"}},
		{"other flags stay", []string{"key", "create", "--budget", "5", "--addr", "a"}, []string{"key", "create", "--budget", "5", "--addr", "a"}},
		{"no verb", []string{"--addr", "a", "key"}, []string{"key", "--addr", "a"}},
		{"value missing", []string{"key", "list", "--addr"}, []string{"key", "list", "--addr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, hoistGlobalFlags(tc.in))
		})
	}
}
