package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	adminv1gw "github.com/tollgate-ai/tollgate/proto/gw/tollgate/admin/v1"
)

// OpenAPIPath is where the admin port serves the OpenAPI document of the REST API.
const OpenAPIPath = "/openapi.json"

// restRegistrations are the generated grpc-gateway registrations, one per service.
var restRegistrations = []func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
	adminv1gw.RegisterKeyServiceHandler,
	adminv1gw.RegisterUserServiceHandler,
	adminv1gw.RegisterTeamServiceHandler,
	adminv1gw.RegisterOrgServiceHandler,
	adminv1gw.RegisterCustomerServiceHandler,
	adminv1gw.RegisterTagServiceHandler,
	adminv1gw.RegisterProviderServiceHandler,
	adminv1gw.RegisterDeploymentServiceHandler,
	adminv1gw.RegisterModelServiceHandler,
	adminv1gw.RegisterPriceServiceHandler,
	adminv1gw.RegisterGuardrailServiceHandler,
	adminv1gw.RegisterSpendServiceHandler,
	adminv1gw.RegisterAuditServiceHandler,
	adminv1gw.RegisterAdminCredentialServiceHandler,
	adminv1gw.RegisterConfigServiceHandler,
	adminv1gw.RegisterReconcileServiceHandler,
	adminv1gw.RegisterMCPServiceHandler,
	adminv1gw.RegisterAlertServiceHandler,
}

// RESTHandler returns the REST/JSON admin API: every RPC as
// POST /tollgate.admin.v1.<Service>/<Method> with the request message as a JSON
// body (proto field names), answered with the response message as JSON. Each
// call is forwarded over conn, a client connection to the gRPC admin server,
// so it goes through the same interceptors: authentication
// (`Authorization: Bearer <admin key>`), the role table, validation, audit and
// the gRPC status codes, mapped to HTTP statuses by grpc-gateway (401, 403, 400,
// 404, 409 …) with a body {"code", "message", "details"}.
func RESTHandler(ctx context.Context, conn *grpc.ClientConn) (http.Handler, error) {
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.JSONPb{
			MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
			UnmarshalOptions: protojson.UnmarshalOptions{},
		}),
		// Only Authorization reaches the admin server (grpc-gateway forwards it
		// always); no other header becomes gRPC metadata.
		runtime.WithIncomingHeaderMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithOutgoingHeaderMatcher(func(string) (string, bool) { return "", false }),
	)
	for _, register := range restRegistrations {
		if err := register(ctx, mux, conn); err != nil {
			return nil, fmt.Errorf("admin: REST API: %w", err)
		}
	}
	return mux, nil
}

// HTTPHandler is the HTTP side of the admin port: the REST API, the OpenAPI
// document at OpenAPIPath and the web console under /ui/.
func (s *Server) HTTPHandler(ctx context.Context, conn *grpc.ClientConn) (http.Handler, error) {
	rest, err := RESTHandler(ctx, conn)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+OpenAPIPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(adminv1gw.OpenAPI)
	})
	if s.sessions == nil {
		return nil, errors.New("admin: the store keeps no console sessions (store.Sessions)")
	}
	con := newConsole(conn, s.sessions, s.now)
	con.register(mux)
	mux.Handle("/", con.withSession(rest))
	return mux, nil
}

// ServeHTTP serves the HTTP side of the admin port on l until ctx ends or l is
// closed. grpcAddr is the admin port itself: the REST API reaches the gRPC
// services through it, like any other client (opts may replace its dialer).
func (s *Server) ServeHTTP(ctx context.Context, l net.Listener, grpcAddr string, opts ...grpc.DialOption) error {
	conn, err := grpc.NewClient("passthrough:///"+grpcAddr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		return fmt.Errorf("admin: REST API client: %w", err)
	}
	defer conn.Close()
	h, err := s.HTTPHandler(ctx, conn)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	err = srv.Serve(l)
	// The listener is closed (the gRPC server stopped, or ctx ended): finish
	// the requests in flight, briefly, and close the kept-alive connections.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpDrainTimeout)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// httpDrainTimeout bounds the wait for in-flight HTTP requests at shutdown.
const httpDrainTimeout = 5 * time.Second
