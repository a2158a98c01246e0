package extprocfilter

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// Transport is how a [Client] reaches its processor: [GRPC] over an
// ExternalProcessorClient (a real connection, or any in-memory stand-in for
// one), or [Sync], the processor called in the request's own goroutine.
// The filter's behaviour is the same over both (one difference, documented
// at Sync: a handler cannot be interrupted by the message timer).
type Transport interface {
	// inCall reports whether the processor runs in the goroutine of the
	// Stream's caller: then no call waits in a select that a reset must
	// wake, and the processor reads a message only while handling it, so
	// the stream reuses its messages (scratch).
	inCall() bool
	// open opens the processor's side of one request's stream (R1.1) on
	// ctx, the Stream's context; sl is the Stream's in-call link to open
	// (nil unless inCall).
	open(ctx context.Context, sl *syncLink) (link, error)
}

// link is one open ext_proc stream, as the filter's state machine drives it.
type link interface {
	// send hands m to the processor. An error is the stream's failure to
	// send (io.EOF: the stream ended, its status comes as a reply item).
	send(m *extprocv3.ProcessingRequest) error
	// take returns the oldest reply or end of stream already there, without
	// waiting; only an in-call link has any.
	take() (recvItem, bool)
	// arrivals delivers the replies and end of stream that arrive later;
	// nil (never ready) for an in-call link.
	arrivals() <-chan recvItem
	// closeSend half-closes the stream and resets it (R1.8), at once or,
	// when graceful, once the processor finished or after wait.
	closeSend(graceful bool, wait time.Duration)
	// wait returns once the link's own goroutines ended (after closeSend).
	wait()
}

// recvItem is a reply, or the end of the stream (err: io.EOF for OK).
type recvItem struct {
	resp *extprocv3.ProcessingResponse
	err  error
	at   time.Time // when an in-call processor produced it
}

// GRPC returns the transport over cc: one Process stream per request, read by
// a goroutine of its own.
func GRPC(cc extprocv3.ExternalProcessorClient) Transport { return grpcTransport{cc: cc} }

type grpcTransport struct {
	cc extprocv3.ExternalProcessorClient
}

var _ Transport = grpcTransport{}

func (grpcTransport) inCall() bool { return false }

func (t grpcTransport) open(ctx context.Context, _ *syncLink) (link, error) {
	sctx, cancel := context.WithCancel(ctx)
	st, err := t.cc.Process(sctx)
	if err != nil {
		cancel()
		return nil, err
	}
	l := &grpcLink{st: st, cancel: cancel, recv: make(chan recvItem, 16), readerDone: make(chan struct{})}
	go read(sctx, st, l.recv, l.readerDone)
	return l, nil
}

// grpcLink is a gRPC client stream and the goroutine reading it.
type grpcLink struct {
	st         extprocv3.ExternalProcessor_ProcessClient
	cancel     context.CancelFunc
	recv       chan recvItem
	readerDone chan struct{}
	bg         sync.WaitGroup // the graceful close
}

var _ link = (*grpcLink)(nil)

func (l *grpcLink) send(m *extprocv3.ProcessingRequest) error { return l.st.Send(m) }
func (l *grpcLink) take() (recvItem, bool)                    { return recvItem{}, false }
func (l *grpcLink) arrivals() <-chan recvItem                 { return l.recv }

func (l *grpcLink) closeSend(graceful bool, wait time.Duration) {
	_ = l.st.CloseSend()
	if !graceful {
		l.cancel()
		return
	}
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-l.readerDone:
		case <-t.C:
		}
		l.cancel()
	}()
}

func (l *grpcLink) wait() {
	<-l.readerDone
	l.bg.Wait()
}

func read(ctx context.Context, st extprocv3.ExternalProcessor_ProcessClient, out chan<- recvItem, done chan<- struct{}) {
	defer close(done)
	for {
		r, err := st.Recv()
		select {
		case out <- recvItem{resp: r, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// send opens the stream if needed (R1.1) and sends m, starting the call and
// its message timer. If the stream is gone, the processor is detached.
func (s *Stream) send(d *direction, m *extprocv3.ProcessingRequest, cb callback) {
	d.startCall(cb)
	if s.streamClosed || !s.open() {
		s.handled()
		if !s.complete {
			// Closed earlier by the close optimization: nothing to talk to.
			s.complete = true
			s.clearAsyncState()
		}
		return
	}
	if s.msg != nil {
		m.MetadataContext = &s.msg.meta // R5.4
	} else {
		m.MetadataContext = &corev3.Metadata{} // R5.4
	}
	if d.attrs != nil && !d.attrsSent {
		// R5.3: attributes in the first message of the direction.
		d.attrsSent = true
		m.Attributes = map[string]*structpb.Struct{attributesKey: d.attrs}
	}
	if !s.sentFirst {
		// R1.2: protocol_config on the first message only.
		s.sentFirst = true
		m.ProtocolConfig = &extprocv3.ProtocolConfiguration{
			RequestBodyMode:  s.req.bodyMode,
			ResponseBodyMode: s.resp.bodyMode,
		}
	}
	err := s.link.send(m)
	s.handled()
	if err != nil && !errors.Is(err, io.EOF) {
		// io.EOF: the stream ended; its status comes from Recv.
		s.onGrpcError(err)
	}
}

// open opens the stream on the first message (R1.1); false when it could
// not be opened (the failure is handled).
func (s *Stream) open() bool {
	if s.link != nil {
		return true
	}
	l, err := s.c.t.open(s.ctx, s.syncL)
	if err != nil {
		s.streamClosed = true
		s.onGrpcError(err)
		return false
	}
	s.link = l
	return true
}

// arrivals is what waitFor and drain select on: nil (never ready) before the
// stream is open.
func (s *Stream) arrivals() <-chan recvItem {
	if s.link == nil {
		return nil
	}
	return s.link.arrivals()
}

// takePending handles the oldest reply an in-call processor already produced
// and reports whether there was one. A message timer that expired before the
// reply was produced fires first: the processor could not be interrupted, so
// its reply came too late (§4).
func (s *Stream) takePending() bool {
	if s.link == nil {
		return false
	}
	it, ok := s.link.take()
	if !ok {
		return false
	}
	if dl, ok := s.nextDeadline(); ok && !it.at.IsZero() && !it.at.Before(dl) {
		s.onTimer()
		if s.complete {
			return true
		}
	}
	s.consume(it) // release.go
	return true
}

// closeStream is Envoy's closeStream: half-close then reset (R1.8), or with
// GracefulClose half-close, wait for the server up to RemoteCloseTimeout, then
// reset.
func (s *Stream) closeStream() {
	if s.streamClosed {
		return
	}
	s.streamClosed = true
	if s.link == nil {
		return
	}
	s.link.closeSend(s.cfg.GracefulClose, s.cfg.RemoteCloseTimeout)
}
