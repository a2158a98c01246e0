package extprocfilter_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// serverFunc adapts a function to ExternalProcessorServer.
type serverFunc func(extprocv3.ExternalProcessor_ProcessServer) error

func (f serverFunc) Process(st extprocv3.ExternalProcessor_ProcessServer) error { return f(st) }

// TestDirectSemantics: Direct behaves like a gRPC stream.
func TestDirectSemantics(t *testing.T) {
	t.Run("replies are copied on Send", func(t *testing.T) {
		shared := reply(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{}}, &extprocv3.CommonResponse{BodyMutation: bodyMut("a")})
		cc := Direct(serverFunc(func(st extprocv3.ExternalProcessor_ProcessServer) error {
			if _, err := st.Recv(); err != nil {
				return err
			}
			if err := st.Send(shared); err != nil {
				return err
			}
			// Over gRPC the server may reuse a message once Send returned.
			shared.GetRequestHeaders().GetResponse().GetBodyMutation().Mutation = nil
			return nil
		}))
		st, err := cc.Process(testCtx(t))
		require.NoError(t, err)
		require.NoError(t, st.Send(&extprocv3.ProcessingRequest{}))
		got, err := st.Recv()
		require.NoError(t, err)
		require.Equal(t, "a", string(got.GetRequestHeaders().GetResponse().GetBodyMutation().GetBody()))
		_, err = st.Recv()
		require.ErrorIs(t, err, io.EOF) // OK status
	})
	t.Run("DirectOwned passes replies by pointer", func(t *testing.T) {
		sent := reply(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{}}, &extprocv3.CommonResponse{BodyMutation: bodyMut("a")})
		cc := DirectOwned(serverFunc(func(st extprocv3.ExternalProcessor_ProcessServer) error {
			if _, err := st.Recv(); err != nil {
				return err
			}
			return st.Send(sent)
		}))
		st, err := cc.Process(testCtx(t))
		require.NoError(t, err)
		require.NoError(t, st.Send(&extprocv3.ProcessingRequest{}))
		got, err := st.Recv()
		require.NoError(t, err)
		require.Same(t, sent, got)
	})
	t.Run("CloseSend is io.EOF on the server; its status reaches Recv", func(t *testing.T) {
		cc := Direct(serverFunc(func(st extprocv3.ExternalProcessor_ProcessServer) error {
			_, err := st.Recv()
			if errors.Is(err, io.EOF) {
				return status.Error(codes.DataLoss, "half-closed")
			}
			return err
		}))
		st, err := cc.Process(testCtx(t))
		require.NoError(t, err)
		require.NoError(t, st.CloseSend())
		require.Error(t, st.Send(&extprocv3.ProcessingRequest{}))
		_, err = st.Recv()
		require.Equal(t, codes.DataLoss, status.Code(err))
	})
	t.Run("cancel is codes.Canceled on the server", func(t *testing.T) {
		seen := make(chan error, 1)
		cc := Direct(serverFunc(func(st extprocv3.ExternalProcessor_ProcessServer) error {
			_, err := st.Recv()
			seen <- err
			return err
		}))
		ctx, cancel := context.WithCancel(testCtx(t))
		st, err := cc.Process(ctx)
		require.NoError(t, err)
		cancel()
		require.Equal(t, codes.Canceled, status.Code(<-seen))
		_, err = st.Recv()
		require.Error(t, err)
	})
	t.Run("plain errors become codes.Unknown", func(t *testing.T) {
		cc := Direct(serverFunc(func(extprocv3.ExternalProcessor_ProcessServer) error { return errors.New("boom") }))
		st, err := cc.Process(testCtx(t))
		require.NoError(t, err)
		_, err = st.Recv()
		require.Equal(t, codes.Unknown, status.Code(err))
		require.ErrorIs(t, st.Send(&extprocv3.ProcessingRequest{}), io.EOF)
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Direct(newFake(continuer)).Process(ctx)
		require.Equal(t, codes.Canceled, status.Code(err))
	})
}

// TestGracefulClose: with the graceful toggle Envoy half-closes and waits for
// the server's status before the reset (R1.8), so the server sees io.EOF.
func TestGracefulClose(t *testing.T) {
	forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
		fake := newFake(continuer)
		cfg := testConfig()
		cfg.GracefulClose = true
		cfg.StreamCloseOptimization = false
		s := NewClient(connect(fake), cfg).Start(testCtx(t))
		_, err := s.RequestHeaders(getRequest().Headers, true)
		require.NoError(t, err)
		start := time.Now()
		s.Close()
		require.Less(t, time.Since(start), cfg.RemoteCloseTimeout)
		require.Eventually(t, func() bool { return len(fake.endings()) == 1 }, 5*time.Second, time.Millisecond)
		require.ErrorIs(t, fake.endings()[0], io.EOF)
	})
}

// TestGracefulCloseTimeout: a server that never ends gets the reset after
// RemoteCloseTimeout.
func TestGracefulCloseTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := serverFunc(func(st extprocv3.ExternalProcessor_ProcessServer) error {
		req, err := st.Recv()
		if err != nil {
			return err
		}
		if err := st.Send(reply(req, nil)); err != nil {
			return err
		}
		select { // ignores the half-close
		case <-st.Context().Done():
		case <-release:
		}
		return nil
	})
	defer close(release)
	cfg := testConfig()
	cfg.GracefulClose = true
	cfg.RemoteCloseTimeout = 50 * time.Millisecond
	cfg.StreamCloseOptimization = false
	s := NewClient(GRPC(Direct(srv)), cfg).Start(testCtx(t))
	_, err := s.RequestHeaders(getRequest().Headers, true)
	require.NoError(t, err)
	start := time.Now()
	s.Close()
	require.GreaterOrEqual(t, time.Since(start), cfg.RemoteCloseTimeout)
}

// A DirectOwned server may send one reply value on many streams at once
// (extproc.Processor does with its plain CONTINUE replies): the client only
// reads replies. Under -race a write would be reported; without it, the
// replies must still equal what was sent.
func TestDirectOwnedOnlyReadsReplies(t *testing.T) {
	mutation := setHeaders(rawSet("x-route", "a"), rawSet("x-added", "1"))
	mutation.RemoveHeaders = []string{"x-drop"}
	shared := map[string]*extprocv3.ProcessingResponse{
		"request headers":  reply(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{}}, &extprocv3.CommonResponse{HeaderMutation: mutation, ClearRouteCache: true}),
		"request body":     reply(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{}}, &extprocv3.CommonResponse{BodyMutation: bodyMut("hello!!")}),
		"response headers": reply(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{}}, &extprocv3.CommonResponse{HeaderMutation: setHeaders(rawSet("x-cost", "7"))}),
		"response body":    reply(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{}}, &extprocv3.CommonResponse{BodyMutation: bodyMut("world!!")}),
	}
	pristine := map[string]*extprocv3.ProcessingResponse{}
	for k, r := range shared {
		pristine[k] = proto.Clone(r).(*extprocv3.ProcessingResponse)
	}
	cc := DirectOwned(serverFunc(func(st extprocv3.ExternalProcessor_ProcessServer) error {
		for {
			req, err := st.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			var r *extprocv3.ProcessingResponse
			switch {
			case isRequestHeaders(req):
				r = shared["request headers"]
			case isRequestBody(req):
				r = shared["request body"]
			case isResponseHeaders(req):
				r = shared["response headers"]
			case isResponseBody(req):
				r = shared["response body"]
			default:
				r = reply(req, nil)
			}
			if err := st.Send(r); err != nil {
				return err
			}
		}
	}))
	type result struct {
		resp *Response
		err  error
	}
	results := make(chan result, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			req := postRequest(`{"a":1}`)
			req.Headers = append(req.Headers, Header{"x-drop", "gone"})
			resp, err := Do(testCtx(t), NewClient(GRPC(cc), testConfig()), req, ok200(`{"b":2}`))
			results <- result{resp, err}
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		require.NoError(t, r.err)
		require.Equal(t, "hello!!", string(r.resp.Forwarded.Body))
		require.Equal(t, "a", r.resp.Forwarded.Headers.Value("x-route"))
		require.False(t, r.resp.Forwarded.Headers.Has("x-drop"))
		require.Equal(t, "world!!", string(r.resp.Body))
		require.Equal(t, "7", r.resp.Headers.Value("x-cost"))
	}
	for k, r := range shared {
		require.True(t, proto.Equal(pristine[k], r), "%s reply changed by the client", k)
	}
}
