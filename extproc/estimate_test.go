package extproc

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
)

// TestNeverReachedProviderIsFree: the data plane could not connect to the
// provider (its local reply goes through the response direction, as Envoy
// 1.37+ and the built-in data plane send it), so the request never reached
// the provider: settled as failed at $0, input included.
func TestNeverReachedProviderIsFree(t *testing.T) {
	for _, reason := range []string{"remote connection failure", "overflow", "connection timeout"} {
		t.Run(reason, func(t *testing.T) {
			e := newTestEnv(t)
			body := "upstream connect error or disconnect/reset before headers. reset reason: " + reason
			r := &extprocfiltertest.UpstreamResponse{Status: 503, Headers: extprocfilter.Headers{
				{Key: "content-type", Value: "text/plain"}, {Key: "content-length", Value: strconv.Itoa(len(body))},
			}, Chunks: [][]byte{[]byte(body)}}
			resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), (&recorder{resp: r}).upstream)
			require.Equal(t, 503, resp.Status)
			recs := e.acct.waitRecords(t, 1)
			require.Equal(t, kernel.StatusFailed, recs[0].Status)
			require.Zero(t, kernel.Cost(testPrice, recs[0].Usage), "never reached the provider: $0")
		})
	}
}

// TestUnavailableSaysWhenToRetry: when the counters cannot be reached (Redis
// down, fail closed), the 503 carries retry-after so clients back off briefly.
func TestUnavailableSaysWhenToRetry(t *testing.T) {
	e := newTestEnv(t)
	e.acct.admitErr = errors.New("redis: counters unavailable")
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), (&recorder{resp: jsonResponse(200, chatResponse)}).upstream)
	requireOpenAIError(t, resp, wantError{503, "server_error", "service_unavailable", "", "retry shortly"})
	require.Equal(t, "1", resp.Headers.Value("retry-after"))
}
