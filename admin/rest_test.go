package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-ai/tollgate/admin"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// restConn is a grpc.ClientConnInterface that makes every unary call over the
// REST API, as curl would: POST <base>/<full method> with the request as JSON
// and the caller's authorization metadata as the Authorization header. An
// error body becomes a gRPC status error, after checking that its HTTP status
// is the one grpc-gateway maps its code to.
type restConn struct {
	base   string
	client *http.Client
}

func (c restConn) Invoke(ctx context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	body, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(args.(proto.Message))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, bytes.NewReader(body))
	if err != nil {
		return err
	}
	return restReply(c.client, req, reply)
}

// restReply sends req with the caller's authorization metadata as the
// Authorization header and reads the answer into reply, or turns an error
// body into a gRPC status error after checking that its HTTP status is the
// one grpc-gateway maps its code to.
func restReply(client *http.Client, req *http.Request, reply any) error {
	req.Header.Set("Content-Type", "application/json")
	if md, ok := metadata.FromOutgoingContext(req.Context()); ok {
		for _, v := range md.Get("authorization") {
			req.Header.Add("Authorization", v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Code == 0 {
			return fmt.Errorf("REST %s %s: HTTP %d: %s", req.Method, req.URL.Path, resp.StatusCode, b)
		}
		code := codes.Code(e.Code) //nolint:gosec // a gRPC code fits
		if want := runtime.HTTPStatusFromCode(code); want != resp.StatusCode {
			return fmt.Errorf("REST %s %s: HTTP %d for %s, want %d", req.Method, req.URL.Path, resp.StatusCode, code, want)
		}
		return status.Error(code, e.Message)
	}
	return protojson.Unmarshal(b, reply.(proto.Message))
}

func (restConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, errors.New("restConn: streaming is not part of the REST API")
}

// rest serves the admin port's HTTP side over e.conn on 127.0.0.1 and returns
// a connection making calls through it.
func (e *env) rest(t *testing.T) restConn {
	t.Helper()
	if e.restBase == "" {
		srv := admin.New(e.st, e.sealer, admin.WithClock(e.clock.Now), admin.WithLogger(slog.New(slog.DiscardHandler)))
		h, err := srv.HTTPHandler(context.Background(), e.conn)
		require.NoError(t, err)
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		e.restBase = ts.URL
	}
	return restConn{base: e.restBase, client: &http.Client{Timeout: 10 * time.Second}}
}

// transport is the connection a test named by transport ("grpc" or "rest") uses.
func (e *env) transport(t *testing.T, transport string) grpc.ClientConnInterface {
	t.Helper()
	switch transport {
	case "rest":
		return e.rest(t)
	case "resource":
		return e.resource(t)
	}
	return e.conn
}

// TestRESTErrorsAndAudit checks the REST API answers with the gRPC codes as
// HTTP statuses and that its changes are audited under the caller's id.
func TestRESTErrorsAndAudit(t *testing.T) {
	e := newEnv(t, memstore.New())
	c := clientsOn(e.rest(t))

	_, err := c.teams.ListTeams(as(t, ""), &adminv1.ListTeamsRequest{})
	requireCode(t, codes.Unauthenticated, err)
	_, err = c.teams.ListTeams(as(t, "tga-nope"), &adminv1.ListTeamsRequest{})
	requireCode(t, codes.Unauthenticated, err)
	_, err = c.teams.CreateTeam(e.admin(t), &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: "Not An Id!"}})
	requireCode(t, codes.InvalidArgument, err)
	_, err = c.teams.GetTeam(e.admin(t), &adminv1.GetTeamRequest{Id: "nope"})
	requireCode(t, codes.NotFound, err)

	_, err = c.teams.CreateTeam(e.admin(t), &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: "red"}})
	require.NoError(t, err)
	_, err = c.teams.CreateTeam(e.admin(t), &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: "red"}})
	requireCode(t, codes.AlreadyExists, err)
	who, err := c.creds.WhoAmI(e.admin(t), &adminv1.WhoAmIRequest{})
	require.NoError(t, err)
	audit, err := c.audit.ListAudit(e.admin(t), &adminv1.ListAuditRequest{})
	require.NoError(t, err)
	var found bool
	for _, a := range audit.GetEntries() {
		if a.GetTarget() == "red" {
			found = true
			require.Equal(t, who.GetCredential().GetId(), a.GetActor())
		}
	}
	require.True(t, found, "the REST CreateTeam is in the audit log")

	// A body that is not the request message is InvalidArgument.
	resp, err := http.Post(e.restBase+adminv1.TeamService_ListTeams_FullMethodName, "application/json", strings.NewReader("{not json"))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestAdminPort serves gRPC and HTTP on one TCP port (admin.SplitPort) and
// reaches both, plus the OpenAPI document.
func TestAdminPort(t *testing.T) {
	e := newEnv(t, memstore.New())
	srv := admin.New(e.st, e.sealer, admin.WithLogger(slog.New(slog.DiscardHandler)))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := admin.SplitPort(l)
	g := grpc.NewServer(admin.ServerOptions(srv)...)
	srv.Register(g)
	go func() { _ = g.Serve(port.GRPC) }()
	ctx, cancel := context.WithCancel(context.Background())
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.ServeHTTP(ctx, port.HTTP, l.Addr().String()) }()
	t.Cleanup(func() {
		cancel()
		g.Stop()
		require.NoError(t, <-httpDone)
	})

	conn, err := grpc.NewClient("passthrough:///"+l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	viaGRPC, err := adminv1.NewAdminCredentialServiceClient(conn).WhoAmI(e.admin(t), &adminv1.WhoAmIRequest{})
	require.NoError(t, err)

	rc := restConn{base: "http://" + l.Addr().String(), client: &http.Client{Timeout: 10 * time.Second}}
	viaREST, err := adminv1.NewAdminCredentialServiceClient(rc).WhoAmI(e.admin(t), &adminv1.WhoAmIRequest{})
	require.NoError(t, err)
	require.Equal(t, viaGRPC.GetCredential().GetId(), viaREST.GetCredential().GetId())
	require.Equal(t, adminv1.AdminRole_ADMIN_ROLE_ADMIN, viaREST.GetCredential().GetRole())

	resp, err := http.Get("http://" + l.Addr().String() + admin.OpenAPIPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc struct {
		Swagger string                     `json:"swagger"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.Equal(t, "2.0", doc.Swagger)
	require.Contains(t, doc.Paths, adminv1.KeyService_CreateKey_FullMethodName)
	require.Contains(t, doc.Paths, adminv1.SpendService_GetSpendSeries_FullMethodName)
}
