package extproc

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
)

// checkedSyncClient connects to p as the built-in data plane does (each
// message a call to p's Session in the caller's goroutine), holding the
// processor to the SyncStream contract the client relies on to reuse its messages: Handle writes into
// no part of a message, and keeps nothing of it. Each message is handed over
// as a copy, compared with the original afterwards and then overwritten, so
// that anything kept from it reads garbage later (a ledger record, a reply).
// Each reply is copied when sent and compared with the copy when the client
// gives it back (ReleaseReply): a reply the processor reused while lent
// (given to another message or stream too early) differs.
func checkedSyncClient(t *testing.T) func(p *Processor) extprocfilter.Transport {
	return func(p *Processor) extprocfilter.Transport {
		return extprocfilter.Sync(func(ctx context.Context) extprocfilter.SyncStream {
			return checkedSession{t: t, ss: p.Session(ctx), sent: map[*extprocv3.ProcessingResponse]*extprocv3.ProcessingResponse{}}
		})
	}
}

type checkedSession struct {
	t    *testing.T
	ss   *Session
	sent map[*extprocv3.ProcessingResponse]*extprocv3.ProcessingResponse // lent replies and their copies
}

var _ extprocfilter.ReplyReleaser = checkedSession{}

func (c checkedSession) Handle(m *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse)) error {
	own := proto.Clone(m).(*extprocv3.ProcessingRequest)
	err := c.ss.Handle(own, func(r *extprocv3.ProcessingResponse) {
		c.sent[r] = proto.Clone(r).(*extprocv3.ProcessingResponse)
		send(r)
	})
	if !proto.Equal(m, own) {
		c.t.Errorf("the processor wrote into a message it handled:\nsent %v\nnow  %v", m, own)
	}
	scribble(own)
	return err
}

func (c checkedSession) ReleaseReply(r *extprocv3.ProcessingResponse) {
	if want, ok := c.sent[r]; ok {
		delete(c.sent, r)
		if !proto.Equal(want, r) {
			c.t.Errorf("a reply changed while the client held it:\nsent %v\nnow  %v", want, r)
		}
	} else {
		c.t.Errorf("the client gave back a reply it was not sent: %v", r)
	}
	c.ss.ReleaseReply(r)
}

func (c checkedSession) Close() { c.ss.Close() }

// scribble overwrites every byte of m's bodies and header values.
func scribble(m *extprocv3.ProcessingRequest) {
	fill := func(b []byte) {
		for i := range b {
			b[i] = '#'
		}
	}
	for _, hm := range []*corev3.HeaderMap{
		m.GetRequestHeaders().GetHeaders(), m.GetResponseHeaders().GetHeaders(),
		m.GetRequestTrailers().GetTrailers(), m.GetResponseTrailers().GetTrailers(),
	} {
		for _, h := range hm.GetHeaders() {
			fill(h.GetRawValue())
		}
	}
	fill(m.GetRequestBody().GetBody())
	fill(m.GetResponseBody().GetBody())
}

// TestFlowsInProcess runs the processor's flow tests again through the two
// in-process transports: Session calls (what `tollgate run` uses) and the
// Direct pipe. Every flow must give the same replies and the same ledger
// as over gRPC.
func TestFlowsInProcess(t *testing.T) {
	flows := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"ChatNonStream", TestChatNonStream},
		{"ChatStream", TestChatStream},
		{"ChatStreamEndedByTrailers", TestChatStreamEndedByTrailers},
		{"ChatStreamWithoutUsage", TestChatStreamWithoutUsage},
		{"StreamAbortedByUpstreamReset", TestStreamAbortedByUpstreamReset},
		{"StreamAbortedByClientAfterUsage", TestStreamAbortedByClientAfterUsage},
		{"AbortBeforeResponse", TestAbortBeforeResponse},
		{"ProviderFlavours", TestProviderFlavours},
		{"AzureStream", TestAzureStream},
		{"Rejections", TestRejections},
		{"RateLimited", TestRateLimited},
		{"BudgetExceededWithKernel", TestBudgetExceededWithKernel},
		{"ClampMaxTokens", TestClampMaxTokens},
		{"StrictBudgetBoundsOutput", TestStrictBudgetBoundsOutput},
		{"UpstreamErrors", TestUpstreamErrors},
		{"UpstreamErrorOnStreamRequest", TestUpstreamErrorOnStreamRequest},
		{"Models", TestModels},
		{"ContentLength", TestContentLength},
		{"CustomerScope", TestCustomerScope},
		{"ResponseWithoutUsage", TestResponseWithoutUsage},
		{"RateLimitHeadersOnSuccess", TestRateLimitHeadersOnSuccess},
		{"ConcurrentRequests", TestConcurrentRequests},
	}
	transports := []struct {
		name    string
		connect func(*Processor) extprocfilter.Transport
	}{
		{"sync", checkedSyncClient(t)},
		{"direct", func(p *Processor) extprocfilter.Transport {
			return extprocfilter.GRPC(extprocfiltertest.DirectOwned(p))
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			inProcess = tr.connect
			t.Cleanup(func() { inProcess = nil })
			for _, f := range flows {
				t.Run(f.name, f.fn)
			}
		})
	}
}

// TestSessionEndsOnce: an immediate response ends the session (io.EOF, the
// stream finished), later messages get no reply, and Close after that does
// nothing; a Close before the end settles what was admitted.
func TestSessionEndsOnce(t *testing.T) {
	e := newTestEnv(t)
	ss := e.proc.Session(context.Background())
	hdrs := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
			{Key: ":method", RawValue: []byte("POST")},
			{Key: ":path", RawValue: []byte("/v1/nope")},
			{Key: "authorization", RawValue: []byte("Bearer " + clientKey)},
		}},
	}}}
	var out []*extprocv3.ProcessingResponse
	send := func(r *extprocv3.ProcessingResponse) { out = append(out, r) }
	require.ErrorIs(t, ss.Handle(hdrs, send), io.EOF)
	require.Len(t, out, 1)
	require.Equal(t, int32(404), int32(out[0].GetImmediateResponse().GetStatus().GetCode()))
	out = nil
	require.ErrorIs(t, ss.Handle(hdrs, send), io.EOF)
	require.Empty(t, out)
	ss.Close()
	require.Empty(t, e.acct.Records())
}

// TestLendingSessionRenamesInPlace: through a LendingSession (the built-in
// data plane's in-process transport) a reply whose model the client's name
// fits over is renamed in the data plane's own buffer, padded with JSON
// whitespace, and the reply carries no body mutation: the client gets a body
// of the upstream's length with the client's model, and the same usage. A
// longer client name is spliced as over gRPC. Streams are unchanged.
func TestLendingSessionRenamesInPlace(t *testing.T) {
	inProcess = func(p *Processor) extprocfilter.Transport {
		return extprocfilter.Sync(func(ctx context.Context) extprocfilter.SyncStream { return p.LendingSession(ctx) })
	}
	t.Cleanup(func() { inProcess = nil })
	e := newTestEnv(t)
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), up.upstream)
	require.Equal(t, 200, resp.Status)
	pad := strings.Repeat(" ", len("gpt-4o-2024-08-06")-len("gpt-4o"))
	require.Equal(t, strings.Replace(chatResponse, `"model":"gpt-4o-2024-08-06"`, `"model":"gpt-4o"`+pad, 1), string(resp.Body))
	require.Len(t, resp.Body, len(chatResponse))
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, chatUsage, recs[0].Usage)

	longer := strings.Replace(chatResponse, `"model":"gpt-4o-2024-08-06"`, `"model":"gpt"`, 1)
	up = &recorder{resp: jsonResponse(200, longer)}
	resp = e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), up.upstream)
	require.Equal(t, strings.Replace(longer, `"model":"gpt"`, `"model":"gpt-4o"`, 1), string(resp.Body))
	require.Equal(t, strconv.Itoa(len(resp.Body)), resp.Headers.Value("content-length"))

	TestChatStream(t)
}
