package extprocfiltertest

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter/internal/grpcstream"
)

// directQueue is how many messages each side may send before the peer reads,
// standing in for gRPC's flow-control window. A client following Envoy's
// rules has at most MaxOutstandingChunks (default 1) messages unanswered, so
// 16 never blocks a real flow; each stream allocates both queues.
const directQueue = 16

// Direct returns an ExternalProcessorClient (give it to extprocfilter.GRPC)
// that runs srv.Process in-process on
// a channel-backed stream pair: no serialisation and no network. Each Process
// call starts srv.Process in its own goroutine, which ends when srv.Process
// returns.
//
// Requests are passed by pointer: the client never touches a message after
// sending it. Replies are cloned on Send, because over gRPC a server may reuse
// or change a message once Send has returned.
func Direct(srv extprocv3.ExternalProcessorServer) extprocv3.ExternalProcessorClient {
	return directClient{srv: srv}
}

// DirectOwned is Direct for a server that never touches a reply once Send
// has returned: replies are passed by pointer like requests, with no copy.
// The client only reads them, so such a server may send one reply value on
// many streams (extproc.Processor shares its plain CONTINUE replies). A
// server that changes or reuses a reply after Send must use Direct.
func DirectOwned(srv extprocv3.ExternalProcessorServer) extprocv3.ExternalProcessorClient {
	return directClient{srv: srv, owned: true}
}

type directClient struct {
	srv   extprocv3.ExternalProcessorServer
	owned bool // replies are not cloned
}

var _ extprocv3.ExternalProcessorClient = directClient{}

func (d directClient) Process(ctx context.Context, _ ...grpc.CallOption) (extprocv3.ExternalProcessor_ProcessClient, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &directPipe{
		srv:     d.srv,
		owned:   d.owned,
		ctx:     ctx,
		cancel:  cancel,
		reqs:    make(chan *extprocv3.ProcessingRequest, directQueue),
		resps:   make(chan *extprocv3.ProcessingResponse, directQueue),
		sendEnd: make(chan struct{}),
		done:    make(chan struct{}),
	}
	p.client.p, p.server.p = p, p
	directWorkers.run(p)
	return &p.client, nil
}

// serve runs the server's Process on the pipe and records its status.
func (p *directPipe) serve() {
	p.finish(grpcstream.HandlerStatus(p.srv.Process(&p.server)))
}

// Idle workers: at most maxIdleWorkers wait for the next stream, each for
// at most workerIdle.
const (
	maxIdleWorkers = 256
	workerIdle     = 50 * time.Millisecond // well inside goleak's ~0.4 s of retries
)

// directWorkers runs the servers' Process calls. A goroutine that finished
// one waits a while for the next instead of exiting: a new goroutine per
// stream starts on a small stack and grows it (copying) on every request.
var directWorkers = workers{work: make(chan *directPipe)}

// workers is a pool of goroutines: run hands p to an idle one or starts a
// new one.
type workers struct {
	work chan *directPipe // unbuffered: a send succeeds only if a worker waits
	idle atomic.Int32
}

func (w *workers) run(p *directPipe) {
	select {
	case w.work <- p:
	default:
		go w.loop(p)
	}
}

func (w *workers) loop(p *directPipe) {
	var t *time.Timer
	for {
		p.serve()
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		if t == nil {
			t = time.NewTimer(workerIdle)
		} else {
			t.Reset(workerIdle)
		}
		select {
		case p = <-w.work:
			w.idle.Add(-1)
			t.Stop()
		case <-t.C:
			w.idle.Add(-1)
			return
		}
	}
}

// directPipe is the shared state of one in-process stream.
type directPipe struct {
	srv    extprocv3.ExternalProcessorServer
	client directStream // the ends, in one allocation with the pipe
	server directServer
	owned  bool
	ctx    context.Context
	cancel context.CancelFunc
	reqs   chan *extprocv3.ProcessingRequest
	resps  chan *extprocv3.ProcessingResponse

	closeOnce sync.Once
	sendEnd   chan struct{} // closed by CloseSend

	done      chan struct{} // closed when srv.Process returned
	final     error         // its status, valid after done
	finalOnce sync.Once
}

func (p *directPipe) finish(err error) {
	p.finalOnce.Do(func() {
		p.final = err
		close(p.done)
	})
	// Like a gRPC server returning from the handler: the stream is over.
	p.cancel()
}

// directStream is the client end.
type directStream struct {
	p *directPipe
	grpc.ClientStream
}

var _ extprocv3.ExternalProcessor_ProcessClient = (*directStream)(nil)

func (s *directStream) Send(m *extprocv3.ProcessingRequest) error {
	select {
	case <-s.p.sendEnd:
		return status.Error(codes.Internal, "SendMsg called after CloseSend")
	default:
	}
	select {
	case <-s.p.done:
		return io.EOF
	default:
	}
	select {
	case s.p.reqs <- m:
		return nil
	case <-s.p.done:
		return io.EOF // the status comes from Recv, as with grpc-go
	case <-s.p.ctx.Done():
		return io.EOF
	}
}

func (s *directStream) Recv() (*extprocv3.ProcessingResponse, error) {
	select {
	case m := <-s.p.resps:
		return m, nil
	default:
	}
	select {
	case m := <-s.p.resps:
		return m, nil
	case <-s.p.done:
		return s.afterDone()
	case <-s.p.ctx.Done():
		select {
		case <-s.p.done:
			return s.afterDone()
		default:
		}
		return nil, status.FromContextError(s.p.ctx.Err()).Err()
	}
}

// afterDone delivers what the server sent before returning, then its status:
// io.EOF for OK, like grpc-go.
func (s *directStream) afterDone() (*extprocv3.ProcessingResponse, error) {
	select {
	case m := <-s.p.resps:
		return m, nil
	default:
	}
	if s.p.final == nil {
		return nil, io.EOF
	}
	return nil, s.p.final
}

func (s *directStream) CloseSend() error {
	s.p.closeOnce.Do(func() { close(s.p.sendEnd) })
	return nil
}

func (s *directStream) Context() context.Context     { return s.p.ctx }
func (s *directStream) Header() (metadata.MD, error) { return metadata.MD{}, nil }
func (s *directStream) Trailer() metadata.MD         { return metadata.MD{} }
func (s *directStream) SendMsg(m any) error          { return s.Send(m.(*extprocv3.ProcessingRequest)) }
func (s *directStream) RecvMsg(m any) error          { return grpcstream.RecvInto(s.Recv, m) }

// directServer is the server end.
type directServer struct {
	p *directPipe
	grpc.ServerStream
}

var _ extprocv3.ExternalProcessor_ProcessServer = (*directServer)(nil)

func (s *directServer) Recv() (*extprocv3.ProcessingRequest, error) {
	select {
	case m := <-s.p.reqs:
		return m, nil
	default:
	}
	select {
	case m := <-s.p.reqs:
		return m, nil
	case <-s.p.sendEnd:
		select {
		case m := <-s.p.reqs:
			return m, nil
		default:
		}
		return nil, io.EOF
	case <-s.p.ctx.Done():
		return nil, status.FromContextError(s.p.ctx.Err()).Err()
	}
}

func (s *directServer) Send(m *extprocv3.ProcessingResponse) error {
	c := m
	if !s.p.owned {
		c = cloneResponse(m)
	}
	select {
	case <-s.p.ctx.Done():
		return status.FromContextError(s.p.ctx.Err()).Err()
	default:
	}
	select {
	case s.p.resps <- c:
		return nil
	case <-s.p.ctx.Done():
		return status.FromContextError(s.p.ctx.Err()).Err()
	}
}

func (s *directServer) Context() context.Context     { return s.p.ctx }
func (s *directServer) SetHeader(metadata.MD) error  { return nil }
func (s *directServer) SendHeader(metadata.MD) error { return nil }
func (s *directServer) SetTrailer(metadata.MD)       {}
func (s *directServer) SendMsg(m any) error          { return s.Send(m.(*extprocv3.ProcessingResponse)) }

func (s *directServer) RecvMsg(m any) error {
	r, err := s.Recv()
	if err != nil {
		return err
	}
	proto.Merge(m.(*extprocv3.ProcessingRequest), r)
	return nil
}
