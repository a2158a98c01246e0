package admin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

func TestBootstrap(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		fromEnv []string // successive calls
		created []bool
	}{
		{"generated once", []string{"", ""}, []bool{true, false}},
		{"from env", []string{"tga-from-env", "tga-from-env"}, []bool{true, false}},
		{"generated, then env ignored", []string{"", "tga-from-env", ""}, []bool{true, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New()
			for i, env := range tt.fromEnv {
				sec, created, err := admin.Bootstrap(ctx, st, env)
				require.NoError(t, err)
				require.Equal(t, tt.created[i], created, "call %d", i)
				switch {
				case created && env != "":
					require.Equal(t, env, sec)
				case created:
					require.Regexp(t, `^tga-[0-9A-Za-z]{43}$`, sec)
				default:
					require.Empty(t, sec)
				}
			}
			admins, err := store.List[store.Admin](ctx, st)
			require.NoError(t, err)
			require.Len(t, admins, 1)
			for _, a := range admins {
				require.Equal(t, store.RoleAdmin, a.Role)
				require.Len(t, a.Hash, 64)
			}
		})
	}
}
