package e2e

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

type errInfo struct {
	Class      string  `json:"class"`
	Status     int     `json:"status"`
	Type       string  `json:"type"`
	Code       string  `json:"code"`
	Message    string  `json:"message"`
	RetryAfter *string `json:"retryAfter"`
}

type chatUsage struct {
	Prompt     int64 `json:"prompt_tokens"`
	Completion int64 `json:"completion_tokens"`
}

func TestOpenAINodeSDK(t *testing.T) {
	s := startSystem(t)

	t.Run("models", func(t *testing.T) {
		var out struct{ IDs []string }
		s.node("openai.mjs", "models", s.demoKey, &out)
		require.Equal(t, []string{"demo"}, out.IDs)
	})
	t.Run("chat", func(t *testing.T) {
		var out struct {
			Content string
			Usage   chatUsage
			Finish  string
		}
		s.node("openai.mjs", "chat", s.demoKey, &out)
		require.NotEmpty(t, out.Content)
		require.Equal(t, int64(8), out.Usage.Completion)
		require.Positive(t, out.Usage.Prompt)
	})
	t.Run("stream with usage", func(t *testing.T) {
		var out struct {
			Text   string
			Usage  *chatUsage
			Chunks int
		}
		s.node("openai.mjs", "stream", s.demoKey, &out)
		require.NotEmpty(t, out.Text)
		require.NotNil(t, out.Usage)
		require.Equal(t, int64(8), out.Usage.Completion)
		require.Greater(t, out.Chunks, 2)
	})
	t.Run("embeddings", func(t *testing.T) {
		var out struct {
			Dims  int
			Usage struct {
				Prompt int64 `json:"prompt_tokens"`
			}
		}
		s.node("openai.mjs", "embeddings", s.demoKey, &out)
		require.Positive(t, out.Dims)
		require.Positive(t, out.Usage.Prompt)
	})
	t.Run("bad key is an AuthenticationError", func(t *testing.T) {
		var out struct {
			Error  *errInfo
			IsAuth bool
		}
		s.node("openai.mjs", "badkey", s.demoKey, &out)
		require.NotNil(t, out.Error)
		require.True(t, out.IsAuth, "%+v", out.Error)
		require.Equal(t, 401, out.Error.Status)
	})
	t.Run("unknown model is a NotFoundError", func(t *testing.T) {
		var out struct {
			Error      *errInfo
			IsNotFound bool
		}
		s.node("openai.mjs", "unknownmodel", s.demoKey, &out)
		require.NotNil(t, out.Error)
		require.True(t, out.IsNotFound, "%+v", out.Error)
	})
	t.Run("rpm limit is a RateLimitError with retry-after", func(t *testing.T) {
		_, key := s.createKey("--alias", "rpm3", "--rpm", "3")
		s.waitKey(key)
		sameMinute(t, 15*time.Second)
		var out struct {
			Passed      int
			Error       *errInfo
			IsRateLimit bool
		}
		s.node("openai.mjs", "ratelimit", key, &out)
		require.Equal(t, 3, out.Passed)
		require.NotNil(t, out.Error)
		require.True(t, out.IsRateLimit, "%+v", out.Error)
		require.NotNil(t, out.Error.RetryAfter)
		secs, err := strconv.Atoi(*out.Error.RetryAfter)
		require.NoError(t, err)
		require.InDelta(t, 30, secs, 31, "retry-after is the time left in the minute")
	})
	t.Run("exhausted strict budget", func(t *testing.T) {
		// Each request reserves about 16 output tokens at $2/M plus the prompt:
		// $0.001 affords a couple of dozen (the reservation bounds the prompt by its
		// bytes), then the budget refuses.
		_, key := s.createKey("--alias", "tiny", "--budget", "0.001", "--shortfall", "reject")
		s.waitKey(key)
		var out struct {
			Passed int
			Error  *errInfo
		}
		s.node("openai.mjs", "budget", key, &out)
		require.NotNil(t, out.Error)
		require.Positive(t, out.Passed)
		require.Less(t, out.Passed, 50)
		require.Equal(t, "budget_exceeded", out.Error.Code, "%+v", out.Error)
	})
}

// sameMinute waits, when less than need is left of the current UTC minute, for
// the next one: rpm limits count in fixed one-minute windows.
func sameMinute(t *testing.T, need time.Duration) {
	t.Helper()
	now := time.Now().UTC()
	if left := now.Truncate(time.Minute).Add(time.Minute).Sub(now); left < need {
		t.Logf("waiting %v for a fresh rpm window", left.Round(time.Millisecond))
		time.Sleep(left + 50*time.Millisecond)
	}
}

func TestOpenAIGoSDK(t *testing.T) {
	s := startSystem(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := openai.NewClient(option.WithBaseURL(s.url+"/v1"), option.WithAPIKey(s.demoKey), option.WithMaxRetries(0))

	models, err := client.Models.List(ctx)
	require.NoError(t, err)
	require.Len(t, models.Data, 1)
	require.Equal(t, "demo", models.Data[0].ID)

	chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:     "demo",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello from go")},
		MaxTokens: openai.Int(5),
	})
	require.NoError(t, err)
	require.Equal(t, int64(5), chat.Usage.CompletionTokens)
	require.NotEmpty(t, chat.Choices[0].Message.Content)

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "demo",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream from go")},
		MaxTokens:     openai.Int(4),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	require.Equal(t, int64(4), acc.Usage.CompletionTokens)
	require.NotEmpty(t, acc.Choices[0].Message.Content)

	emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "demo",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("embed from go")},
	})
	require.NoError(t, err)
	require.NotEmpty(t, emb.Data[0].Embedding)

	bad := openai.NewClient(option.WithBaseURL(s.url+"/v1"), option.WithAPIKey("tg-wrong"), option.WithMaxRetries(0))
	_, err = bad.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)

	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "missing", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
}

func TestRevokedKeyIsRefusedWithinOneSecond(t *testing.T) {
	s := startSystem(t)
	id, key := s.createKey("--alias", "to-revoke")
	s.waitKey(key)
	code, _, _ := s.post(key, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	require.Equal(t, http.StatusOK, code)

	s.cli(nil, nil, "key", "revoke", id)
	revoked := time.Now()
	for {
		code, _ := s.get("/v1/models", key)
		if code == http.StatusUnauthorized {
			break
		}
		require.Less(t, time.Since(revoked), 2*time.Second, "key still accepted")
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(revoked)
	t.Logf("revocation reached the data plane in %v", elapsed)
	require.Less(t, elapsed, time.Second)
}
