package extproc

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/tollgate-ai/tollgate/translate"
)

type extprocv3ProcessingRequest = extprocv3.ProcessingRequest

func bodyMsg(b []byte) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: b, EndOfStream: true},
	}}
}

// BenchmarkHandleNonStream is the processor's own work for one non-streamed
// request, without gRPC: the four phases called directly, each reply given
// back as the built-in data plane does once it applied it.
func BenchmarkHandleNonStream(b *testing.B) {
	benchHandleNonStream(b, New(newCatalog(), benchAccountant{}))
}

// benchHandleNonStream runs one non-streamed request's four phases on p per
// iteration and reports the CPU time per request.
func benchHandleNonStream(b *testing.B, p *Processor) {
	ctx := context.Background()
	b.ReportAllocs()
	start := selfCPU(b)
	for b.Loop() {
		s := &stream{p: p}
		for _, m := range []*extprocv3ProcessingRequest{benchReqHdrs, benchReqBodyM, benchRespHdrs, benchRespBody} {
			r := s.handle(ctx, m)
			if r == nil || r.GetImmediateResponse() != nil {
				b.Fatalf("unexpected reply %v", r)
			}
			s.takeLent(r).release() // the data plane applied it (replies.go)
		}
		s.finish(ctx)
	}
	b.ReportMetric(float64((selfCPU(b)-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
}

// BenchmarkHandleStreamChunk is the processor's own work for one SSE chunk.
func BenchmarkHandleStreamChunk(b *testing.B) {
	benchHandleStreamChunk(b, New(newCatalog(), benchAccountant{}))
}

// BenchmarkHandleStreamChunkRenamed is BenchmarkHandleStreamChunk for an
// upstream that names its model's version: each chunk is edited to name the
// client's model, and its reply replaces the chunk.
func BenchmarkHandleStreamChunkRenamed(b *testing.B) {
	benchHandleStreamChunkOf(b, New(newCatalog(), benchAccountant{}), benchChunkRenamed)
}

// BenchmarkHandleStreamChunkRenamedLent is BenchmarkHandleStreamChunkRenamed
// on a LendingSession's stream (what `tollgate run` opens): the chunk is the
// data plane's own buffer, a fresh copy each time as a data plane's is.
func BenchmarkHandleStreamChunkRenamedLent(b *testing.B) {
	orig := benchChunkRenamed.GetResponseBody().GetBody()
	buf := make([]byte, len(orig))
	chunk := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: buf},
	}}
	benchHandleStreamChunkLent(b, New(newCatalog(), benchAccountant{}), chunk, func() { copy(buf, orig) })
}

var benchChunkRenamed = &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
	ResponseBody: &extprocv3.HttpBody{Body: []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}],"usage":null}` + "\n\n")},
}}

// benchHandleStreamChunk runs one SSE chunk of an open stream on p per
// iteration and reports the CPU time per chunk.
func benchHandleStreamChunk(b *testing.B, p *Processor) {
	benchHandleStreamChunkOf(b, p, benchChunk)
}

// benchHandleStreamChunkOf runs chunk on an open stream of p per iteration,
// each reply given back as the built-in data plane does once it applied it.
func benchHandleStreamChunkOf(b *testing.B, p *Processor, chunk *extprocv3.ProcessingRequest) {
	benchHandleStreamChunkLent(b, p, chunk, nil)
}

// benchHandleStreamChunkLent is benchHandleStreamChunkOf on a stream that
// lends its bodies when refill is not nil, called before every chunk.
func benchHandleStreamChunkLent(b *testing.B, p *Processor, chunk *extprocv3.ProcessingRequest, refill func()) {
	ctx := context.Background()
	s := &stream{p: p, lendsBodies: refill != nil}
	body := []byte(`{"model":"gpt-4o","stream":true}`)
	for _, m := range []*extprocv3ProcessingRequest{reqHeadersMsg(len(body), true), bodyMsg(body), benchSSEHdrs} {
		if r := s.handle(ctx, m); r == nil || r.GetImmediateResponse() != nil {
			b.Fatalf("unexpected reply %v", r)
		}
	}
	b.ReportAllocs()
	start := selfCPU(b)
	for b.Loop() {
		if refill != nil {
			refill()
		}
		s.takeLent(s.handle(ctx, chunk)).release()
	}
	b.ReportMetric(float64((selfCPU(b)-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
}

// BenchmarkParseRequestLarge scans a 1 MiB chat body with many escapes.
func BenchmarkParseRequestLarge(b *testing.B) {
	content := strings.Repeat(`line with \"quotes\" and \n escapes \u00e9 `, 1<<20/48)
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"` + content + `"}],"stream":true}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := translate.ParseRequest(translate.APIChat, body); err != nil {
			b.Fatal(err)
		}
	}
}

// selfCPU is this process's user+system CPU time (the benchmark's wall time
// is inflated on a shared machine; CPU time is what the processor costs).
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Skipf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
