package extproc

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
)

// keptReport is an Observer that breaks its contract on purpose: it keeps
// the *Report it was given, beside a copy (with its own Tries) taken during
// the call.
type keptReport struct {
	kept *Report
	copy Report
}

func (k *keptReport) Observe(r *Report) {
	k.kept, k.copy = r, *r
	k.copy.Tries = slices.Clone(r.Tries)
}

// runSession runs one non-streamed chat request through a Session, reqHdrs
// standing for its request headers, and returns the request id the response
// headers' reply gave the client.
func runSession(t testing.TB, p *Processor, reqHdrs *extprocv3.ProcessingRequest) string {
	t.Helper()
	ss := p.Session(context.Background())
	var id string
	for _, m := range []*extprocv3.ProcessingRequest{reqHdrs, benchReqBodyM, benchRespHdrs, benchRespBody} {
		var got *extprocv3.ProcessingResponse
		if err := ss.Handle(m, func(r *extprocv3.ProcessingResponse) { got = r }); err != nil {
			t.Errorf("handle: %v", err)
			return ""
		}
		if got == nil || got.GetImmediateResponse() != nil {
			t.Errorf("unexpected reply %v", got)
			return ""
		}
		for _, o := range got.GetResponseHeaders().GetResponse().GetHeaderMutation().GetSetHeaders() {
			if o.GetHeader().GetKey() == hdrRequestID {
				id = string(o.GetHeader().GetRawValue())
			}
		}
	}
	ss.Close()
	return id
}

// A stream's state goes back to the pool, zeroed, when its Session closes:
// a Report read after its stream ended reads nothing (an Observer must copy
// what it keeps, Tries included), and the closed Session does not touch the
// stream it gave back.
func TestStreamReleasedAtClose(t *testing.T) {
	obs := &keptReport{}
	e := newTestEnv(t, WithObserver(obs))
	id := runSession(t, e.proc, benchReqHdrs)
	require.NotEmpty(t, id)

	require.Equal(t, id, obs.copy.RequestID)
	require.Equal(t, 200, obs.copy.HTTPStatus)
	require.True(t, obs.copy.Settled)
	require.Len(t, obs.copy.Tries, 1)
	require.Equal(t, "openai-gpt4o", obs.copy.Tries[0].Deployment)

	require.NotNil(t, obs.kept)
	require.Equal(t, Report{}, *obs.kept, "the report outlived its stream")

	ss := e.proc.Session(context.Background())
	ss.Close()
	var replies int
	require.ErrorIs(t, ss.Handle(benchReqHdrs, func(*extprocv3.ProcessingResponse) { replies++ }), io.EOF)
	require.Zero(t, replies)
	ss.Close() // again: nothing
}

// pairs is an Observer that records each report's request id against the
// traceparent its client sent, and checks the report's own fields.
type pairs struct {
	t  *testing.T
	mu sync.Mutex
	tp map[string]string
}

func (o *pairs) Observe(r *Report) {
	if r.Model != "gpt-4o" || !r.Settled || r.HTTPStatus != 200 || len(r.Tries) != 1 || r.Attempts != 1 {
		o.t.Errorf("report of request %s: %+v", r.RequestID, *r)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, dup := o.tp[r.RequestID]; dup {
		o.t.Errorf("request %s reported twice", r.RequestID)
	}
	o.tp[r.RequestID] = r.ClientTraceparent
}

// Pooled streams keep to their request: sessions run concurrently (and one
// after the other on each goroutine, so streams are reused), and every
// report pairs the request id the client got with the traceparent that
// client sent. A stream given back while in use, or shared, mixes them (and
// trips the race detector).
func TestPooledStreamsKeepToTheirRequest(t *testing.T) {
	obs := &pairs{t: t, tp: map[string]string{}}
	e := newTestEnv(t, WithObserver(obs))
	const workers, each = 4, 50
	sent := make([]map[string]string, workers) // per worker: request id → traceparent
	var wg sync.WaitGroup
	for w := range workers {
		sent[w] = map[string]string{}
		wg.Go(func() {
			for i := range each {
				tp := fmt.Sprintf("00-%032x-%016x-01", w+1, i+1)
				h := reqHeadersMsg(len(benchReqBody), false)
				h.GetRequestHeaders().GetHeaders().Headers = append(h.GetRequestHeaders().GetHeaders().Headers,
					hdrs("traceparent", tp).GetHeaders()...)
				id := runSession(t, e.proc, h)
				if id == "" {
					return
				}
				sent[w][id] = tp
			}
		})
	}
	wg.Wait()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.tp, workers*each)
	for _, m := range sent {
		for id, tp := range m {
			require.Equal(t, tp, obs.tp[id], "request %s", id)
		}
	}
}

// BenchmarkSessionNonStream is BenchmarkHandleNonStream through a Session,
// as the built-in data plane calls it: the request's state comes from the
// pool and goes back at Close, each reply goes back once applied.
func BenchmarkSessionNonStream(b *testing.B) {
	p := New(newCatalog(), benchAccountant{})
	ctx := context.Background()
	var got *extprocv3.ProcessingResponse
	send := func(r *extprocv3.ProcessingResponse) {
		if r.GetImmediateResponse() != nil {
			b.Fatalf("unexpected reply %v", r)
		}
		got = r
	}
	b.ReportAllocs()
	start := selfCPU(b)
	for b.Loop() {
		ss := p.Session(ctx)
		for _, m := range []*extprocv3.ProcessingRequest{benchReqHdrs, benchReqBodyM, benchRespHdrs, benchRespBody} {
			if err := ss.Handle(m, send); err != nil {
				b.Fatal(err)
			}
			ss.ReleaseReply(got)
		}
		ss.Close()
	}
	b.ReportMetric(float64((selfCPU(b)-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
}

// BenchmarkSessionNonStreamLent compares a Session with a LendingSession
// (what `tollgate run` opens) on a reply whose model the client's name fits
// over: the response body is a fresh copy each time, as a data plane's
// buffer is, so the in-place rename has the provider's name to write over.
func BenchmarkSessionNonStreamLent(b *testing.B) {
	for _, lend := range []bool{false, true} {
		b.Run(fmt.Sprintf("lend=%v", lend), func(b *testing.B) {
			p := New(newCatalog(), benchAccountant{})
			ctx := context.Background()
			var got *extprocv3.ProcessingResponse
			send := func(r *extprocv3.ProcessingResponse) { got = r }
			orig := benchRespBody.GetResponseBody().GetBody()
			buf := make([]byte, len(orig))
			body := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
				ResponseBody: &extprocv3.HttpBody{Body: buf, EndOfStream: true},
			}}
			b.ReportAllocs()
			start := selfCPU(b)
			for b.Loop() {
				copy(buf, orig)
				open := p.Session
				if lend {
					open = p.LendingSession
				}
				ss := open(ctx)
				for _, m := range []*extprocv3.ProcessingRequest{benchReqHdrs, benchReqBodyM, benchRespHdrs, body} {
					if err := ss.Handle(m, send); err != nil {
						b.Fatal(err)
					}
					if got.GetImmediateResponse() != nil {
						b.Fatalf("unexpected reply %v", got)
					}
					ss.ReleaseReply(got)
				}
				ss.Close()
			}
			b.ReportMetric(float64((selfCPU(b)-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}
