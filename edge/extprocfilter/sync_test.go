package extprocfilter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestSyncProcess: Sync's Process, for callers other than Stream, behaves
// like a gRPC stream.
func TestSyncProcess(t *testing.T) {
	req := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{}}
	t.Run("replies in order, then the processor's OK end", func(t *testing.T) {
		fake := newFake(func(r *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
			return []*extprocv3.ProcessingResponse{reply(r, nil), reply(r, &extprocv3.CommonResponse{BodyMutation: bodyMut("b")})}, errCloseOK
		})
		st, err := Sync(fake.openSync).Process(testCtx(t))
		require.NoError(t, err)
		require.NoError(t, st.Send(req))
		first, err := st.Recv()
		require.NoError(t, err)
		require.Nil(t, first.GetRequestHeaders().GetResponse().GetBodyMutation())
		second, err := st.Recv()
		require.NoError(t, err)
		require.Equal(t, "b", string(second.GetRequestHeaders().GetResponse().GetBodyMutation().GetBody()))
		_, err = st.Recv()
		require.ErrorIs(t, err, io.EOF)
		require.ErrorIs(t, st.Send(req), io.EOF) // the processor returned
		require.Equal(t, []error{nil}, fake.endings())
	})
	t.Run("CloseSend ends the processor with io.EOF", func(t *testing.T) {
		fake := newFake(continuer)
		st, err := Sync(fake.openSync).Process(testCtx(t))
		require.NoError(t, err)
		require.NoError(t, st.CloseSend())
		require.Equal(t, codes.Internal, status.Code(st.Send(req)))
		_, err = st.Recv()
		require.ErrorIs(t, err, io.EOF)
		require.Len(t, fake.endings(), 1)
		require.ErrorIs(t, fake.endings()[0], io.EOF)
	})
	t.Run("cancel ends the processor with codes.Canceled", func(t *testing.T) {
		fake := newFake(continuer)
		ctx, cancel := context.WithCancel(testCtx(t))
		st, err := Sync(fake.openSync).Process(ctx)
		require.NoError(t, err)
		cancel()
		_, err = st.Recv()
		require.Equal(t, codes.Canceled, status.Code(err))
		require.Eventually(t, func() bool { return len(fake.endings()) == 1 }, 5*time.Second, time.Millisecond)
		require.Equal(t, codes.Canceled, status.Code(fake.endings()[0]))
	})
	t.Run("plain errors become codes.Unknown", func(t *testing.T) {
		fake := newFake(func(*extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
			return nil, errors.New("boom")
		})
		st, err := Sync(fake.openSync).Process(testCtx(t))
		require.NoError(t, err)
		require.NoError(t, st.Send(req))
		_, err = st.Recv()
		require.Equal(t, codes.Unknown, status.Code(err))
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Sync(newFake(continuer).openSync).Process(ctx)
		require.Equal(t, codes.Canceled, status.Code(err))
	})
}

// TestSyncLateReply: a processor called in the client's goroutine cannot be
// interrupted, so a reply it sends after the message timeout is too late:
// the timer fires first (504) and the reply is dropped, as Envoy would do.
// A reply sent in time is applied even when Handle returns after the
// deadline.
func TestSyncLateReply(t *testing.T) {
	cfg := testConfig()
	cfg.MessageTimeout = 200 * time.Millisecond

	late := newFake(continuer)
	late.delay = func(*extprocv3.ProcessingRequest, int) time.Duration { return 400 * time.Millisecond }
	res, err := NewClient(Sync(late.openSync), cfg).Start(testCtx(t)).RequestHeaders(getRequest().Headers, true)
	require.NoError(t, err)
	require.NotNil(t, res.LocalReply)
	require.Equal(t, 504, res.LocalReply.Status)
	require.ErrorIs(t, res.Failure, ErrMessageTimeout)

	inTime := newFake(continuer)
	slowAfter := &slowHandleSync{fakeSync: fakeSync{f: inTime, ctx: testCtx(t)}, after: 400 * time.Millisecond}
	res, err = NewClient(Sync(func(context.Context) SyncStream { inTime.wg.Add(1); return slowAfter }), cfg).
		Start(testCtx(t)).RequestHeaders(getRequest().Headers, true)
	require.NoError(t, err)
	require.Nil(t, res.LocalReply)
	require.True(t, res.Continue)
}

// slowHandleSync sends its replies at once but returns from Handle late: the
// processor went on working after sending.
type slowHandleSync struct {
	fakeSync
	after time.Duration
}

func (s *slowHandleSync) Handle(req *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse)) error {
	err := s.fakeSync.Handle(req, send)
	time.Sleep(s.after)
	return err
}

// TestSyncReusesMessages: a Sync stream builds its messages in one reused
// set, which goes back to a pool when the stream ends; each message still
// carries exactly its own headers and body, whatever came before it in the
// stream or in an earlier stream (a longer header list, a longer body).
func TestSyncReusesMessages(t *testing.T) {
	fake := newFake(continuer)
	cc := Sync(fake.openSync)
	cfg := testConfig()
	long := postRequest(`{"model":"a-long-model-name","messages":[]}`)
	long.Headers = append(long.Headers, Header{"x-extra-1", "one"}, Header{"x-extra-2", "two"})
	short := getRequest()
	for range 3 {
		for _, req := range []*Request{long, short} {
			before := len(fake.received())
			resp := do(t, cc, cfg, req, sseUpstream("data: {}\n\n"))
			require.Equal(t, 200, resp.Status)
			got := fake.received()[before:]
			require.Equal(t, "request_headers", kindOf(got[0]))
			sent := req.Headers.Normalize()
			require.Equal(t, sent, HeadersFromProto(got[0].GetRequestHeaders().GetHeaders()))
			if len(req.Body) > 0 {
				require.Equal(t, "request_body", kindOf(got[1]))
				require.Equal(t, req.Body[0], got[1].GetRequestBody().GetBody())
			}
			last := got[len(got)-1]
			require.Equal(t, "response_body", kindOf(last))
			require.Equal(t, "data: {}\n\n", string(last.GetResponseBody().GetBody()))
		}
	}
}

// gatedSync enters Handle, says so, and waits for the gate before handling.
type gatedSync struct {
	fakeSync
	entered, gate chan struct{}
}

func (s *gatedSync) Handle(req *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse)) error {
	close(s.entered)
	<-s.gate
	return s.fakeSync.Handle(req, send)
}

// TestSyncCloseDuringCall: over Sync the processor runs in the caller's
// goroutine, so a Close from another goroutine (a reset) waits for the call;
// the call returns its result and the stream is finished afterwards. The
// processor's stream lives on the context the Stream was started with.
func TestSyncCloseDuringCall(t *testing.T) {
	fake := newFake(continuer)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var opened context.Context
	gs := &gatedSync{fakeSync: fakeSync{f: fake, ctx: ctx}, entered: make(chan struct{}), gate: make(chan struct{})}
	s := NewClient(Sync(func(c context.Context) SyncStream { opened = c; fake.wg.Add(1); return gs }), testConfig()).Start(ctx)

	type out struct {
		res *Result
		err error
	}
	call := make(chan out, 1)
	go func() {
		res, err := s.RequestHeaders(getRequest().Headers, true)
		call <- out{res, err}
	}()
	<-gs.entered
	require.Equal(t, ctx, opened)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while the processor was handling a message")
	case <-time.After(50 * time.Millisecond):
	}
	close(gs.gate)
	got := <-call
	require.NoError(t, got.err)
	require.True(t, got.res.Continue)
	<-closed
	_, err := s.ResponseHeaders(Headers{{":status", "200"}}, true)
	require.ErrorIs(t, err, ErrFinished)
}

// deepSync handles a message deep in its stack: a processor whose call
// grows the goroutine's stack to about 128 KiB.
type deepSync struct{ fakeSync }

func (s *deepSync) Handle(req *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse)) error {
	return deep(64, func() error { return s.fakeSync.Handle(req, send) })
}

// deep calls f under depth frames of about a kilobyte each.
func deep(depth int, f func() error) error {
	var pad [1000]byte
	if depth == 0 {
		return f()
	}
	err := deep(depth-1, f)
	touch(pad[:])
	return err
}

// touch keeps its argument on the caller's stack.
//
//go:noinline
func touch([]byte) {}

// TestSyncCallsKeepTheCallersStackSmall: with many requests in flight, the
// processor's calls run on worker goroutines, so the goroutines of requests
// waiting after a call (for the upstream) keep a small stack however deep
// the processor went: 200 requests, one after the other, each calling a
// processor that uses 64 KiB of stack, then waiting. On the callers' own
// stacks that is 200 stacks of 128 KiB (25 MiB); here, one worker's.
func TestSyncCallsKeepTheCallersStackSmall(t *testing.T) {
	WorkersAbove(t, 0)
	fake := newFake(continuer)
	cc := Sync(func(ctx context.Context) SyncStream { fake.wg.Add(1); return &deepSync{fakeSync{f: fake, ctx: ctx}} })
	client := NewClient(cc, testConfig())
	const n = 200
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	release := make(chan struct{})
	var waiting sync.WaitGroup
	for range n {
		called := make(chan error, 1)
		waiting.Add(1)
		go func() {
			defer waiting.Done()
			s := client.Start(testCtx(t))
			res, err := s.RequestHeaders(getRequest().Headers, true)
			if err == nil && !res.Continue {
				err = errors.New("not continued")
			}
			called <- err
			<-release // the upstream's answer
			s.Close()
		}()
		require.NoError(t, <-called)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	close(release)
	waiting.Wait()
	grown := int64(after.StackInuse) - int64(before.StackInuse)
	t.Logf("stacks grew by %d KiB for %d waiting requests", grown>>10, n)
	// Half of what the deep stacks would be: a new goroutine's first stack
	// follows the process's average (up to 32 KiB after deep tests).
	require.Less(t, grown, int64(n*64<<10), "the waiting requests' goroutines hold the processor's deep stack")
}

// TestSyncCallPanicsInTheCaller: a processor that panics panics the
// request's goroutine, with the same value, as when it ran there.
func TestSyncCallPanicsInTheCaller(t *testing.T) {
	for _, above := range []int64{DefaultWorkersAbove, 0} {
		t.Run(fmt.Sprintf("workers above %d streams", above), func(t *testing.T) {
			WorkersAbove(t, above)
			fake := newFake(func(*extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
				panic("processor bug")
			})
			s := NewClient(Sync(fake.openSync), testConfig()).Start(testCtx(t))
			require.PanicsWithValue(t, "processor bug", func() { _, _ = s.RequestHeaders(getRequest().Headers, true) })
		})
	}
}

// TestSyncWorkersEndWhenIdle: workers started for concurrent calls end
// once no call comes, so an idle gateway keeps none.
func TestSyncWorkersEndWhenIdle(t *testing.T) {
	WorkersAbove(t, 0)
	gate := make(chan struct{})
	fake := newFake(continuer)
	open := func(ctx context.Context) SyncStream {
		fake.wg.Add(1)
		return &gatedSync{fakeSync: fakeSync{f: fake, ctx: ctx}, entered: make(chan struct{}), gate: gate}
	}
	client := NewClient(Sync(open), testConfig())
	const n = 8
	var calls sync.WaitGroup
	for range n {
		calls.Add(1)
		go func() {
			defer calls.Done()
			s := client.Start(testCtx(t))
			defer s.Close()
			_, _ = s.RequestHeaders(getRequest().Headers, true)
		}()
	}
	require.Eventually(t, func() bool { return ProcWorkers() >= n }, 5*time.Second, time.Millisecond,
		"each blocked call has a worker")
	close(gate)
	calls.Wait()
	require.Eventually(t, func() bool { return ProcWorkers() == 0 }, 5*time.Second, 10*time.Millisecond)
}
