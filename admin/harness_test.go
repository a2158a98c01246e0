package admin_test

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
	"github.com/tollgate-ai/tollgate/store/postgres"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is an admin server over a real store, reached over bufconn.
type env struct {
	st       store.Store
	sealer   *secret.Sealer
	clock    *clock
	conn     *grpc.ClientConn
	adminKey string
	restBase string // the REST API's URL once rest() started it
}

// storeFactories are the stores every API test runs against.
func storeFactories(t *testing.T) map[string]func(t *testing.T) store.Store {
	t.Helper()
	return map[string]func(t *testing.T) store.Store{
		"memstore": func(t *testing.T) store.Store {
			t.Helper()
			st := memstore.New()
			t.Cleanup(func() { _ = st.Close(context.Background()) })
			return st
		},
		"sqlite": func(t *testing.T) store.Store {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tollgate.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close(context.Background()) })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := postgres.Open(ctx, testenv.FreshPostgres(t))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close(context.Background()) })
			return st
		},
	}
}

func testSealer(t testing.TB) *secret.Sealer {
	t.Helper()
	s, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	return s
}

func newEnv(t testing.TB, st store.Store, opts ...admin.Option) *env {
	t.Helper()
	e := &env{st: st, sealer: testSealer(t), clock: &clock{t: time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)}}
	ctx := context.Background()
	sec, created, err := admin.Bootstrap(ctx, st, "")
	require.NoError(t, err)
	require.True(t, created)
	e.adminKey = sec

	srv := admin.New(st, e.sealer, append([]admin.Option{admin.WithClock(e.clock.Now), admin.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	e.conn = serveGRPC(t, srv)
	return e
}

// serveGRPC serves srv's gRPC API over bufconn and returns a connection to it.
func serveGRPC(t testing.TB, srv *admin.Server) *grpc.ClientConn {
	t.Helper()
	g := grpc.NewServer(admin.ServerOptions(srv)...)
	srv.Register(g)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// as returns a context carrying an admin secret, bounded in time.
func as(t testing.TB, sec string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if sec == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+sec)
}

func (e *env) admin(t *testing.T) context.Context { t.Helper(); return as(t, e.adminKey) }

// credential creates an admin credential with a role and returns its secret.
func (e *env) credential(t *testing.T, role adminv1.AdminRole, team string) string {
	t.Helper()
	resp, err := adminv1.NewAdminCredentialServiceClient(e.conn).CreateAdminCredential(e.admin(t),
		&adminv1.CreateAdminCredentialRequest{Role: role, TeamId: team})
	require.NoError(t, err)
	return resp.GetSecret()
}

// forEachStore runs f against every store.
func forEachStore(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	for name, open := range storeFactories(t) {
		t.Run(name, func(t *testing.T) { f(t, newEnv(t, open(t))) })
	}
}

// requireCode fails unless err has the gRPC code c.
func requireCode(t *testing.T, c codes.Code, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, c.String(), status.Code(err).String(), "error: %v", err)
}
