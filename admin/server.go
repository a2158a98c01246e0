package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/validator"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/tollgate-ai/tollgate/internal/secret"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// Server implements every service of tollgate.admin.v1 over a store.
type Server struct {
	adminv1.UnimplementedKeyServiceServer
	adminv1.UnimplementedUserServiceServer
	adminv1.UnimplementedTeamServiceServer
	adminv1.UnimplementedTagServiceServer
	adminv1.UnimplementedOrgServiceServer
	adminv1.UnimplementedCustomerServiceServer
	adminv1.UnimplementedProviderServiceServer
	adminv1.UnimplementedDeploymentServiceServer
	adminv1.UnimplementedModelServiceServer
	adminv1.UnimplementedPriceServiceServer
	adminv1.UnimplementedSpendServiceServer
	adminv1.UnimplementedAuditServiceServer
	adminv1.UnimplementedAdminCredentialServiceServer
	adminv1.UnimplementedConfigServiceServer
	adminv1.UnimplementedReconcileServiceServer
	adminv1.UnimplementedMCPServiceServer
	adminv1.UnimplementedGuardrailServiceServer
	adminv1.UnimplementedAlertServiceServer

	st       Store
	sessions store.Sessions // the console's sessions; nil when st keeps none
	routing  RoutingStates  // nil: deployment states unknown (routing.go)
	sealer   *secret.Sealer
	log      *slog.Logger
	now      func() time.Time
	health   *health.Server
}

// Option configures a Server.
type Option func(*Server)

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithClock sets the clock (default: time.Now).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// New returns a Server over st. sealer seals provider credentials; when nil,
// requests carrying a credential fail with FailedPrecondition.
func New(st Store, sealer *secret.Sealer, opts ...Option) *Server {
	s := &Server{st: st, sealer: sealer, log: slog.Default(), now: time.Now, health: health.NewServer()}
	for _, o := range opts {
		o(s)
	}
	s.sessions, _ = st.(store.Sessions)
	return s
}

// Register registers every admin service, gRPC health and server reflection on g.
func (s *Server) Register(g *grpc.Server) {
	adminv1.RegisterKeyServiceServer(g, s)
	adminv1.RegisterUserServiceServer(g, s)
	adminv1.RegisterTeamServiceServer(g, s)
	adminv1.RegisterOrgServiceServer(g, s)
	adminv1.RegisterCustomerServiceServer(g, s)
	adminv1.RegisterTagServiceServer(g, s)
	adminv1.RegisterProviderServiceServer(g, s)
	adminv1.RegisterMCPServiceServer(g, s)
	adminv1.RegisterDeploymentServiceServer(g, s)
	adminv1.RegisterModelServiceServer(g, s)
	adminv1.RegisterPriceServiceServer(g, s)
	adminv1.RegisterSpendServiceServer(g, s)
	adminv1.RegisterAuditServiceServer(g, s)
	adminv1.RegisterAdminCredentialServiceServer(g, s)
	adminv1.RegisterConfigServiceServer(g, s)
	adminv1.RegisterReconcileServiceServer(g, s)
	adminv1.RegisterGuardrailServiceServer(g, s) // guardrails.go
	adminv1.RegisterAlertServiceServer(g, s)     // alerts.go
	healthpb.RegisterHealthServer(g, s.health)
	for name := range g.GetServiceInfo() {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	reflection.Register(g)
}

// ServerOptions is the interceptor chain of the admin API: logging (slog, no
// payloads), recovery (a panic becomes Internal), auth (Bearer admin secret and
// the role table) and validation (InvalidArgument naming the field).
func ServerOptions(s *Server) []grpc.ServerOption {
	logger := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		s.log.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	logOpts := []logging.Option{logging.WithLogOnEvents(logging.FinishCall)}
	recoverOpts := []recovery.Option{recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		s.log.ErrorContext(ctx, "admin: panic in handler", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
		return status.Error(codes.Internal, "internal error (see the server log)")
	})}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(
			logging.UnaryServerInterceptor(logger, logOpts...),
			recovery.UnaryServerInterceptor(recoverOpts...),
			auth.UnaryServerInterceptor(s.authenticate),
			validator.UnaryServerInterceptor(),
		),
		grpc.ChainStreamInterceptor(
			logging.StreamServerInterceptor(logger, logOpts...),
			recovery.StreamServerInterceptor(recoverOpts...),
			auth.StreamServerInterceptor(s.authenticate),
			validator.StreamServerInterceptor(),
		),
	}
}

// record appends an audit entry for a change made by the caller. detail is
// encoded as JSON; callers pass values without secrets.
func (s *Server) record(ctx context.Context, action string, kind store.Kind, target string, detail any) error {
	return recordAudit(ctx, s.st, s.now(), actorOf(ctx), action, kind, target, detail)
}

func recordAudit(ctx context.Context, a store.Audit, at time.Time, actor, action string, kind store.Kind, target string, detail any) error {
	e := store.AuditEntry{At: at.UTC(), Actor: actor, Action: action, Kind: kind, Target: target}
	if detail != nil {
		b, err := json.Marshal(detail)
		if err != nil {
			return fmt.Errorf("admin: audit detail: %w", err)
		}
		e.Detail = string(b)
	}
	if err := a.AppendAudit(ctx, e); err != nil {
		return fmt.Errorf("admin: audit: %w", err)
	}
	return nil
}

// get reads one entity, mapping store.ErrNotFound to a message naming it.
func get[T store.Entity](ctx context.Context, c store.Config, id string) (T, int64, error) {
	v, ver, err := store.Get[T](ctx, c, id)
	if errors.Is(err, store.ErrNotFound) {
		return v, 0, fmt.Errorf("%s %q %w", store.KindOf[T](), id, ErrNotFound)
	}
	return v, ver, err
}

// create writes a new entity, failing with ErrExists when the id is taken.
func create[T store.Entity](ctx context.Context, c store.Config, id string, v *T) error {
	_, err := store.Put(ctx, c, id, v, 0)
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%s %q %w", store.KindOf[T](), id, ErrExists)
	}
	return err
}

// update reads, changes and writes an entity with optimistic concurrency,
// retrying when another writer got in between.
func update[T store.Entity](ctx context.Context, c store.Config, id string, change func(*T) error) (T, error) {
	var zero T
	for range 8 {
		v, ver, err := get[T](ctx, c, id)
		if err != nil {
			return zero, err
		}
		if err := change(&v); err != nil {
			return zero, err
		}
		_, err = store.Put(ctx, c, id, &v, ver)
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return zero, err
		}
	}
	return zero, fmt.Errorf("%s %q: %w", store.KindOf[T](), id, ErrBusy)
}

// remove deletes an entity, naming it when absent.
func remove[T store.Entity](ctx context.Context, c store.Config, id string) error {
	err := c.Delete(ctx, store.KindOf[T](), id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%s %q %w", store.KindOf[T](), id, ErrNotFound)
	}
	return err
}

// defaultPageSize is the page size when a request gives none.
const defaultPageSize = 100

// listPage returns one page of entities of a kind that match keep, after the
// page token, and the token of the next page ("" on the last page).
func listPage[T store.Entity](ctx context.Context, c store.Config, token string, size int32, keep func(*T) bool) ([]T, string, error) {
	after, err := decodeToken(token)
	if err != nil {
		return nil, "", err
	}
	n := int(size)
	if n <= 0 {
		n = defaultPageSize
	}
	out := make([]T, 0, n)
	var lastID string
	batch := max(n+1, 64)
	for {
		objs, err := c.List(ctx, store.KindOf[T](), after, batch)
		if err != nil {
			return nil, "", err
		}
		for _, o := range objs {
			var v T
			if err := json.Unmarshal(o.Doc, &v); err != nil {
				return nil, "", fmt.Errorf("admin: decode %s %q: %w", o.Kind, o.ID, err)
			}
			after = o.ID
			if keep != nil && !keep(&v) {
				continue
			}
			if len(out) == n {
				return out, encodeToken(lastID), nil
			}
			out = append(out, v)
			lastID = o.ID
		}
		if len(objs) < batch {
			return out, "", nil
		}
	}
}

func encodeToken(after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(after))
}

func decodeToken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", fmt.Errorf("%w page_token: not a token this API returned", ErrInvalid)
	}
	return string(b), nil
}
