package extproc

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/translatetest"

	"github.com/tollgate-ai/tollgate/kernel"
)

// TestStreamCutAnsweredWithAnErrorEvent: over the Envoy-faithful client, a
// stream the upstream resets after a few events, handled as the built-in data
// plane does (a last empty body message with response.code_details), ends
// with the client's error event after the events that went through, and is
// settled once as aborted with the usage seen; handled as Envoy does, the
// client's stream is reset.
func TestStreamCutAnsweredWithAnErrorEvent(t *testing.T) {
	for _, edge := range []bool{true, false} {
		e := newTestEnv(t)
		r, sent, req := resetStream()
		r.EdgeReset = edge
		resp := e.do(t, post("/v1/chat/completions", clientKey, req), (&recorder{resp: r}).upstream)
		recs := e.acct.waitRecords(t, 1)
		require.Equal(t, kernel.StatusAborted, recs[0].Status)
		require.Equal(t, translate.EstimateTokens(int64(len("Hello there, friend"))), recs[0].Usage.Output, "output estimated from the text")
		if !edge {
			require.True(t, resp.Reset, "Envoy resets the client's stream")
			continue
		}
		require.False(t, resp.Reset)
		require.Equal(t, 200, resp.Status)
		got := string(resp.Body)
		require.True(t, strings.HasPrefix(got, sent), "the events that went through are kept")
		require.Equal(t, `data: {"error":{"message":"the provider's stream was cut before its end; the reply is incomplete","type":"server_error","param":null,"code":"upstream_reset"}}`+"\n\n",
			got[len(sent):])
	}
}

// resetStream is a chat stream the upstream resets before its usage event:
// the upstream's answer, the bytes it sent, and the client's request.
func resetStream() (r *extprocfiltertest.UpstreamResponse, sent, req string) {
	body := streamBody(true)
	sent = body[:strings.Index(body, translatetest.StreamUsageEvent)-len("data: ")] // before usage arrives
	r = sseResponse(sent, 33)
	r.Reset = true
	return r, sent, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"tell me a story"}]}`
}
