package extprocfilter_test

import (
	"context"
	"testing"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
)

// TestReleasedStreamsAreReused: requests run one after the other, each on
// a Stream the previous one released, come out as on fresh Streams,
// whatever the previous request ended with (a local reply, a reset, a
// whole exchange).
func TestReleasedStreamsAreReused(t *testing.T) {
	forEachTransport(t, func(t *testing.T, connect func(srv extprocv3.ExternalProcessorServer) Transport) {
		fake := newFake(func(r *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
			switch {
			case isRequestHeaders(r) && HeadersFromProto(r.GetRequestHeaders().GetHeaders()).Value("x-deny") != "":
				return one(immediate(403, "denied", "no", nil)), nil
			case isRequestBody(r):
				return one(reply(r, &extprocv3.CommonResponse{HeaderMutation: setHeaders(rawSet("x-route", "a")), BodyMutation: bodyMut(`{"model":"b"}`)})), nil
			}
			return continuer(r)
		})
		c := NewClient(connect(fake), testConfig())
		ctx := testCtx(t)
		whole := func() {
			s := c.Start(ctx, WithOwnedHeaders())
			defer s.Release()
			req := postRequest(`{"model":"a"}`)
			res, err := s.RequestHeaders(req.Headers.Clone(), false)
			require.NoError(t, err)
			require.False(t, res.Continue)
			res, err = s.RequestBody([]byte(`{"model":"a"}`), true)
			require.NoError(t, err)
			require.True(t, res.Continue)
			require.Equal(t, "a", res.Headers.Value("x-route"))
			require.Equal(t, `{"model":"b"}`, string(res.Body))
			res, err = s.ResponseHeaders(Headers{{":status", "200"}, {"content-length", "2"}}, false)
			require.NoError(t, err)
			require.Nil(t, res.Headers) // held: BUFFERED
			res, err = s.ResponseBody([]byte("ok"), true)
			require.NoError(t, err)
			require.Equal(t, "200", res.Headers.Value(":status"))
			require.Equal(t, "ok", string(res.Body))
		}
		denied := func() {
			s := c.Start(ctx, WithOwnedHeaders())
			defer s.Release()
			h := postRequest().Headers
			h = append(h, Header{"x-deny", "1"})
			res, err := s.RequestHeaders(h, true)
			require.NoError(t, err)
			require.NotNil(t, res.LocalReply)
			require.Equal(t, 403, res.LocalReply.Status)
			_, err = s.RequestBody(nil, true)
			require.ErrorIs(t, err, ErrFinished)
		}
		reset := func() {
			rctx, cancel := context.WithCancel(ctx)
			s := c.Start(rctx, WithOwnedHeaders())
			defer s.Release()
			_, err := s.RequestHeaders(postRequest(`{}`).Headers, false)
			require.NoError(t, err)
			cancel()
			_, err = s.RequestBody([]byte(`{}`), true)
			require.ErrorIs(t, err, context.Canceled)
		}
		for range 3 {
			whole()
			denied()
			whole()
			reset()
		}
	})
}

// TestUseAfterRelease: a poisoned released Stream panics on any use,
// Close included, which is how the data plane's tests (under -race, where
// released Streams are poisoned) catch a Stream touched after it went back.
func TestUseAfterRelease(t *testing.T) {
	PoisonReleased(t)
	c := NewClient(GRPC(Direct(newFake(continuer))), testConfig())
	s := c.Start(testCtx(t))
	_, err := s.RequestHeaders(getRequest().Headers, true)
	require.NoError(t, err)
	s.Release()
	require.PanicsWithError(t, ErrReleased.Error(), s.Close)
	require.PanicsWithError(t, ErrReleased.Error(), s.Release)
	require.PanicsWithError(t, ErrReleased.Error(), func() { _, _ = s.ResponseHeaders(Headers{{":status", "200"}}, true) })
	require.PanicsWithError(t, ErrReleased.Error(), func() { s.DynamicMetadata() })
	require.PanicsWithError(t, ErrReleased.Error(), func() { _, _ = s.ResponseReset("x") })
}

// TestResetThenRelease: a Close from another goroutine (an HTTP stream
// reset) while the owner's call waits for the processor; the owner releases
// the Stream once both returned, and nothing touches it afterwards (run
// with -race: released Streams are poisoned).
func TestResetThenRelease(t *testing.T) {
	PoisonReleased(t)
	started, unblock := make(chan struct{}), make(chan struct{})
	defer close(unblock)
	fake := newFake(func(r *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		if isRequestHeaders(r) {
			close(started)
			<-unblock
		}
		return continuer(r)
	})
	c := NewClient(GRPC(Direct(fake)), testConfig())
	s := c.Start(testCtx(t))
	called := make(chan error, 1)
	go func() {
		_, err := s.RequestHeaders(getRequest().Headers, true)
		called <- err
	}()
	<-started
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		s.Close()
	}()
	require.ErrorIs(t, <-called, context.Canceled)
	<-closed
	s.Release()
}
