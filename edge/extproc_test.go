package edge

import (
	"net/http"
	"strings"
	"testing"
	"time"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
)

// scriptedProc misbehaves on demand, by the x-pick header: "slow" never
// answers the headers, "fail" ends the stream with a gRPC error; anything
// else behaves like fakeProc.
type scriptedProc struct {
	*fakeProc
}

func (p *scriptedProc) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	req, err := stream.Recv()
	if err != nil {
		return err
	}
	h := extprocfilter.HeadersFromProto(req.GetRequestHeaders().GetHeaders())
	switch h.Value("x-pick") {
	case "slow":
		<-stream.Context().Done()
		return stream.Context().Err()
	case "fail":
		return status.Error(codes.Unavailable, "processor down")
	}
	return p.fakeProc.Process(&replayStream{ExternalProcessor_ProcessServer: stream, first: req})
}

// replayStream hands a received message back to Recv once.
type replayStream struct {
	extprocv3.ExternalProcessor_ProcessServer
	first *extprocv3.ProcessingRequest
}

func (r *replayStream) Recv() (*extprocv3.ProcessingRequest, error) {
	if m := r.first; m != nil {
		r.first = nil
		return m, nil
	}
	return r.ExternalProcessor_ProcessServer.Recv()
}

// TestExtProcFilterSettings: the filter settings come from the listener's
// ext_proc config (message_timeout, status_on_error, processing_mode).
func TestExtProcFilterSettings(t *testing.T) {
	a := upstream(t, named("a"))
	ep := extProcFilter()
	ep.MessageTimeout = durationpb.New(100 * time.Millisecond)
	ep.StatusOnError = &typev3.HttpStatus{Code: typev3.StatusCode_BadGateway}
	// A streamed request body: the upstream request starts before the body
	// is complete (routing on the headers reply).
	ep.ProcessingMode.RequestBodyMode = extprocfilterv3.ProcessingMode_STREAMED
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, ep), routes(deployment{id: "a", host: "h"}), upstreamCluster(t, "a", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(&scriptedProc{fakeProc: newFakeProc()})), x)
	url := "http://" + e.Addr().String() + "/v1/chat/completions"
	c := client(t)

	t0 := time.Now()
	resp, _ := post(t, c, url, "slow", `{}`)
	require.Equal(t, http.StatusGatewayTimeout, resp.StatusCode, "message_timeout")
	require.Less(t, time.Since(t0), 3*time.Second)

	resp, _ = post(t, c, url, "fail", `{}`)
	require.Equal(t, http.StatusBadGateway, resp.StatusCode, "status_on_error")

	// STREAMED request body: fakeProc routes in the body reply, which is too
	// late (the headers went on with the headers reply), so the catch-all
	// answers; a body-less GET routed on the headers reply reaches upstream.
	resp, body := post(t, c, url, "a", strings.Repeat("z", 100))
	require.Equal(t, http.StatusNotFound, resp.StatusCode, body)
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("x-pick", "a")
	resp, err = c.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
