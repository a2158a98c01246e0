package extproc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/translate"
)

// A pooled reply stays the data plane's until it gives it back: other
// streams' messages, its own stream's next message and its Close leave it
// as it was sent; given back, it goes to the pool once, and a Session gives
// back only what it lent.
func TestReplyPoolLending(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	handle := func(ss *Session, m *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
		t.Helper()
		var got *extprocv3.ProcessingResponse
		require.NoError(t, ss.Handle(m, func(r *extprocv3.ProcessingResponse) { got = r }))
		require.NotNil(t, got)
		require.Nil(t, got.GetImmediateResponse(), "unexpected reply %v", got)
		return got
	}
	// whole runs a request on a new Session, giving back each reply at once.
	whole := func() {
		t.Helper()
		ss := e.proc.Session(ctx)
		for _, m := range []*extprocv3.ProcessingRequest{benchReqHdrs, benchReqBodyM, benchRespHdrs, benchRespBody} {
			ss.ReleaseReply(handle(ss, m))
		}
		ss.Close()
	}

	a := e.proc.Session(ctx)
	handle(a, benchReqHdrs)
	body := handle(a, benchReqBodyM) // pooled: the route and credentials
	bodyWas := proto.Clone(body)
	require.NotEmpty(t, body.GetRequestBody().GetResponse().GetHeaderMutation().GetSetHeaders())

	whole() // another stream, meanwhile
	require.True(t, proto.Equal(bodyWas, body), "a lent reply changed: %v", body)

	hdrs := handle(a, benchRespHdrs) // the stream's next message
	require.NotSame(t, body, hdrs)
	hdrsWas := proto.Clone(hdrs)
	require.True(t, proto.Equal(bodyWas, body), "a lent reply changed: %v", body)

	a.Close() // closing leaves lent replies to the data plane
	whole()
	require.True(t, proto.Equal(bodyWas, body), "a lent reply changed after Close: %v", body)
	require.True(t, proto.Equal(hdrsWas, hdrs), "a lent reply changed after Close: %v", hdrs)

	a.ReleaseReply(body) // after Close too: back to the pool, zeroed
	require.Nil(t, body.GetResponse())

	// The next reply lent may be that one again: giving the old one back a
	// second time, or a reply another Session lent, leaves it alone.
	b := e.proc.Session(ctx)
	handle(b, benchReqHdrs)
	next := handle(b, benchReqBodyM)
	nextWas := proto.Clone(next)
	a.ReleaseReply(body)
	a.ReleaseReply(next)
	b.ReleaseReply(hdrs)
	b.ReleaseReply(replyContinueRequestHeaders)
	require.True(t, proto.Equal(nextWas, next), "a reply given back twice was reused: %v", next)
	require.True(t, proto.Equal(hdrsWas, hdrs), "another Session gave back a reply: %v", hdrs)
	require.NotNil(t, replyContinueRequestHeaders.GetRequestHeaders())
	b.ReleaseReply(next)
	require.Nil(t, next.GetResponse())
	b.Close()
	a.ReleaseReply(hdrs)
	require.Nil(t, hdrs.GetResponse())
}

// Many requests at once through the built-in data plane's in-process
// transport, whose filter gives every reply back once applied: each request
// is routed, credentialed and answered as its own, and the race detector
// (go test -race) sees no reply written while another stream reads it.
func TestReplyPoolConcurrent(t *testing.T) {
	e := newTestEnv(t)
	client := extprocfilter.NewClient(extprocfilter.Sync(func(ctx context.Context) extprocfilter.SyncStream {
		ss := e.proc.Session(ctx)
		var _ extprocfilter.ReplyReleaser = ss
		return ss
	}), extprocfilter.DefaultConfig())
	const workers, each = 8, 16
	type sent struct{ id, model string }
	got := make(chan sent, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				model, deployment, key := "gpt-4o", "openai-gpt4o", "Bearer "+openAIKey
				up := &recorder{resp: jsonResponse(200, chatResponse)}
				body := fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello %d %d"}]}`, w, i)
				if (w+i)%2 == 1 {
					model, deployment, key = "azure-gpt", "azure-east", azureKey
					up = &recorder{resp: sseResponse(streamBody(true), 7+i)}
					body = fmt.Sprintf(`{"model":"azure-gpt","stream":true,"user":"u%d-%d"}`, w, i)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				resp, err := extprocfiltertest.Do(ctx, client, post("/v1/chat/completions", clientKey, body), up.upstream)
				cancel()
				if !assert.NoError(t, err) || !assert.Equal(t, 200, resp.Status) || !assert.Empty(t, resp.Failures) {
					return
				}
				up.mu.Lock()
				sentUp := up.got
				up.mu.Unlock()
				if !assert.Len(t, sentUp, 1, "forwarded upstream") {
					return
				}
				fw := sentUp[0]
				assert.Equal(t, deployment, fw.Headers.Value(RouteHeader))
				if model == "azure-gpt" {
					assert.Equal(t, key, fw.Headers.Value("api-key"))
				} else {
					assert.Equal(t, key, fw.Headers.Value(translate.HdrAuthorization))
				}
				assert.Equal(t, deployment, resp.Headers.Value(hdrDeployment))
				got <- sent{resp.Headers.Value(hdrRequestID), model}
			}
		}()
	}
	wg.Wait()
	close(got)
	byID := map[string]string{}
	for _, r := range e.acct.Records() {
		byID[r.RequestID] = r.Model
	}
	n := 0
	for s := range got {
		n++
		require.Equal(t, s.model, byID[s.id], "request %s", s.id)
		delete(byID, s.id) // each id once
	}
	require.Equal(t, workers*each, n)
}

// A pooled reply's set_headers are those headerList.options builds, in the
// reply's room when they fit and in their own allocation when they do not
// (more headers, longer values); the values are copies.
func TestReplySetHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n, len int
	}{{"none", 0, 0}, {"fit", 8, 60}, {"too many", 9, 4}, {"too long", 2, 300}} {
		t.Run(tc.name, func(t *testing.T) {
			var kvs [16]headerKV
			var vals [1024]byte
			l := headerList{kv: kvs[:0], vals: vals[:0]}
			for i := range tc.n {
				l = l.add(fmt.Sprintf("x-h%d", i), strings.Repeat(string(rune('a'+i)), tc.len))
			}
			x := new(pooledReply)
			x.setHeaders(l)
			want := l.options()
			require.Len(t, x.hm.SetHeaders, len(want))
			for i := range want {
				require.True(t, proto.Equal(want[i], x.hm.SetHeaders[i]), "header %d: %v", i, x.hm.SetHeaders[i])
			}
			clear(vals[:]) // the caller's buffer is reused
			for i := range want {
				require.True(t, proto.Equal(want[i], x.hm.SetHeaders[i]), "header %d: %v", i, x.hm.SetHeaders[i])
			}
		})
	}
}
