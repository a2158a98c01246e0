package xds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// fakeProcessor routes every POST whose body names a model to deployment
// "mock" by setting envoy.RouteHeader in the request body reply, the way the
// real processor does (spec R3.3), and continues everything else.
type fakeProcessor struct {
	extprocv3.UnimplementedExternalProcessorServer
	mu      sync.Mutex
	streams int
}

func (p *fakeProcessor) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	p.mu.Lock()
	p.streams++
	p.mu.Unlock()
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp := &extprocv3.ProcessingResponse{}
		cont := &extprocv3.CommonResponse{}
		switch r := req.GetRequest().(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			resp.Response = &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: cont}}
		case *extprocv3.ProcessingRequest_RequestBody:
			var body struct{ Model string }
			if json.Unmarshal(r.RequestBody.GetBody(), &body) == nil && body.Model != "" {
				cont.HeaderMutation = &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{
					Header: &corev3.HeaderValue{Key: envoy.RouteHeader, RawValue: []byte("mock")},
				}}}
				cont.ClearRouteCache = true
			}
			resp.Response = &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: cont}}
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			resp.Response = &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{Response: cont}}
		case *extprocv3.ProcessingRequest_ResponseBody:
			resp.Response = &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: cont}}
		case *extprocv3.ProcessingRequest_RequestTrailers:
			resp.Response = &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}
		case *extprocv3.ProcessingRequest_ResponseTrailers:
			resp.Response = &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}
		default:
			return fmt.Errorf("unexpected ext_proc message %T", r)
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

func serveGRPC(t *testing.T, register func(*grpc.Server), stop func()) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	register(g)
	done := make(chan error, 1)
	go func() { done <- g.Serve(lis) }()
	t.Cleanup(func() {
		stop()
		g.GracefulStop()
		require.NoError(t, <-done)
	})
	return lis.Addr().String()
}

// TestRealEnvoyRoutesThroughExtProc runs a real Envoy with the generated
// bootstrap against this xDS server, a fake processor and a mock provider.
func TestRealEnvoyRoutesThroughExtProc(t *testing.T) {
	bin, err := exec.LookPath("envoy")
	if err != nil {
		t.Skip("SKIPPED, NOT PASSED: no envoy binary on PATH; install Envoy (or use the envoyproxy/envoy image) to run the real-Envoy end-to-end test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"host": r.Host, "path": r.URL.Path, "route": r.Header.Get(envoy.RouteHeader), "body_bytes": len(body),
		})
	}))
	defer upstream.Close()
	upstreamAddr := upstream.Listener.Addr().(*net.TCPAddr)

	proc := &fakeProcessor{}
	procAddr := serveGRPC(t, func(g *grpc.Server) { extprocv3.RegisterExternalProcessorServer(g, proc) }, func() {})
	procTCP, err := net.ResolveTCPAddr("tcp", procAddr)
	require.NoError(t, err)

	s := NewServer(testLogger(t))
	xdsAddr := serveGRPC(t, s.Register, s.Stop)

	listenPort := uint32(testenv.FreePort(t))
	const maxBody = 1 << 20
	require.NoError(t, s.Update(ctx, &Input{
		Listener:            Address{Host: "127.0.0.1", Port: listenPort},
		ExtProc:             Address{Host: "127.0.0.1", Port: uint32(procTCP.Port)},
		MaxRequestBodyBytes: maxBody,
		Upstreams: []Upstream{{
			Deployment: "mock", Scheme: "http", Host: "127.0.0.1", Port: uint32(upstreamAddr.Port),
		}},
	}))

	adminPort := uint32(testenv.FreePort(t))
	bootstrap, err := envoy.Bootstrap(envoy.BootstrapOptions{
		NodeID: "real-envoy-test",
		XDS:    xdsAddr,
		Admin:  fmt.Sprintf("127.0.0.1:%d", adminPort),
	})
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "envoy.yaml")
	require.NoError(t, os.WriteFile(cfg, bootstrap, 0o600))
	var logs syncBuffer
	cmd := exec.CommandContext(ctx, bin, "-c", cfg, "--use-dynamic-base-id", "-l", "info")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Log(logs.String())
		}
	}()

	client := &http.Client{Timeout: 5 * time.Second}
	base := fmt.Sprintf("http://127.0.0.1:%d", listenPort)
	post := func(path string, body []byte) (int, []byte) {
		resp, err := client.Post(base+path, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, nil
		}
		out, _ := io.ReadAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode, out
	}

	// The listener comes up once LDS, RDS and CDS have arrived.
	var status int
	var body []byte
	require.Eventually(t, func() bool {
		status, body = post("/v1/chat/completions", []byte(`{"model":"m"}`))
		return status == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond, "no 200 through Envoy; last status %d body %s", status, body)
	var seen map[string]any
	require.NoError(t, json.Unmarshal(body, &seen))
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d", upstreamAddr.Port), seen["host"])
	require.Equal(t, "/v1/chat/completions", seen["path"])
	require.Equal(t, "mock", seen["route"])

	// No deployment chosen: the catch-all answers 404 with the error JSON.
	status, body = post("/v1/chat/completions", []byte(`{}`))
	require.Equal(t, http.StatusNotFound, status)
	require.JSONEq(t, NotFoundBody, string(body))

	// Above the body limit: 413 from Envoy; at the limit it goes through.
	status, _ = post("/v1/chat/completions", []byte(`{"model":"m","pad":"`+strings.Repeat("x", maxBody)+`"}`))
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	big := []byte(`{"model":"m","pad":"` + strings.Repeat("x", maxBody-64) + `"}`)
	status, body = post("/v1/chat/completions", big)
	require.Equal(t, http.StatusOK, status, string(body))

	proc.mu.Lock()
	require.Positive(t, proc.streams)
	proc.mu.Unlock()

	// The JSON access log names the route and the cluster.
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(logs.String(), "\n") {
			var entry map[string]any
			if json.Unmarshal([]byte(line), &entry) == nil &&
				entry["upstream_cluster"] == "deployment_mock" && entry["route_name"] == "deployment_mock" &&
				entry["request_id"] != nil && entry["status"] != nil {
				return true
			}
		}
		return false
	}, 10*time.Second, 100*time.Millisecond, "no access log line for the routed request")
}
