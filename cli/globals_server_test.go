package cli_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/cli"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// The global flags (--addr, --admin-key, -o) work before the noun, between the
// noun and the verb, and after the verb.
func TestGlobalFlagsBeforeOrAfterTheVerb(t *testing.T) {
	s := startServer(t, memstore.New())
	_, err := s.run(t, "org", "create", "acme")
	require.NoError(t, err)
	for name, args := range map[string][]string{
		"after the verb":        {"org", "list", "--addr", s.addr, "--admin-key", s.key, "-o", "json"},
		"before the noun":       {"--addr", s.addr, "--admin-key=" + s.key, "-o", "json", "org", "list"},
		"between noun and verb": {"org", "--addr=" + s.addr, "-o=json", "--admin-key", s.key, "list"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errOut bytes.Buffer
			require.NoError(t, cli.Main(ctx, args, &out, &errOut), errOut.String())
			require.Contains(t, out.String(), `"acme"`, "json output listing the org")
		})
	}
}
