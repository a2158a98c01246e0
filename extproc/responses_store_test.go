package extproc

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/translate"
)

// memResponses is an in-memory ResponseStore.
type memResponses struct {
	mu sync.Mutex
	m  map[[2]string]StoredResponse
}

func (m *memResponses) PutResponse(_ context.Context, r *StoredResponse) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[[2]string]StoredResponse{}
	}
	m.m[[2]string{r.KeyID, r.ID}] = *r
	return nil
}

func (m *memResponses) GetResponse(_ context.Context, keyID, id string) (*StoredResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.m[[2]string{keyID, id}]
	if !ok {
		return nil, ErrResponseNotFound
	}
	return &r, nil
}

func (m *memResponses) DeleteResponse(_ context.Context, keyID, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[[2]string{keyID, id}]; !ok {
		return ErrResponseNotFound
	}
	delete(m.m, [2]string{keyID, id})
	return nil
}

func (m *memResponses) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

func del(path, key string) *extprocfiltertest.Request {
	r := get(path, key)
	r.Headers[0].Value = "DELETE"
	return r
}

// TestStoredResponses: on a translated provider a response is stored (store
// defaults to true) for its key only; previous_response_id prepends its input
// and output to the next request (and counts as input for admission); GET,
// input_items and DELETE answer from the store; store:false stores nothing;
// an unknown previous_response_id is a 404 before anything is admitted.
func TestStoredResponses(t *testing.T) {
	rs := &memResponses{}
	e := newTestEnv(t, WithResponseStore(rs))
	chat := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`
	up := &recorder{resp: jsonResponse(200, chat)}
	resp := e.do(t, post("/v1/responses", clientKey, `{"model":"gpt-4o","instructions":"Be brief.","input":"Capital of France?"}`), up.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	var r1 struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Output []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"output"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &r1))
	require.Equal(t, "completed", r1.Status)
	require.Equal(t, "Paris.", r1.Output[0].Content[0].Text)
	require.Equal(t, "/v1/chat/completions", up.last(t).Headers.Value(":path"))
	require.Equal(t, 1, rs.len())

	resp = e.do(t, get("/v1/responses/"+r1.ID, clientKey), nil)
	require.Equal(t, 200, resp.Status)
	require.Contains(t, string(resp.Body), `"Paris."`)
	resp = e.do(t, get("/v1/responses/"+r1.ID+"/input_items?order=asc", clientKey), nil)
	require.Equal(t, 200, resp.Status)
	require.Contains(t, string(resp.Body), `"object":"list"`)
	require.Contains(t, string(resp.Body), `Capital of France?`)
	resp = e.do(t, get("/v1/responses/"+r1.ID, otherKey), nil) // another key
	requireOpenAIError(t, resp, wantError{404, "invalid_request_error", "", "", "not found"})

	// The follow-up carries the history: user, assistant, then the new input.
	admits := len(e.acct.Admits())
	resp = e.do(t, post("/v1/responses", clientKey, `{"model":"gpt-4o","previous_response_id":"`+r1.ID+`","input":"And Italy?","store":false}`), up.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(up.last(t).Body, &sent))
	require.Len(t, sent.Messages, 3)
	require.Equal(t, "Capital of France?", sent.Messages[0].Content)
	require.Equal(t, "assistant", sent.Messages[1].Role)
	require.Equal(t, "Paris.", sent.Messages[1].Content)
	require.Equal(t, "And Italy?", sent.Messages[2].Content)
	require.Greater(t, e.acct.Admits()[admits].PromptBytes, int64(len(`{"model":"gpt-4o","previous_response_id":"`+r1.ID+`","input":"And Italy?","store":false}`)))
	require.Equal(t, 1, rs.len(), "store:false stores nothing")

	resp = e.do(t, post("/v1/responses", otherKey, `{"model":"gpt-4o","previous_response_id":"`+r1.ID+`","input":"x"}`), up.upstream)
	requireOpenAIError(t, resp, wantError{404, "invalid_request_error", "previous_response_not_found", "previous_response_id", "not found"})

	resp = e.do(t, del("/v1/responses/"+r1.ID, clientKey), nil)
	require.Equal(t, 200, resp.Status)
	require.JSONEq(t, `{"id":"`+r1.ID+`","object":"response","deleted":true}`, string(resp.Body))
	resp = e.do(t, del("/v1/responses/"+r1.ID, clientKey), nil)
	require.Equal(t, 404, resp.Status)
	require.Equal(t, 0, rs.len())
}

// TestResponsesAdmission: a Responses request is admitted as chat is, its
// reservation bounded by max_output_tokens; a refused admission is OpenAI's
// error; on a native upstream the clamp rewrites max_output_tokens.
func TestResponsesAdmission(t *testing.T) {
	e := newTestEnv(t)
	e.cat.targets["native"] = &translate.Target{
		Model: "native", Deployment: "openai-native", Provider: translate.ProviderOpenAI, BasePath: "/v1",
		APIKey: openAIKey, ProviderModel: "gpt-5", Price: testPrice, NativeResponses: true,
	}
	body := `{"id":"resp_u","object":"response","status":"completed","output":[],"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":2},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":8}}`
	up := &recorder{resp: jsonResponse(200, body)}
	resp := e.do(t, post("/v1/responses", clientKey, `{"model":"native","input":"hi","max_output_tokens":77}`), up.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	require.Equal(t, body, string(resp.Body), "a native reply passes unchanged")
	require.EqualValues(t, 77, e.acct.Admits()[0].MaxTokens)
	require.Equal(t, "/v1/responses", up.last(t).Headers.Value(":path"))
	require.JSONEq(t, `{"model":"gpt-5","input":"hi","max_output_tokens":77}`, string(up.last(t).Body))
	rec := e.acct.waitRecords(t, 1)[0]
	require.EqualValues(t, 3, rec.Usage.Input)
	require.EqualValues(t, 2, rec.Usage.CachedInput)
	require.EqualValues(t, 2, rec.Usage.Output)
	require.EqualValues(t, 1, rec.Usage.Reasoning)

	resp = e.do(t, post("/v1/responses", clientKey, `{"model":"native","input":5}`), up.upstream)
	requireOpenAIError(t, resp, wantError{400, "invalid_request_error", "", "input", "must be a string or an array"})
	resp = e.do(t, post("/v1/responses", clientKey, `{"model":"native","input":"x"`), up.upstream)
	requireOpenAIError(t, resp, wantError{400, "invalid_request_error", "invalid_json", "", "line 1"})
}
