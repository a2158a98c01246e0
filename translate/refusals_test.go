package translate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// TestCutEventShapes: the event that ends a cut stream, per client API.
func TestCutEventShapes(t *testing.T) {
	for _, tc := range []struct {
		api  API
		path string
		want string
	}{
		{APIChat, "", `data: {"error":{"message":"the provider's stream was cut before its end; the reply is incomplete","type":"server_error","param":null,"code":"upstream_reset"}}` + "\n\n"},
		{APIResponses, "", "event: error\n" + `data: {"type":"error","code":"upstream_reset","message":"the provider's stream was cut before its end; the reply is incomplete","param":null}` + "\n\n"},
		{APIMessages, "", "event: error\n" + `data: {"type":"error","error":{"type":"api_error","message":"the provider's stream was cut before its end; the reply is incomplete"}}` + "\n\n"},
		{APIGeminiGenerate, "/v1beta/models/m:streamGenerateContent?alt=sse", `data: {"error":{"code":502,"message":"the provider's stream was cut before its end; the reply is incomplete","status":"INTERNAL"}}` + "\n\n"},
		{APIGeminiGenerate, "/v1beta/models/m:streamGenerateContent", ""}, // a JSON array: no SSE event to send
	} {
		require.Equal(t, tc.want, string(ErrorEvent(tc.api, tc.path, new(ChatOpenAI), ErrStreamCut())), "%s %s", tc.api, tc.path)
	}
}

func TestRetryAfterHeaders(t *testing.T) {
	require.Nil(t, RetryAfterHeaders(0))
	require.Equal(t, [][2]string{{HdrRetryAfter, "1"}, {HdrRetryAfterMs, "20"}}, RetryAfterHeaders(20*time.Millisecond))
	require.Equal(t, [][2]string{{HdrRetryAfter, "3"}, {HdrRetryAfterMs, "2500"}}, RetryAfterHeaders(2500*time.Millisecond))
}

// TestRefusalsNameWhatIsMissing: the processor's refusals say what the
// client or the operator must do, with the status and code SDKs act on.
func TestRefusalsNameWhatIsMissing(t *testing.T) {
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}
	e := ErrUnpriced(&Target{Model: "fast", ProviderModel: "gpt-x"}, kernel.Decision{Reason: kernel.ReasonUnpriced, Scope: key}, nil)
	require.Equal(t, 400, e.Status)
	require.Equal(t, CodeModelUnpriced, e.Code)
	require.Contains(t, e.Message, "The model `fast` (served as `gpt-x`) has no price")
	require.Contains(t, e.Message, "key's budget")

	e = ErrNoDeployment("m", &kernel.Decision{RetryAfter: 1500 * time.Millisecond}, 0)
	require.Equal(t, 429, e.Status)
	require.Equal(t, [][2]string{{HdrRetryAfter, "2"}, {HdrRetryAfterMs, "1500"}}, e.Headers)
	e = ErrNoDeployment("m", nil, 3*time.Second)
	require.Equal(t, 503, e.Status)
	require.Contains(t, e.Message, "cooling down")
	require.Equal(t, "3", e.Headers[0][1])

	e = ErrUpstreamAuth("dep-1", 401)
	require.Equal(t, 502, e.Status)
	require.Equal(t, TypeUpstreamAuth, e.Code)
	require.Contains(t, e.Message, "`dep-1`")
	require.Contains(t, e.Message, "HTTP 401")

	require.Equal(t, 413, ErrTooLarge(10).Status)
	require.Equal(t, 401, ErrClientHeader().Status)
	require.Equal(t, "1", ErrUnavailable().Headers[0][1])
}

func TestErrDecision(t *testing.T) {
	tests := []struct {
		d      kernel.Decision
		status int
		code   string
		msg    string
	}{
		{kernel.Decision{Reason: kernel.ReasonBudgetExceeded, Scope: kernel.ScopeRef{Kind: kernel.ScopeOrg}}, 400, "budget_exceeded", "organization"},
		{kernel.Decision{Reason: kernel.ReasonKeyExpired}, 401, CodeInvalidAPIKey, "expired"},
		{kernel.Decision{Reason: kernel.ReasonModelNotAllowed, Scope: kernel.ScopeRef{Kind: kernel.ScopeTeam}}, 403, CodeModelNotAllowed, "team is not allowed"},
		{kernel.Decision{Reason: kernel.ReasonUnpriced, Scope: kernel.ScopeRef{Kind: kernel.ScopeKey}}, 400, CodeModelUnpriced, "`m` has no price"},
		{kernel.Decision{Reason: kernel.ReasonRequestLimit, Scope: kernel.ScopeRef{Kind: kernel.ScopeKey}}, 429, CodeRateLimit, "key: requests per minute"},
		{kernel.Decision{Reason: kernel.ReasonDuplicate}, 500, "admission_error", "could not admit"},
	}
	for _, tt := range tests {
		e := ErrDecision(tt.d, "m")
		require.Equal(t, tt.status, e.Status)
		require.Equal(t, tt.code, e.Code)
		require.Contains(t, e.Message, tt.msg)
	}
	e := ErrDecision(kernel.Decision{
		Reason: kernel.ReasonTokenLimit, RetryAfter: 2 * time.Second,
		RateLimit: kernel.RateLimitInfo{LimitTokens: 100, RemainingTokens: -3, ResetTokens: 1500 * time.Millisecond},
	}, "m")
	require.Equal(t, [][2]string{
		{HdrRetryAfter, "2"},
		{HdrRetryAfterMs, "2000"},
		{"x-ratelimit-limit-tokens", "100"},
		{"x-ratelimit-remaining-tokens", "0"},
		{"x-ratelimit-reset-tokens", "1.5s"},
	}, e.Headers)
}

func TestDecisionErrors(t *testing.T) {
	tests := []struct {
		d      kernel.Decision
		status int
		code   string
		msg    string
	}{
		{kernel.Decision{Reason: kernel.ReasonBudgetExceeded, Scope: kernel.ScopeRef{Kind: kernel.ScopeOrg}}, 400, "budget_exceeded", "organization"},
		{kernel.Decision{Reason: kernel.ReasonBudgetExceeded, Scope: kernel.ScopeRef{Kind: kernel.ScopeCustomer}}, 400, "budget_exceeded", "customer"},
		{kernel.Decision{Reason: kernel.ReasonBudgetExceeded, Scope: kernel.ScopeRef{Kind: kernel.ScopeGlobal}}, 400, "budget_exceeded", "gateway"},
		{kernel.Decision{Reason: kernel.ReasonTokenLimit, Scope: kernel.ScopeRef{Kind: kernel.ScopeUser}}, 429, "rate_limit_exceeded", "user: tokens per minute"},
		{kernel.Decision{Reason: kernel.ReasonParallelLimit, Scope: kernel.ScopeRef{Kind: kernel.ScopeTeam}}, 429, "rate_limit_exceeded", "team: parallel requests"},
		{kernel.Decision{Reason: kernel.ReasonDuplicate}, 500, "admission_error", "could not admit"},
	}
	for _, tt := range tests {
		e := ErrDecision(tt.d, "m")
		require.Equal(t, tt.status, e.Status)
		require.Equal(t, tt.code, e.Code)
		require.Contains(t, e.Message, tt.msg)
	}
}
