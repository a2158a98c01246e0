package extprocfilter_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// errCloseOK makes a fake processor return OK from Process (R1.9).
var errCloseOK = errors.New("close the stream with OK")

// handler is a fake processor's logic: the replies to one request, and
// optionally how to end the stream (errCloseOK, or a gRPC status error).
type handler func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error)

// fakeProcessor is a hand-written ExternalProcessorServer driven by a handler;
// it records what it received and how each stream ended.
type fakeProcessor struct {
	handle handler
	// record keeps a copy of every request (on unless a benchmark turns it off).
	record bool
	// delay, when set, is how long to wait before sending reply i to req.
	delay func(req *extprocv3.ProcessingRequest, i int) time.Duration

	mu   sync.Mutex
	got  []*extprocv3.ProcessingRequest
	ends []error // Recv error that ended each stream, or nil if the handler ended it
	wg   sync.WaitGroup
}

func newFake(h handler) *fakeProcessor { return &fakeProcessor{handle: h, record: true} }

func (f *fakeProcessor) Process(st extprocv3.ExternalProcessor_ProcessServer) error {
	f.wg.Add(1)
	defer f.wg.Done()
	for {
		req, err := st.Recv()
		if err != nil {
			f.ended(err)
			return nil
		}
		herr, err := f.step(req, st.Send)
		if err != nil {
			return err
		}
		if herr != nil {
			f.ended(nil)
			if errors.Is(herr, errCloseOK) {
				return nil
			}
			return herr
		}
	}
}

// step records req, runs the handler and sends its replies, each after its
// delay. It returns the handler's error, and send's.
func (f *fakeProcessor) step(req *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse) error) (herr, err error) {
	if f.record {
		f.mu.Lock()
		f.got = append(f.got, proto.Clone(req).(*extprocv3.ProcessingRequest))
		f.mu.Unlock()
	}
	resps, herr := f.handle(req)
	for i, r := range resps {
		if f.delay != nil {
			if d := f.delay(req, i); d > 0 {
				time.Sleep(d)
			}
		}
		if err := send(r); err != nil {
			return herr, err
		}
	}
	return herr, nil
}

// ended records how a stream ended: the error its Recv returned, or nil
// when the handler ended it.
func (f *fakeProcessor) ended(err error) {
	f.mu.Lock()
	f.ends = append(f.ends, err)
	f.mu.Unlock()
}

// openSync runs f as a SyncStream (the Sync transport): the same handler,
// called in the client's goroutine.
func (f *fakeProcessor) openSync(ctx context.Context) SyncStream {
	f.wg.Add(1)
	return &fakeSync{f: f, ctx: ctx}
}

type fakeSync struct {
	f   *fakeProcessor
	ctx context.Context
}

func (s *fakeSync) Handle(req *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse)) error {
	// The handlers are written for gRPC, where a processor owns what it
	// receives (some keep requests across calls); a Sync processor that
	// keeps anything must copy it, as this one does.
	own := proto.Clone(req).(*extprocv3.ProcessingRequest)
	herr, _ := s.f.step(own, func(r *extprocv3.ProcessingResponse) error { send(r); return nil })
	if herr != nil {
		s.end(nil)
		if errors.Is(herr, errCloseOK) {
			return io.EOF
		}
		return herr
	}
	return nil
}

// Close: what Recv would have returned to a Process loop.
func (s *fakeSync) Close() {
	if err := s.ctx.Err(); err != nil {
		s.end(status.FromContextError(err).Err())
		return
	}
	s.end(io.EOF)
}

func (s *fakeSync) end(err error) {
	s.f.ended(err)
	s.f.wg.Done()
}

func (f *fakeProcessor) received() []*extprocv3.ProcessingRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*extprocv3.ProcessingRequest(nil), f.got...)
}

func (f *fakeProcessor) endings() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.ends...)
}

// kinds names the received messages in order: "request_headers", …
func (f *fakeProcessor) kinds() []string {
	var out []string
	for _, r := range f.received() {
		out = append(out, kindOf(r))
	}
	return out
}

func kindOf(r *extprocv3.ProcessingRequest) string {
	switch r.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return "request_headers"
	case *extprocv3.ProcessingRequest_RequestBody:
		return "request_body"
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return "request_trailers"
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return "response_headers"
	case *extprocv3.ProcessingRequest_ResponseBody:
		return "response_body"
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return "response_trailers"
	}
	return "?"
}

// transport connects a client to a processor.
type transport struct {
	name    string
	connect func(t *testing.T, srv extprocv3.ExternalProcessorServer) Transport
}

var transports = []transport{
	{"direct", func(_ *testing.T, srv extprocv3.ExternalProcessorServer) Transport {
		return GRPC(Direct(srv))
	}},
	{"grpc-tcp", func(t *testing.T, srv extprocv3.ExternalProcessorServer) Transport {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		return GRPC(serveGRPC(t, srv, lis, lis.Addr().String(), nil))
	}},
	{"grpc-bufconn", func(t *testing.T, srv extprocv3.ExternalProcessorServer) Transport {
		lis := bufconn.Listen(1 << 20)
		dial := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })
		return GRPC(serveGRPC(t, srv, lis, "passthrough:///bufconn", dial))
	}},
	{"sync", func(t *testing.T, srv extprocv3.ExternalProcessorServer) Transport {
		f, ok := srv.(*fakeProcessor)
		require.True(t, ok, "the sync transport runs fake processors only, not %T", srv)
		return Sync(f.openSync)
	}},
}

func serveGRPC(t testing.TB, srv extprocv3.ExternalProcessorServer, lis net.Listener, target string, dial grpc.DialOption) extprocv3.ExternalProcessorClient {
	t.Helper()
	gs := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(gs, srv)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(lis)
	}()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if dial != nil {
		opts = append(opts, dial)
	}
	cc, err := grpc.NewClient(target, opts...)
	require.NoError(t, err)
	// Connect now, so that connection setup does not count against the short
	// message timeouts some tests use.
	cc.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for st := cc.GetState(); st != connectivity.Ready; st = cc.GetState() {
		require.True(t, cc.WaitForStateChange(ctx, st), "gRPC connection not ready")
	}
	t.Cleanup(func() {
		_ = cc.Close()
		gs.Stop()
		<-served
	})
	return extprocv3.NewExternalProcessorClient(cc)
}

// forEachTransport runs fn once per transport with a fresh processor.
func forEachTransport(t *testing.T, fn func(t *testing.T, connect func(srv extprocv3.ExternalProcessorServer) Transport)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			fn(t, func(srv extprocv3.ExternalProcessorServer) Transport {
				return tr.connect(t, srv)
			})
		})
	}
}
