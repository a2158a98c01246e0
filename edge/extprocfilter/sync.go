package extprocfilter

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter/internal/grpcstream"
)

// SyncStream is one ext_proc stream of an in-process processor that handles
// each message as a call, in the caller's goroutine ([Sync]).
type SyncStream interface {
	// Handle processes m, calling send for each reply as it is ready (send
	// returns at once; the client handles the replies after Handle returns,
	// each as arriving when it was sent). A non-nil error ends the stream
	// after those replies: io.EOF when the processor ended it with OK (as
	// Process returning nil), any other error as Process's status. The
	// processor has finished (as if Process had returned) when Handle
	// returns an error, and Handle is not called again.
	//
	// m is the processor's only while Handle runs, and only to read: it
	// writes into none of it (headers, body bytes) and keeps nothing of it
	// afterwards; the client reuses the message, its header values and body
	// buffer. Replies are read, never written, by the client (so a processor
	// may share one reply between streams, as with extprocfiltertest.DirectOwned).
	Handle(m *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse)) error
	// Close ends the stream from the client's side: Envoy half-closed it, or
	// reset it. The processor finishes before Close returns. Close is
	// called at most once, and not after Handle returned an error.
	Close()
}

// Sync returns an ExternalProcessorClient for an in-process processor whose
// streams are [SyncStream]s: open starts one, with the context the [Stream]
// was started with. A Stream on such a client calls the processor directly,
// in the goroutine of the Stream's caller: no goroutine, channel or copy per
// message. It is the cheapest in-process transport; the protocol is the same
// as over gRPC, with one difference: a processor cannot be interrupted while
// it handles a message, so a message timeout that expires meanwhile fires
// when Handle returns (its replies are then too late, as they would be with
// Envoy).
//
// Process, for callers other than Stream, serves the processor behind a
// ProcessClient: Send runs Handle, Recv returns the replies in order.
func Sync(open func(ctx context.Context) SyncStream) SyncTransport {
	return SyncTransport{start: open}
}

// SyncTransport is the in-process transport returned by [Sync].
type SyncTransport struct {
	start func(ctx context.Context) SyncStream
}

var (
	_ Transport                         = SyncTransport{}
	_ extprocv3.ExternalProcessorClient = SyncTransport{}
)

func (SyncTransport) inCall() bool { return true }

// open starts the processor's stream on ctx (the Stream's own: the
// processor's stream lives as long as it) in l, the Stream's link.
func (c SyncTransport) open(ctx context.Context, l *syncLink) (link, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	l.ss, l.ended = c.start(ctx), false
	l.pending = l.pendBuf[:0]
	liveSyncLinks.Add(1)
	if l.queue == nil {
		l.queue = func(r *extprocv3.ProcessingResponse) {
			l.pending = append(l.pending, recvItem{resp: r, at: time.Now()})
		}
	}
	return l, nil
}

// Process serves the processor behind a ProcessClient, for callers other
// than a Stream: Send runs Handle, Recv returns the replies in order.
func (c SyncTransport) Process(ctx context.Context, _ ...grpc.CallOption) (extprocv3.ExternalProcessor_ProcessClient, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	sctx, cancel := context.WithCancel(ctx)
	st := &syncProcessClient{ss: c.start(sctx), ctx: sctx, cancel: cancel, ready: make(chan struct{}, 1)}
	st.send = func(r *extprocv3.ProcessingResponse) { st.replies = append(st.replies, r) }
	// A reset ends the processor as a gRPC cancellation would.
	st.stop = context.AfterFunc(sctx, st.end)
	return st, nil
}

// syncLink is a Sync stream's processor, called in the caller's goroutine.
// It lives with the Stream, reused from one request to the next.
type syncLink struct {
	ss    SyncStream
	ended bool // the processor finished (Handle's error or Close)
	// pending holds the replies (and the end) until the filter handles
	// them, as a gRPC stream's receive queue would; pendBuf is pending's
	// first array.
	pending []recvItem
	pendBuf [2]recvItem
	queue   func(*extprocv3.ProcessingResponse) // Handle's send: appends to pending
	call    procCall                            // Handle and Close run on a worker (calls.go)
}

var _ link = (*syncLink)(nil)

// send hands m to the processor and queues its replies. After the processor
// finished, m goes nowhere (a gRPC Send's io.EOF).
func (l *syncLink) send(m *extprocv3.ProcessingRequest) error {
	if l.ended {
		return nil
	}
	if err := l.handle(m); err != nil {
		l.ended = true
		l.pending = append(l.pending, recvItem{err: syncStatus(err), at: time.Now()})
	}
	return nil
}

func (l *syncLink) take() (recvItem, bool) {
	if len(l.pending) == 0 {
		return recvItem{}, false
	}
	it := l.pending[0]
	l.pending[0] = recvItem{}
	l.pending = l.pending[1:]
	if len(l.pending) == 0 {
		l.pending = l.pendBuf[:0]
	}
	return it, true
}

func (l *syncLink) arrivals() <-chan recvItem { return nil }

// closeSend half-closes, or resets when the context ended: either way the
// processor finishes now, as GracefulClose would wait for.
func (l *syncLink) closeSend(bool, time.Duration) {
	if !l.ended {
		l.ended = true
		l.close()
	}
	clear(l.pendBuf[:])
	l.pending, l.ss = nil, nil
	liveSyncLinks.Add(-1)
}

func (l *syncLink) wait() {}

// syncStatus is the status a SyncStream's Handle error stands for.
func syncStatus(err error) error {
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	return grpcstream.HandlerStatus(err)
}

// syncProcessClient is a SyncStream behind the gRPC client stream interface.
type syncProcessClient struct {
	grpc.ClientStream
	ss     SyncStream
	send   func(*extprocv3.ProcessingResponse) // queues a reply; under mu
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool

	mu      sync.Mutex // Send and the reset's end against each other and Recv
	replies []*extprocv3.ProcessingResponse
	final   error // the stream's end: io.EOF, a status, or nil while it runs
	ended   bool  // the processor finished (Handle's error or Close)
	halfEnd bool  // CloseSend was called
	ready   chan struct{}
}

var _ extprocv3.ExternalProcessor_ProcessClient = (*syncProcessClient)(nil)

func (s *syncProcessClient) Send(m *extprocv3.ProcessingRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.halfEnd {
		return status.Error(codes.Internal, "SendMsg called after CloseSend")
	}
	if s.ended {
		return io.EOF // the status comes from Recv, as with grpc-go
	}
	if err := s.ss.Handle(m, s.send); err != nil {
		s.ended, s.final = true, syncStatus(err)
		s.stop()
		s.cancel() // like a gRPC server returning from the handler
	}
	s.signal()
	return nil
}

func (s *syncProcessClient) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// end finishes the processor once: the client half-closed or reset.
func (s *syncProcessClient) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	s.ss.Close()
	if s.ctx.Err() != nil {
		s.final = status.FromContextError(s.ctx.Err()).Err()
	} else {
		s.final = io.EOF
	}
	s.stop()
	s.cancel() // the stream is over: nothing else uses its context
	s.signal()
}

func (s *syncProcessClient) Recv() (*extprocv3.ProcessingResponse, error) {
	for {
		s.mu.Lock()
		if len(s.replies) > 0 {
			r := s.replies[0]
			s.replies[0] = nil
			s.replies = s.replies[1:]
			s.mu.Unlock()
			return r, nil
		}
		if s.final != nil {
			err := s.final
			s.mu.Unlock()
			return nil, err
		}
		s.mu.Unlock()
		select {
		case <-s.ready:
		case <-s.ctx.Done():
			s.end()
		}
	}
}

// CloseSend half-closes: the processor has nothing more to read, so it
// finishes, as a Process loop does when Recv returns io.EOF.
func (s *syncProcessClient) CloseSend() error {
	s.mu.Lock()
	s.halfEnd = true
	s.mu.Unlock()
	s.end()
	return nil
}

func (s *syncProcessClient) Context() context.Context     { return s.ctx }
func (s *syncProcessClient) Header() (metadata.MD, error) { return metadata.MD{}, nil }
func (s *syncProcessClient) Trailer() metadata.MD         { return metadata.MD{} }
func (s *syncProcessClient) SendMsg(m any) error          { return s.Send(m.(*extprocv3.ProcessingRequest)) }
func (s *syncProcessClient) RecvMsg(m any) error          { return grpcstream.RecvInto(s.Recv, m) }
