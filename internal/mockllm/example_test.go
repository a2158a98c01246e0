package mockllm_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
)

// The reply and its token counts are functions of the request: 12 bytes of
// prompt make 3 input tokens, max_tokens 4 makes four words.
func ExampleNew() {
	srv := mockllm.New(mockllm.DefaultConfig())
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(
		`{"model":"mock-gpt","max_tokens":4,"messages":[{"role":"user","content":"ping pong!!!"}]}`))
	req.Header.Set("Authorization", "Bearer sk-demo")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	fmt.Println(rec.Code, strings.Contains(string(body), `"content":"ping pong!!! ping pong!!!"`))
	fmt.Printf("%+v\n", srv.Stats().Keys["sk-demo"])
	// Output:
	// 200 true
	// {Requests:1 Errors:0 Aborted:0 InputTokens:3 OutputTokens:4 CachedTokens:0 CacheCreationTokens:0 Images:0 Seconds:0 Characters:0 SearchUnits:0}
}
